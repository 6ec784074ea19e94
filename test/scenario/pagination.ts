/**
 * The pagination rule: walking every page of a list, in either direction, yields every item exactly once and in
 * order; a walk stays exact while new messages arrive; garbage cursors and cursors of another endpoint or query
 * are refused with 400.
 */
import { describe, expect, it } from "vitest";
import { expectError, expectSorted } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, enc } from "../kit/common.ts";
import { allChats, chatWithHistory, duplicates, ids, ms, newGroup, ok, qs, raw, walk, type Env } from "./kit.ts";

/**
 * Checks both walks of one list: `before` from the start, then `after` from the oldest page's oldestCursor. The
 * `after` walk must give every item but the oldest (the cursor's own item), oldest → newest.
 */
async function bothWays<T extends { id: string }>(
  env: Env,
  path: string,
  params: Record<string, unknown>,
  expectedOrder?: string[],
) {
  const down = await walk<T>(env, path, params);
  const downIDs = ids(down.items);
  expect(duplicates(downIDs), `${path} before-walk duplicates`).toEqual([]);
  if (expectedOrder) expect(downIDs).toEqual(expectedOrder);
  for (const page of down.pages) {
    if (!page.items.length) continue;
    expect(typeof page.oldestCursor).toBe("string");
    expect(typeof page.newestCursor).toBe("string");
  }
  expect(down.pages.at(-1)!.hasMore).toBe(false);
  expect(down.pages.slice(0, -1).every((p) => p.hasMore)).toBe(true);
  // hasMore=true never leads to an empty page.
  expect(
    down.pages.every((p, i) => p.items.length > 0 || (i === 0 && down.pages.length === 1)),
    `${path}: empty page after hasMore`,
  ).toBe(true);

  const start = down.pages.at(-1)!.oldestCursor!;
  const up = await walk<T>(env, path, params, { direction: "after", cursor: start });
  const upIDs = ids(up.items);
  expect(duplicates(upIDs), `${path} after-walk duplicates`).toEqual([]);
  expect([downIDs.at(-1)!, ...upIDs], `${path}: after-walk from the oldest cursor`).toEqual([...downIDs].reverse());
  expect(up.pages.at(-1)!.hasMore).toBe(false);
  if (downIDs.length > 1)
    expect(
      up.pages.every((p) => p.items.length > 0),
      `${path}: empty page after hasMore (after-walk)`,
    ).toBe(true);
  return downIDs;
}

