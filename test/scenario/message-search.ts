/**
 * GET /v1/messages/search: every filter, checked against a model built from listing every chat's messages.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, expectSorted } from "./assert.ts";
import type { Attachment, Chat, Message, Page } from "../../src/schema/wire.ts";
import { allChats, allMessages, duplicates, ids, ms, ok, qs, raw, walk, words, type Env } from "./kit.ts";

interface Row {
  m: Message;
  chat: Chat;
}
type Filter = Record<string, string | number | boolean | string[] | undefined>;
interface SearchPage extends Page<Message> {
  chats: Record<string, Chat>;
}

const hasLink = (m: Message) => /https?:\/\/\S/i.test(m.text ?? "");
const kinds = (m: Message) => new Set((m.attachments ?? []).map((a) => a.type));

export function messageSearchScenarios(env: Env) {
  describe("message search", () => {
    let rows: Row[] = [];
    let chats: Chat[] = [];

    beforeAll(async () => {
      chats = await allChats(env);
      rows = [];
      for (const chat of chats) for (const m of await allMessages(env, chat.id)) rows.push({ m, chat });
    });

    /** The model's answer for the filters that are exact (no mediaTypes), newest first. */
    function expected(f: Filter): Row[] {
      const accounts = f.accountIDs ? new Set([f.accountIDs].flat() as string[]) : undefined;
      const chatIDs = f.chatIDs ? new Set([f.chatIDs].flat() as string[]) : undefined;
      const q = words(f.query as string | undefined);
      return rows
        .filter(
          ({ m, chat }) =>
            (!accounts || accounts.has(chat.accountID)) &&
            (!chatIDs || chatIDs.has(chat.id)) &&
            (!f.chatType || chat.type === f.chatType) &&
            (f.excludeLowPriority === false || !chat.isLowPriority) &&
            (f.includeMuted !== false || !chat.isMuted) &&
            (f.dateAfter === undefined || ms(m.timestamp) > ms(String(f.dateAfter))) &&
            (f.dateBefore === undefined || ms(m.timestamp) < ms(String(f.dateBefore))) &&
            q.every((w) => words(m.text).includes(w)),
        )
        .filter(
          (r) =>
            f.sender === undefined ||
            (f.sender === "me" ? r.m.isSender : f.sender === "others" ? !r.m.isSender : r.m.senderID === f.sender),
        )
        .sort((x, y) => ms(y.m.timestamp) - ms(x.m.timestamp));
    }

    async function search(f: Filter) {
      const got = await walk<Message>(env, "/v1/messages/search", f);
      expect(duplicates(ids(got.items)), JSON.stringify(f)).toEqual([]);
      expectSorted(got.items, (m) => ms(m.timestamp), "desc");
      for (const page of got.pages as SearchPage[]) {
        expect(page.items.length).toBeLessThanOrEqual(20);
        expect(Object.keys(page.chats).sort()).toEqual([...new Set(page.items.map((m) => m.chatID))].sort());
        for (const [id, chat] of Object.entries(page.chats)) expect(chat.id).toBe(id);
        if (page.items.length) {
          expect(typeof page.oldestCursor).toBe("string");
          expect(typeof page.newestCursor).toBe("string");
        }
      }
      return got.items;
    }

    async function expectExact(f: Filter) {
      const got = await search(f);
      const want = expected(f);
      expect(ids(got).sort(), JSON.stringify(f)).toEqual(ids(want.map((r) => r.m)).sort());
      return got;
    }

    /** A word that occurs in a handful of messages, and a message holding it with another word. */
    function rareWords() {
      const freq = new Map<string, number>();
      for (const { m } of rows) for (const w of new Set(words(m.text))) freq.set(w, (freq.get(w) ?? 0) + 1);
      const rare = [...freq].filter(([w, n]) => n >= 3 && n <= 8 && w.length >= 4).map(([w]) => w);
      const pair = rows
        .map((r) => words(r.m.text))
        .find((ws) => ws.some((w) => rare.includes(w)) && ws.some((w) => (freq.get(w) ?? 0) > 50))!;
      return {
        rare,
        pairRare: pair.find((w) => rare.includes(w))!,
        pairCommon: pair.find((w) => (freq.get(w) ?? 0) > 50)!,
      };
    }

    it("without any filter walks every message outside low-priority chats exactly once, newest first", async () => {
      expect(rows.length).toBeGreaterThan(1500);
      expect(chats.some((c) => c.isLowPriority)).toBe(true);
      const got = await expectExact({});
      expect(got.length).toBe(expected({}).length);
      expect(got.length).toBeLessThan(rows.length);
      const everything = await expectExact({ excludeLowPriority: false });
      expect(everything.length).toBe(rows.length);
    });

    it("finds literal words in any order, case-insensitively, whole words only", async () => {
      const { rare, pairRare, pairCommon } = rareWords();
      for (const w of rare.slice(0, 5)) await expectExact({ query: w });
      await expectExact({ query: `${pairCommon.toUpperCase()} ${pairRare}` });
      await expectExact({ query: `${pairRare} ${pairCommon}` });
      // A prefix is not a word: search does not prefix-match (unless the prefix is itself a word somewhere).
      const prefix = pairRare.slice(0, pairRare.length - 1);
      await expectExact({ query: prefix });
      const none = await ok<SearchPage>(env, `/v1/messages/search${qs({ query: "zzqqxxnothing" })}`);
      expect(none).toEqual({ items: [], chats: {}, hasMore: false, oldestCursor: null, newestCursor: null });
    });

    it("restricts by account, chat (repeated chatIDs), chat type, muted and low-priority chats", async () => {
      const [a, b] = env.accounts.map((x) => x.accountID);
      const groups = chats.filter((c) => c.type === "group");
      const lowWord = rows.find((r) => r.chat.isLowPriority && words(r.m.text).length)!;
      const mutedWord = rows.find((r) => r.chat.isMuted && !r.chat.isLowPriority && words(r.m.text).length)!;
      expect(lowWord && mutedWord, "the seed has low-priority and muted chats with text").toBeTruthy();
      const lw = words(lowWord.m.text).sort((x, y) => y.length - x.length)[0];
      const mw = words(mutedWord.m.text).sort((x, y) => y.length - x.length)[0];
      const filters: Filter[] = [
        { accountIDs: a, query: "the" },
        { accountIDs: [a, b], query: "the" },
        { chatIDs: groups[0].id },
        { chatIDs: [groups[0].id, groups[1].id], query: "the" },
        { chatType: "group", query: "you" },
        { chatType: "single", query: "you" },
        { query: lw },
        { query: lw, excludeLowPriority: false },
        { query: lw, excludeLowPriority: true },
        { query: mw },
        { query: mw, includeMuted: false },
        { query: mw, includeMuted: true },
        { chatIDs: lowWord.chat.id },
        { chatIDs: lowWord.chat.id, excludeLowPriority: false },
      ];
      for (const f of filters) await expectExact(f);
      // chatIDs also take local chat IDs.
      const local = groups.find((c) => c.localChatID)!;
      expect(ids(await search({ chatIDs: local.localChatID!, query: "the" }))).toEqual(
        ids(await search({ chatIDs: local.id, query: "the" })),
      );
      expect(ids(expected({ query: lw, excludeLowPriority: false }).map((r) => r.m))).toContain(lowWord.m.id);
      expect(ids(expected({ query: mw, includeMuted: false }).map((r) => r.m))).not.toContain(mutedWord.m.id);
    });

    it("filters by sender: me, others, or a user ID", async () => {
      const group = chats
        .filter((c) => c.type === "group")
        .sort((x, y) => y.participants.total - x.participants.total)[0];
      const someone = rows.find((r) => r.chat.id === group.id && !r.m.isSender)!.m.senderID;
      for (const f of [
        { sender: "me", chatIDs: group.id },
        { sender: "others", chatIDs: group.id },
        { sender: someone },
        { sender: "me", query: "the" },
        { sender: "others", query: "the", accountIDs: env.accounts[1].accountID },
      ] as Filter[])
        await expectExact(f);
    });

    it("bounds by dateAfter/dateBefore strictly, with offsets allowed", async () => {
      const { m, chat } = rows.filter((r) => r.chat.type === "group")[7];
      const t = ms(m.timestamp);
      const iso = (x: number) => new Date(x).toISOString();
      const after = await expectExact({ chatIDs: chat.id, dateAfter: iso(t) });
      expect(ids(after)).not.toContain(m.id);
      expect(ids(await expectExact({ chatIDs: chat.id, dateAfter: iso(t - 1) }))).toContain(m.id);
      expect(ids(await expectExact({ chatIDs: chat.id, dateBefore: iso(t) }))).not.toContain(m.id);
      expect(ids(await expectExact({ chatIDs: chat.id, dateBefore: iso(t + 1) }))).toContain(m.id);
      const window = await expectExact({ dateAfter: iso(t - 30 * 86_400_000), dateBefore: iso(t), query: "the" });
      expect(window.length).toBeGreaterThan(0);
      const offset = iso(t - 2 * 3_600_000).replace("Z", "-02:00");
      expect(ids(await search({ chatIDs: chat.id, dateAfter: offset }))).toEqual(ids(after));
    });

    it("filters by media type", async () => {
      const attachmentsOf = (t: Attachment["type"]) => rows.filter((r) => kinds(r.m).has(t));
      expect(attachmentsOf("img").length, "the seed has images").toBeGreaterThan(0);
      const all = { excludeLowPriority: false };
      const exact = async (mediaTypes: string[], pick: (m: Message) => boolean) => {
        const got = await search({ ...all, mediaTypes });
        expect(ids(got).sort(), mediaTypes.join()).toEqual(ids(rows.filter((r) => pick(r.m)).map((r) => r.m)).sort());
      };
      await exact(["image"], (m) => kinds(m).has("img"));
      await exact(["video"], (m) => kinds(m).has("video"));
      await exact(["link"], hasLink);
      await exact(["image", "video"], (m) => kinds(m).has("img") || kinds(m).has("video"));

      const file = ids(await search({ ...all, mediaTypes: ["file"] }));
      for (const r of rows.filter((x) => kinds(x.m).has("unknown"))) expect(file).toContain(r.m.id);
      for (const id of file) {
        const m = rows.find((r) => r.m.id === id)!.m;
        expect(
          [...kinds(m)].some((k) => k !== "img" && k !== "video"),
          id,
        ).toBe(true);
      }
      // Media filters combine with words.
      const linkRow = rows.find((r) => hasLink(r.m) && words(r.m.text).length > 2)!;
      const linkWord = words(linkRow.m.text).find((w) => !["https", "http", "example", "org"].includes(w))!;
      for (const query of [linkWord, "the", "https"]) {
        const got = await search({ ...all, mediaTypes: ["link"], query });
        expect(ids(got).sort(), `link + ${query}`).toEqual(
          ids(
            expected({ ...all, query })
              .filter((r) => hasLink(r.m))
              .map((r) => r.m),
          ).sort(),
        );
      }
      const captioned = rows.find((r) => kinds(r.m).has("img") && words(r.m.text).length)!;
      if (captioned) {
        const w = words(captioned.m.text)[0];
        const got = await search({ ...all, mediaTypes: ["image"], query: w });
        expect(ids(got).sort()).toEqual(
          ids(
            expected({ ...all, query: w })
              .filter((r) => kinds(r.m).has("img"))
              .map((r) => r.m),
          ).sort(),
        );
        expect(ids(got)).toContain(captioned.m.id);
      }

      const any = ids(await search({ ...all, mediaTypes: ["any"] }));
      for (const r of rows.filter((x) => x.m.attachments?.length)) expect(any).toContain(r.m.id);
      for (const id of any) {
        const m = rows.find((r) => r.m.id === id)!.m;
        expect(!!m.attachments?.length || hasLink(m), id).toBe(true);
      }
    });

    it("caps pages at 20, honours smaller limits, and the SDK's auto-pagination walks the same results", async () => {
      const f = { query: "the", chatType: "group" };
      const want = expected(f);
      expect(want.length).toBeGreaterThan(45);
      const dflt = await ok<SearchPage>(env, `/v1/messages/search${qs(f)}`);
      expect(dflt.items.length).toBe(20);
      expect(dflt.hasMore).toBe(true);
      const big = await ok<SearchPage>(env, `/v1/messages/search${qs({ ...f, limit: 50 })}`);
      expect(big.items.length).toBe(20);
      const small = await ok<SearchPage>(env, `/v1/messages/search${qs({ ...f, limit: 5 })}`);
      expect(ids(small.items)).toEqual(ids(dflt.items).slice(0, 5));
      expect(small.hasMore).toBe(true);

      const by7 = await walk<Message>(env, "/v1/messages/search", { ...f, limit: 7 });
      const by20 = await walk<Message>(env, "/v1/messages/search", f);
      expect(ids(by7.items)).toEqual(ids(by20.items));
      expect(by7.pages.slice(0, -1).every((p) => p.items.length === 7)).toBe(true);

      const sdk: string[] = [];
      for await (const m of env.sdk.messages.search({ query: "the", chatType: "group" })) sdk.push(m.id);
      expect(sdk).toEqual(ids(by20.items));
      const sdkMedia: string[] = [];
      for await (const m of env.sdk.messages.search({
        mediaTypes: ["image", "video"],
        excludeLowPriority: false,
        limit: 6,
      }))
        sdkMedia.push(m.id);
      expect(sdkMedia).toEqual(ids(await search({ mediaTypes: ["image", "video"], excludeLowPriority: false })));
    });

    it("refuses invalid parameters with the offending query parameter named", async () => {
      const cases: [string, string][] = [
        ["limit=0", "limit"],
        ["limit=many", "limit"],
        ["chatType=channel", "chatType"],
        ["mediaTypes=gif", "mediaTypes"],
        ["mediaTypes=image&mediaTypes=sound", "mediaTypes"],
        ["dateAfter=last-week", "dateAfter"],
        ["dateBefore=2024-13-01T00:00:00Z", "dateBefore"],
        ["excludeLowPriority=maybe", "excludeLowPriority"],
        ["includeMuted=2", "includeMuted"],
        ["direction=sideways&cursor=x", "direction"],
      ];
      for (const [query, name] of cases)
        expectError(await raw(env, `/v1/messages/search?${query}`), 400, ["query", name]);
    });
  });
}
