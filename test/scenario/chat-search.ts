/**
 * GET /v1/chats/search: every filter, checked against what the full chat list says, walked across pages.
 */
import { describe, expect, it } from "vitest";
import { expectError } from "./assert.ts";
import type { Chat, Page } from "../../src/schema/wire.ts";
import { allChats, ids, ms, ok, qs, raw, walk, words, type Env } from "./kit.ts";

type Filter = Record<string, string | number | boolean | string[] | undefined>;

/** Every query word must prefix-match a word of the haystack the scope selects. */
function queryMatches(
  chat: Chat,
  query: string,
  scope: "titles" | "participants" | undefined,
  withUsernames: boolean,
): boolean {
  const titles = `${chat.title} ${chat.network ?? ""}`;
  const people = chat.participants.items
    .map((p) => `${p.fullName ?? ""} ${withUsernames ? (p.username ?? "") : ""}`)
    .join(" ");
  const hay = words(scope === "titles" ? titles : scope === "participants" ? people : `${titles} ${people}`);
  return words(query).every((q) => hay.some((w) => w.startsWith(q)));
}

/** The chats a filter (without query) selects, in list order. */
function select(all: Chat[], f: Filter): Chat[] {
  const accounts = f.accountIDs === undefined ? undefined : new Set([f.accountIDs].flat() as string[]);
  return all.filter(
    (c) =>
      (!accounts || accounts.has(c.accountID)) &&
      (f.inbox !== "primary" || (!c.isArchived && !c.isLowPriority)) &&
      (f.inbox !== "low-priority" || (!!c.isLowPriority && !c.isArchived)) &&
      (f.inbox !== "archive" || !!c.isArchived) &&
      (f.includeMuted !== false || !c.isMuted) &&
      (f.lastActivityAfter === undefined || ms(c.lastActivity) > ms(String(f.lastActivityAfter))) &&
      (f.lastActivityBefore === undefined || ms(c.lastActivity) < ms(String(f.lastActivityBefore))) &&
      (f.type === undefined || f.type === "any" || c.type === f.type) &&
      (f.unreadOnly !== true || c.unreadCount > 0 || !!c.isMarkedUnread),
  );
}