export function paginationScenarios(env: Env) {
  describe("pagination: every item exactly once, both directions", () => {
    it("GET /v1/chats", async () => {
      const list = await bothWays<Chat>(env, "/v1/chats", {});
      expect(list.length).toBeGreaterThan(25);
      const sdk: string[] = [];
      for await (const c of env.sdk.chats.list()) sdk.push(c.id);
      expect(sdk).toEqual(list);
      await bothWays<Chat>(env, "/v1/chats", { accountIDs: env.accounts[1].accountID });
    });

    it("GET /v1/chats/{id}/messages", async () => {
      const chats = await allChats(env);
      let tested = 0;
      for (const chat of chats) {
        const first = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
        if (!first.hasMore) continue;
        const order = await bothWays<Message>(env, `${chatPath(chat.id)}/messages`, {});
        const all = await walk<Message>(env, `${chatPath(chat.id)}/messages`, {});
        expectSorted(all.items, (m) => ms(m.timestamp), "desc");
        expect(order.length).toBeGreaterThan(20);
        if (++tested === 4) break;
      }
      expect(tested).toBe(4);
    });

    it("message pages at the exact boundary: 20 messages is one page, 21 is two", async () => {
      const chat = await newGroup(env);
      for (let i = 0; i < 20; i++)
        await ok(env, `${chatPath(chat.id)}/messages`, { method: "POST", json: { text: `boundary ${i}` } });
      const one = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
      expect(one.items.length).toBe(20);
      expect(one.hasMore).toBe(false);
      expect(one.items.map((m) => m.text)).toEqual(Array.from({ length: 20 }, (_, i) => `boundary ${19 - i}`));
      await ok(env, `${chatPath(chat.id)}/messages`, { method: "POST", json: { text: "boundary 20" } });
      const p1 = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
      expect(p1.items.length).toBe(20);
      expect(p1.hasMore).toBe(true);
      const p2 = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages${qs({ cursor: p1.oldestCursor })}`);
      expect(p2.items.map((m) => m.text)).toEqual(["boundary 0"]);
      expect(p2.hasMore).toBe(false);
      const newest = await ok<Page<Message>>(
        env,
        `${chatPath(chat.id)}/messages${qs({ cursor: p1.newestCursor, direction: "after" })}`,
      );
      expect(newest).toEqual({ items: [], hasMore: false, oldestCursor: null, newestCursor: null });
    });

    it("GET /v1/chats/search", async () => {
      const all = await allChats(env);
      await bothWays<Chat>(env, "/v1/chats/search", { limit: 7 }, ids(all));
      await bothWays<Chat>(
        env,
        "/v1/chats/search",
        { limit: 4, type: "single", inbox: "primary" },
        ids(all.filter((c) => c.type === "single" && !c.isArchived && !c.isLowPriority)),
      );
      await bothWays<Chat>(env, "/v1/chats/search", {
        limit: 1,
        query: "sandbox",
        accountIDs: env.accounts[0].accountID,
      });
    });

    it("GET /v1/messages/search", async () => {
      const common = await bothWays<Message>(env, "/v1/messages/search", { query: "the" });
      expect(common.length).toBeGreaterThan(100);
      await bothWays<Message>(env, "/v1/messages/search", { query: "you", chatType: "single", limit: 9 });
      await bothWays<Message>(env, "/v1/messages/search", {
        mediaTypes: ["image", "link"],
        excludeLowPriority: false,
        limit: 3,
      });
      await bothWays<Message>(env, "/v1/messages/search", { sender: "me", accountIDs: env.accounts[1].accountID });
      // Date bounds prune index segments; walk both ways inside a window.
      const all = (await walk<Message>(env, "/v1/messages/search", { excludeLowPriority: false })).items;
      const newer = all[Math.floor(all.length / 4)].timestamp;
      const older = all[Math.floor((3 * all.length) / 4)].timestamp;
      const windowed = await bothWays<Message>(env, "/v1/messages/search", {
        excludeLowPriority: false,
        dateAfter: older,
        dateBefore: newer,
        limit: 11,
      });
      expect(windowed).toEqual(
        ids(all).filter(
          (_id, i) =>
            Date.parse(all[i].timestamp) > Date.parse(older) && Date.parse(all[i].timestamp) < Date.parse(newer),
        ),
      );
      await bothWays<Message>(env, "/v1/messages/search", { query: "the", dateAfter: older });
    });

    it("GET /v1/accounts/{id}/contacts/list", async () => {
      for (const account of env.accounts) {
        const whole = await ok<Page<{ id: string }>>(
          env,
          `/v1/accounts/${enc(account.accountID)}/contacts/list?limit=200`,
        );
        await bothWays(env, `/v1/accounts/${enc(account.accountID)}/contacts/list`, { limit: 6 }, ids(whole.items));
      }
    });

    it("hasMore is exact at the page boundary of chat search", async () => {
      const total = (await ok<Page<Chat>>(env, "/v1/chats/search?limit=200&type=group")).items;
      const exact = await ok<Page<Chat>>(env, `/v1/chats/search?type=group&limit=${total.length}`);
      expect(exact.items.length).toBe(total.length);
      expect(exact.hasMore).toBe(false);
      const short = await ok<Page<Chat>>(env, `/v1/chats/search?type=group&limit=${total.length - 1}`);
      expect(short.hasMore).toBe(true);
      const rest = await ok<Page<Chat>>(
        env,
        `/v1/chats/search${qs({ type: "group", limit: total.length - 1, cursor: short.oldestCursor })}`,
      );
      expect(ids(rest.items)).toEqual([total.at(-1)!.id]);
      expect(rest.hasMore).toBe(false);
    });
  });

  describe("pagination: stable while messages arrive", () => {
    async function quietChatWithHistory(): Promise<{ chat: Chat; before: string[] }> {
      for (const chat of await allChats(env)) {
        if (chat.title === "Echo") continue;
        const all = await walk<Message>(env, `${chatPath(chat.id)}/messages`);
        if (all.items.length > 70) return { chat, before: ids(all.items) };
      }
      throw new Error("no chat with more than 70 messages");
    }

    it("walking back with `before` while new messages are sent returns every earlier message exactly once", async () => {
      const { chat, before } = await quietChatWithHistory();
      const seen: string[] = [];
      const sent: string[] = [];
      let cursor: string | null = null;
      for (let n = 0; n < 100; n++) {
        const page: Page<Message> = await ok(env, `${chatPath(chat.id)}/messages${qs({ cursor })}`);
        seen.push(...ids(page.items));
        const s = await ok(env, `${chatPath(chat.id)}/messages`, {
          method: "POST",
          json: { text: `arrived during page ${n}` },
        });
        sent.push(s.pendingMessageID);
        if (!page.hasMore || !page.oldestCursor) break;
        cursor = page.oldestCursor;
      }
      expect(sent.length).toBeGreaterThan(3);
      expect(duplicates(seen)).toEqual([]);
      expect(seen.filter((id) => !sent.includes(id))).toEqual(before);
    });

    it("walking forward with `after` while new messages are sent returns every earlier message exactly once, then the new ones", async () => {
      const { chat, before } = await quietChatWithHistory();
      const oldest = [...before].reverse();
      const first = await ok<Page<Message>>(
        env,
        `${chatPath(chat.id)}/messages${qs({ cursor: (await walk<Message>(env, `${chatPath(chat.id)}/messages`)).pages.at(-1)!.oldestCursor })}`,
      );
      expect(first.items).toEqual([]); // nothing is older than the oldest
      const lastPage = (await walk<Message>(env, `${chatPath(chat.id)}/messages`)).pages.at(-1)!;
      let cursor = lastPage.oldestCursor!;
      const seen: string[] = [oldest[0]];
      const sent: string[] = [];
      for (let n = 0; n < 100; n++) {
        const page: Page<Message> = await ok(env, `${chatPath(chat.id)}/messages${qs({ cursor, direction: "after" })}`);
        seen.push(...ids(page.items).reverse());
        const s = await ok(env, `${chatPath(chat.id)}/messages`, {
          method: "POST",
          json: { text: `forward page ${n}` },
        });
        sent.push(s.pendingMessageID);
        if (!page.hasMore || !page.newestCursor) break;
        cursor = page.newestCursor;
      }
      expect(duplicates(seen)).toEqual([]);
      expect(seen.filter((id) => !sent.includes(id))).toEqual(oldest);
      // What was sent during the walk and seen comes after everything older, in send order.
      const seenSent = seen.filter((id) => sent.includes(id));
      expect(seenSent).toEqual(sent.slice(0, seenSent.length));
    });
  });

  describe("pagination: cursors are checked", () => {
    const garbage = [
      "garbage",
      "!!!",
      "W10",
      "WyJ4Il0",
      "eyJhIjoxfQ",
      "null",
      "-1",
      "1e10",
      "x".repeat(3000),
      "%00",
      "🙂",
    ];

    it("refuses garbage cursors with 400 on every paginated endpoint", async () => {
      const chat = await chatWithHistory(env, "group");
      const endpoints = [
        "/v1/chats",
        "/v1/chats/search",
        "/v1/messages/search",
        `${chatPath(chat.id)}/messages`,
        `/v1/accounts/${enc(env.accounts[0].accountID)}/contacts/list`,
      ];
      for (const path of endpoints) {
        for (const cursor of garbage) {
          for (const direction of [undefined, "after"]) {
            const res = await raw(env, `${path}${qs({ cursor, direction })}`);
            expectError(res, 400);
          }
        }
      }
    });

    it("refuses tampered and truncated cursors", async () => {
      const page = await ok<Page<Chat>>(env, "/v1/chats");
      const c = page.oldestCursor!;
      const flipped = c.slice(0, 5) + (c[5] === "A" ? "B" : "A") + c.slice(6);
      for (const cursor of [c.slice(0, -3), c.slice(3), flipped, `${c}x`]) {
        const res = await raw(env, `/v1/chats${qs({ cursor })}`);
        // A tampered cursor either still names a valid position of this list or is refused; never a 500.
        if (res.status !== 400) {
          expect(res.status, `cursor ${cursor}: ${res.text}`).toBe(200);
          expect(duplicates(ids(res.body.items))).toEqual([]);
        }
      }
      expectError(await raw(env, `/v1/chats${qs({ cursor: c.slice(0, -3) })}`), 400);
    });

    it("refuses a cursor from another endpoint", async () => {
      const chat = await chatWithHistory(env, "group");
      const chatsCursor = (await ok<Page<Chat>>(env, "/v1/chats")).oldestCursor!;
      const chatSearchCursor = (await ok<Page<Chat>>(env, "/v1/chats/search?limit=3")).oldestCursor!;
      const messageSearchCursor = (await ok<Page<Message>>(env, "/v1/messages/search?query=the")).oldestCursor!;
      const messagesCursor = (await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).oldestCursor!;
      const contactsCursor = (
        await ok<Page<unknown>>(env, `/v1/accounts/${enc(env.accounts[0].accountID)}/contacts/list?limit=2`)
      ).oldestCursor!;
      const targets: Record<string, string> = {
        chats: "/v1/chats",
        chatSearch: "/v1/chats/search?limit=3",
        messageSearch: "/v1/messages/search?query=the",
        messages: `${chatPath(chat.id)}/messages`,
        contacts: `/v1/accounts/${enc(env.accounts[0].accountID)}/contacts/list?limit=2`,
      };
      const cursors: Record<string, string> = {
        chats: chatsCursor,
        chatSearch: chatSearchCursor,
        messageSearch: messageSearchCursor,
        messages: messagesCursor,
        contacts: contactsCursor,
      };
      for (const [from, cursor] of Object.entries(cursors)) {
        for (const [to, path] of Object.entries(targets)) {
          if (from === to) continue;
          const sep = path.includes("?") ? "&" : "?";
          const res = await raw(env, `${path}${sep}cursor=${enc(cursor)}`);
          expect(res.status, `${from} cursor on ${to}: ${res.text}`).toBe(400);
          expectError(res, 400);
        }
      }
    });

    it("refuses a cursor from the same endpoint with another query", async () => {
      const [a, b] = env.accounts.map((x) => x.accountID);
      const chatsA = (await ok<Page<Chat>>(env, `/v1/chats${qs({ accountIDs: a })}`)).oldestCursor!;
      expectError(await raw(env, `/v1/chats${qs({ accountIDs: b, cursor: chatsA })}`), 400);
      expectError(await raw(env, `/v1/chats${qs({ cursor: chatsA })}`), 400);

      const searchA = (await ok<Page<Chat>>(env, `/v1/chats/search${qs({ type: "single", limit: 3 })}`)).oldestCursor!;
      expectError(await raw(env, `/v1/chats/search${qs({ type: "group", limit: 3, cursor: searchA })}`), 400);
      expectError(
        await raw(env, `/v1/chats/search${qs({ query: "echo", type: "single", limit: 3, cursor: searchA })}`),
        400,
      );
      // The page size is not part of the query: a cursor keeps working with another limit.
      const otherLimit = await raw(env, `/v1/chats/search${qs({ type: "single", limit: 5, cursor: searchA })}`);
      expect(otherLimit.status).toBe(200);

      const msgA = (await ok<Page<Message>>(env, `/v1/messages/search${qs({ query: "the" })}`)).oldestCursor!;
      expectError(await raw(env, `/v1/messages/search${qs({ query: "you", cursor: msgA })}`), 400);
      expectError(await raw(env, `/v1/messages/search${qs({ query: "the", sender: "me", cursor: msgA })}`), 400);
      expectError(await raw(env, `/v1/messages/search${qs({ query: "the", accountIDs: a, cursor: msgA })}`), 400);
    });
  });
}
