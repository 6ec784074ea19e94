/**
 * A message's ID as the cursor of its chat's message list — what the vendor CLI sends for `messages list
 * --before-cursor <ID>` / `--after-cursor <ID>` and `messages context --id <ID>` (wire-compat §13): the same page as
 * the message's own sortKey gives, in both directions, over raw HTTP and both SDKs. A message of another chat, a
 * deleted message and garbage are refused with a 400 that says which.
 */
import BeeperDesktop from "@beeper/desktop-api";
import { describe, expect, it } from "vitest";
import { expectError, expectSdkError } from "./assert.ts";
import type { Message, Page } from "../../src/schema/wire.ts";
import { chatPath, messagePath } from "../kit/common.ts";
import { allChats, chatWithHistory, client, ids, newGroup, ok, qs, raw, walk, type Env } from "./kit.ts";

type Direction = "before" | "after";

export function messageCursorScenarios(env: Env) {
  const list = (chatID: string, cursor: string, direction?: Direction) =>
    ok<Page<Message>>(env, `${chatPath(chatID)}/messages${qs({ cursor, direction })}`);
  const refused = (chatID: string, cursor: string, direction?: Direction) =>
    raw(env, `${chatPath(chatID)}/messages${qs({ cursor, direction })}`);

  /** Pages from `cursor` on, each next page from the ID of the last message of the one before (not its cursor). */
  async function walkByIDs(chatID: string, cursor: string, direction: Direction): Promise<Page<Message>[]> {
    const pages: Page<Message>[] = [];
    for (let page = await list(chatID, cursor, direction); ; page = await list(chatID, cursor, direction)) {
      pages.push(page);
      if (!page.hasMore || pages.length > 200) return pages;
      cursor = (direction === "before" ? page.items.at(-1) : page.items[0])!.id;
    }
  }

  /** A seeded chat of several pages, whole (newest first): backfill is done, so the list no longer changes. */
  async function wholeChat() {
    const chat = await chatWithHistory(env, "group");
    const all = (await walk<Message>(env, `${chatPath(chat.id)}/messages`)).items;
    expect(all.length).toBeGreaterThan(45);
    return { chat, all };
  }

  describe("messages: a message ID as cursor", () => {
    it("pages from the first, a middle and the last message and around page boundaries exactly as their sortKeys do", async () => {
      const { chat, all } = await wholeChat();
      const n = all.length;
      // Newest first: 0 is the last message sent, n - 1 the first; 19/20/21 sit on the first page boundary.
      const picks = [...new Set([0, 1, 19, 20, 21, Math.floor(n / 2), n - 22, n - 21, n - 20, n - 2, n - 1])];
      for (const i of picks) {
        const m = all[i];
        for (const direction of ["before", "after"] as const) {
          const what = `${direction} message ${i} of ${n} (${m.id})`;
          const byID = await list(chat.id, m.id, direction);
          expect(byID, what).toEqual(await list(chat.id, m.sortKey, direction));
          const expected = direction === "before" ? all.slice(i + 1, i + 21) : all.slice(Math.max(0, i - 20), i);
          expect(ids(byID.items), what).toEqual(ids(expected));
          expect(byID.hasMore, what).toBe(direction === "before" ? i + 21 < n : i > 20);
          expect(byID.oldestCursor, what).toBe(expected.at(-1)?.sortKey ?? null);
          expect(byID.newestCursor, what).toBe(expected[0]?.sortKey ?? null);
        }
      }
      // Nothing is older than the first message, nor newer than the last.
      expect(await list(chat.id, all[n - 1].id, "before")).toEqual({
        items: [],
        hasMore: false,
        oldestCursor: null,
        newestCursor: null,
      });
      expect(await list(chat.id, all[0].id, "after")).toEqual({
        items: [],
        hasMore: false,
        oldestCursor: null,
        newestCursor: null,
      });
      // `direction` defaults to before, as it does for a sortKey.
      expect(await list(chat.id, all[5].id)).toEqual(await list(chat.id, all[5].id, "before"));
    });

    it("walks a whole chat page by page by message IDs, both ways, with the same pages as the returned cursors give", async () => {
      const { chat, all } = await wholeChat();
      const path = `${chatPath(chat.id)}/messages`;

      const down = await walkByIDs(chat.id, all[0].id, "before");
      expect(ids(down.flatMap((p) => p.items))).toEqual(ids(all.slice(1)));
      const downByCursors = await walk<Message>(env, path, {}, { cursor: all[0].id, direction: "before" });
      expect(down).toEqual(downByCursors.pages);

      const up = await walkByIDs(chat.id, all.at(-1)!.id, "after");
      expect(ids(up.flatMap((p) => [...p.items].reverse()))).toEqual(ids(all.slice(0, -1).reverse()));
      const upByCursors = await walk<Message>(env, path, {}, { cursor: all.at(-1)!.id, direction: "after" });
      expect(up).toEqual(upByCursors.pages);
      expect(up.length).toBeGreaterThan(2);
    });

    it("works through both official SDKs: one page each way, and SDK 5 auto-pagination from a message ID", async () => {
      const { chat, all } = await wholeChat();
      const i = Math.floor(all.length / 2);
      const m = all[i];
      for (const direction of ["before", "after"] as const) {
        const rest = await list(chat.id, m.id, direction);
        const sdk5 = await env.sdk.messages.list(chat.id, { cursor: m.id, direction });
        expect(ids(sdk5.items as Message[])).toEqual(ids(rest.items));
        expect([sdk5.hasMore, sdk5.oldestCursor, sdk5.newestCursor]).toEqual([
          rest.hasMore,
          rest.oldestCursor,
          rest.newestCursor,
        ]);
        const sdk4 = await env.sdk4.messages.list(chat.id, { cursor: m.id, direction });
        expect(ids(sdk4.items as Message[])).toEqual(ids(rest.items));
      }
      const older: string[] = [];
      for await (const message of env.sdk.messages.list(chat.id, { cursor: m.id, direction: "before" }))
        older.push(message.id);
      expect(older).toEqual(ids(all.slice(i + 1)));
    });

    it("takes a pending message's ID at once, and refuses a deleted message's ID while its sortKey still pages", async () => {
      const chat = await newGroup(env);
      const sent: string[] = [];
      for (const text of ["first", "second", "third", "fourth"])
        sent.push(
          (
            await ok<{ pendingMessageID: string }>(env, `${chatPath(chat.id)}/messages`, {
              method: "POST",
              json: { text },
            })
          ).pendingMessageID,
        );
      // The pending ID is the message's ID for good: a cursor at once, whatever its send status.
      expect(ids((await list(chat.id, sent[3], "before")).items)).toEqual([sent[2], sent[1], sent[0]]);
      expect(ids((await list(chat.id, sent[0], "after")).items)).toEqual([sent[3], sent[2], sent[1]]);

      const doomed = await client(env).settled(chat.id, sent[1]);
      await ok(env, messagePath(chat.id, doomed.id), { method: "DELETE" }, 204);
      for (const direction of [undefined, "before", "after"] as const) {
        const res = await refused(chat.id, doomed.id, direction);
        expectError(res, 400, ["query", "cursor"]);
        expect(res.body.message).toMatch(/deleted/);
        expect(res.body.details.issues[0].code).toBe("message_deleted");
      }
      // A sortKey is a position, not a message: the deleted message's own one still pages past it.
      expect(ids((await list(chat.id, doomed.sortKey, "before")).items)).toEqual([sent[0]]);
      expect(ids((await list(chat.id, doomed.sortKey, "after")).items)).toEqual([sent[3], sent[2]]);
      await expectSdkError(
        env.sdk.messages.list(chat.id, { cursor: doomed.id, direction: "before" }),
        BeeperDesktop.BadRequestError,
        400,
      );
    });

    it("refuses another chat's message, a message ID that names no message, and garbage, each with a 400 that says which", async () => {
      const { chat, all } = await wholeChat();
      const other = (await allChats(env)).find((c) => c.id !== chat.id && c.preview)!;
      const foreign = other.preview!;
      for (const direction of [undefined, "before", "after"] as const) {
        const res = await refused(chat.id, foreign.id, direction);
        expectError(res, 400, ["query", "cursor"]);
        expect(res.body.message).toContain("another chat");
        expect(res.body.message).toContain(other.id);
        expect(res.body.details.issues[0].code).toBe("message_in_another_chat");
      }
      await expectSdkError(env.sdk.messages.list(chat.id, { cursor: foreign.id }), BeeperDesktop.BadRequestError, 400);

      // inboxd's message IDs are `<chat no>.<seq>`: the same chat number with a seq past the end names no message.
      expect(all[0].id).toMatch(/^\d+\.\d+$/);
      const chatNo = all[0].id.split(".")[0];
      for (const unknown of [`${chatNo}.999999999999`, "999999.0"]) {
        const res = await refused(chat.id, unknown, "before");
        expectError(res, 400, ["query", "cursor"]);
        expect(res.body.message).toMatch(/is not the ID of a message in chat/);
        expect(res.body.details.issues[0].code).toBe("unknown_message");
      }

      for (const garbage of [
        "garbage",
        "1.2.3",
        ".5",
        "5.",
        "a.b",
        "-1",
        "🙂",
        " ",
        "x".repeat(1000),
        "9".repeat(16),
      ]) {
        const res = await refused(chat.id, garbage, "after");
        expectError(res, 400, ["query", "cursor"]);
        expect(res.body.message).toMatch(/^invalid cursor/);
        expect(res.body.details.issues[0].code).toBe("invalid_cursor");
        expect(res.body.message.length).toBeLessThanOrEqual(300);
      }
    });

    it("never hands out a message ID that could be read as a cursor, or a cursor that could be read as a message ID", async () => {
      const { chat, all } = await wholeChat();
      const pages = (await walk<Message>(env, `${chatPath(chat.id)}/messages`)).pages;
      const cursors = pages.flatMap((p) => [p.oldestCursor!, p.newestCursor!]).concat(all.map((m) => m.sortKey));
      for (const cursor of cursors) expect(cursor).toMatch(/^\d+$/);
      for (const m of all) expect(m.id).toMatch(/\./);
      // And a sortKey sent as a message ID is not a message (they are different namespaces, not two spellings).
      expect((await raw(env, messagePath(chat.id, all[3].sortKey))).status).toBe(404);
    });
  });
}