export function chatSearchScenarios(env: Env) {
  describe("chat search: filters", () => {
    const search = (f: Filter, limit = 7) => walk<Chat>(env, "/v1/chats/search", { ...f, limit });

    it("applies each filter exactly as the chat data says, across pages", async () => {
      const all = await allChats(env);
      const [a, b] = env.accounts.map((x) => x.accountID);
      const pivot = all[Math.floor(all.length / 3)].lastActivity!;
      const pivot2 = all[Math.floor((2 * all.length) / 3)].lastActivity!;
      // Sanity: the seed has chats in every bucket, so no filter is vacuous.
      for (const f of [
        { inbox: "archive" },
        { inbox: "low-priority" },
        { unreadOnly: true },
        { type: "group" },
      ] as Filter[])
        expect(select(all, f).length, JSON.stringify(f)).toBeGreaterThan(0);
      expect(all.some((c) => c.isMuted)).toBe(true);

      const filters: Filter[] = [
        {},
        { accountIDs: a },
        { accountIDs: [a, b] },
        { inbox: "primary" },
        { inbox: "low-priority" },
        { inbox: "archive" },
        { includeMuted: false },
        { includeMuted: true },
        { type: "single" },
        { type: "group" },
        { type: "any" },
        { unreadOnly: true },
        { unreadOnly: false },
        { lastActivityAfter: pivot },
        { lastActivityBefore: pivot },
        { lastActivityAfter: pivot2, lastActivityBefore: pivot },
        { accountIDs: b, type: "group", inbox: "primary", includeMuted: false },
        { accountIDs: a, type: "single", unreadOnly: true },
      ];
      for (const f of filters) {
        const got = await search(f);
        expect(ids(got.items), JSON.stringify(f)).toEqual(ids(select(all, f)));
      }
    });

    it("treats lastActivityAfter/Before as strict bounds", async () => {
      const all = await allChats(env);
      const chat = all[5];
      const t = ms(chat.lastActivity);
      const after = (await search({ lastActivityAfter: new Date(t).toISOString() }, 200)).items;
      expect(ids(after)).not.toContain(chat.id);
      expect(ids((await search({ lastActivityAfter: new Date(t - 1).toISOString() }, 200)).items)).toContain(chat.id);
      expect(ids((await search({ lastActivityBefore: new Date(t).toISOString() }, 200)).items)).not.toContain(chat.id);
      expect(ids((await search({ lastActivityBefore: new Date(t + 1).toISOString() }, 200)).items)).toContain(chat.id);
      // An offset form names the same instant.
      const offset = new Date(t + 5.5 * 3_600_000).toISOString().replace("Z", "+05:30");
      expect(ids((await search({ lastActivityAfter: offset }, 200)).items)).toEqual(ids(after));
    });

    it("matches query words as case-insensitive prefixes of title, network and participant-name words", async () => {
      const all = await allChats(env);
      const group = all.find((c) => c.type === "group" && words(c.title).some((w) => w.length >= 4))!;
      const titleWord = words(group.title).find((w) => w.length >= 4)!;
      const member = group.participants.items.find(
        (p) => !p.isSelf && p.fullName && !words(group.title).includes(words(p.fullName)[0]),
      )!;
      const memberFirst = words(member.fullName)[0];
      const queries = [
        "echo",
        "ECHO",
        titleWord.slice(0, 3),
        titleWord.slice(1, 4), // a mid-word fragment: only matches where some word starts with it
        `${titleWord} ${memberFirst}`, // words from different fields must all match
        `${memberFirst.toUpperCase()}`,
        words(member.fullName).join(" "),
        "sandbox",
        "zzqqxx",
      ];
      for (const query of queries) {
        const got = ids((await search({ query })).items);
        const lower = all.filter((c) => queryMatches(c, query, undefined, false));
        const upper = all.filter((c) => queryMatches(c, query, undefined, true));
        for (const c of lower) expect(got, `query ${query} should find ${c.title}`).toContain(c.id);
        for (const id of got) expect(ids(upper), `query ${query} found ${id}`).toContain(id);
        expect(got).toEqual(ids(all).filter((id) => got.includes(id))); // list order
      }
      expect(ids((await search({ query: `${titleWord} ${memberFirst}` })).items)).toContain(group.id);
      expect((await search({ query: "zzqqxx" })).items).toEqual([]);
      expect(ids((await search({ query: "sandbox" })).items)).toEqual(ids(all));
    });

    it("restricts matching to titles or participants with scope", async () => {
      const all = await allChats(env);
      const group = all.find(
        (c) =>
          c.type === "group" &&
          c.participants.items.some(
            (p) => !p.isSelf && p.fullName && !words(c.title).includes(words(p.fullName).at(-1)!),
          ),
      )!;
      const member = group.participants.items.find(
        (p) => !p.isSelf && p.fullName && !words(group.title).includes(words(p.fullName).at(-1)!),
      )!;
      const surname = words(member.fullName).at(-1)!;
      const inParticipants = ids((await search({ query: surname, scope: "participants" })).items);
      expect(inParticipants).toContain(group.id);
      for (const c of all.filter((x) => queryMatches(x, surname, "participants", false)))
        expect(inParticipants).toContain(c.id);
      for (const id of inParticipants)
        expect(ids(all.filter((x) => queryMatches(x, surname, "participants", true)))).toContain(id);

      const inTitles = ids((await search({ query: surname, scope: "titles" })).items);
      expect(inTitles).not.toContain(group.id);
      expect(inTitles).toEqual(ids(all.filter((x) => queryMatches(x, surname, "titles", false))));

      const titleWord = words(group.title).find((w) => w.length >= 4)!;
      expect(ids((await search({ query: titleWord, scope: "titles" })).items)).toContain(group.id);
      expect(ids((await search({ query: "sandbox", scope: "titles" })).items)).toEqual(ids(all));
      // Participant names include one's own ("Sandbox User 1"), so this is what the names say, not "nothing".
      expect(ids((await search({ query: "sandbox", scope: "participants" })).items)).toEqual(
        ids(all.filter((x) => queryMatches(x, "sandbox", "participants", false))),
      );
    });

    it("pages by limit (1..200, default 50) and the SDK's auto-pagination walks the same list", async () => {
      const all = await allChats(env);
      const p3 = await ok<Page<Chat>>(env, "/v1/chats/search?limit=3");
      expect(ids(p3.items)).toEqual(ids(all).slice(0, 3));
      expect(p3.hasMore).toBe(true);
      const p1 = await ok<Page<Chat>>(env, "/v1/chats/search?limit=1");
      expect(p1.items.length).toBe(1);
      const dflt = await ok<Page<Chat>>(env, "/v1/chats/search");
      expect(dflt.items.length).toBe(Math.min(50, all.length));
      expect(dflt.hasMore).toBe(all.length > 50);
      const max = await ok<Page<Chat>>(env, "/v1/chats/search?limit=200");
      expect(max.items.length).toBe(Math.min(200, all.length));

      const sdk: string[] = [];
      for await (const c of env.sdk.chats.search({ type: "single", limit: 4 })) sdk.push(c.id);
      expect(sdk).toEqual(ids(all.filter((c) => c.type === "single")));
      const sdkQuery: string[] = [];
      for await (const c of env.sdk.chats.search({ query: "sandbox", includeMuted: false, limit: 9 }))
        sdkQuery.push(c.id);
      expect(sdkQuery).toEqual(ids(all.filter((c) => !c.isMuted)));
    });

    it("refuses invalid parameters with the offending query parameter named", async () => {
      const cases: [string, string][] = [
        ["limit=0", "limit"],
        ["limit=201", "limit"],
        ["limit=-5", "limit"],
        ["limit=ten", "limit"],
        ["inbox=spam", "inbox"],
        ["includeMuted=maybe", "includeMuted"],
        ["unreadOnly=1", "unreadOnly"],
        ["type=channel", "type"],
        ["scope=everything", "scope"],
        ["lastActivityAfter=yesterday", "lastActivityAfter"],
        ["lastActivityBefore=2024-13-45", "lastActivityBefore"],
        ["direction=up&cursor=x", "direction"],
      ];
      for (const [query, name] of cases) expectError(await raw(env, `/v1/chats/search?${query}`), 400, ["query", name]);
    });
  });

  describe("chat search: query helper sanity", () => {
    it("finds each account's Echo chat by 'echo'", async () => {
      for (const account of env.accounts) {
        const page = await ok<Page<Chat>>(
          env,
          `/v1/chats/search${qs({ query: "echo", accountIDs: account.accountID })}`,
        );
        const echo = page.items.filter(
          (c) => c.type === "single" && c.participants.items.some((p) => p.id === "@echo:sandbox.invalid"),
        );
        expect(echo.length).toBe(1);
      }
    });
  });
}
