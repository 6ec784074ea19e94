/**
 * The 4.2.x client generation (SDK 4.2.3, installed as `desktop-api-4`) against the same server: every method it
 * has, except assets.download (asset endpoints are a later issue) and the top-level focus()/search() (POST
 * /v1/focus and GET /v1/search are not implemented yet, so nothing is asserted about them).
 */
import BeeperDesktop4 from "desktop-api-4";
import { describe, expect, it } from "vitest";
import { expectSdkError } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath } from "../kit/common.ts";
import {
  allChats,
  contactsOf,
  duplicates,
  echoChat,
  echoReply,
  ids,
  newGroup,
  ok,
  sdkOptions,
  walk,
  type Env,
} from "./kit.ts";

export function sdk4Scenarios(env: Env) {
  describe("SDK 4.2.3", () => {
    it("accounts.list and accounts.contacts.search", async () => {
      const accounts = await env.sdk4.accounts.list();
      expect(accounts.map((a) => a.accountID)).toEqual(env.accounts.map((a) => a.accountID));
      for (const a of accounts) expect(a.user.id).toBe(env.accounts.find((x) => x.accountID === a.accountID)!.user.id);
      const found = await env.sdk4.accounts.contacts.search(accounts[0].accountID, { query: "echo" });
      expect(found.items.map((u) => u.id)).toContain("@echo:sandbox.invalid");
    });

    it("chats.list and chats.search auto-paginate over the whole list", async () => {
      const all = await allChats(env);
      const listed: string[] = [];
      for await (const c of env.sdk4.chats.list()) listed.push(c.id);
      expect(listed).toEqual(ids(all));
      const searched: string[] = [];
      for await (const c of env.sdk4.chats.search({ type: "group", limit: 5 })) searched.push(c.id);
      expect(searched).toEqual(ids(all.filter((c) => c.type === "group")));
      const byAccount: string[] = [];
      for await (const c of env.sdk4.chats.list({ accountIDs: [env.accounts[0].accountID] })) byAccount.push(c.id);
      expect(byAccount).toEqual(ids(all.filter((c) => c.accountID === env.accounts[0].accountID)));
    });

    it("chats.retrieve, including maxParticipantCount, and NotFoundError", async () => {
      const group = (await allChats(env))
        .filter((c) => c.type === "group")
        .sort((x, y) => y.participants.total - x.participants.total)[0];
      const chat = await env.sdk4.chats.retrieve(group.id);
      expect(chat.id).toBe(group.id);
      expect(chat.participants.items.length).toBe(group.participants.total);
      const some = await env.sdk4.chats.retrieve(group.id, { maxParticipantCount: 1 });
      expect(some.participants.items.length).toBe(1);
      expect(some.participants.hasMore).toBe(true);
      await expectSdkError(env.sdk4.chats.retrieve("!doesnotexist:nowhere"), BeeperDesktop4.NotFoundError, 404);
    });

    it("chats.create in create mode and in start mode (the spec's `mode`/`user` body)", async () => {
      const account = env.accounts[1];
      const contacts = await contactsOf(env, account.accountID);
      const created = await env.sdk4.chats.create({
        accountID: account.accountID,
        type: "group",
        participantIDs: [contacts[3].id, contacts[4].id],
        title: "Made by SDK 4",
      });
      expect(typeof created.chatID).toBe("string");
      expect((await ok<Chat>(env, chatPath(created.chatID))).title).toBe("Made by SDK 4");

      const dm = (await allChats(env)).find(
        (c) => c.accountID === account.accountID && c.type === "single" && c.title !== "Echo",
      )!;
      const other = dm.participants.items.find((p) => !p.isSelf)!;
      // SDK 4.2.3's types predate `mode`; the spec's body is sent as-is.
      const started = (await env.sdk4.chats.create({
        accountID: account.accountID,
        mode: "start",
        user: { id: other.id },
      } as never)) as unknown as { chatID: string; status?: string };
      expect(started.chatID).toBe(dm.id);
      expect(started.status).toBe("existing");
      await expectSdkError(
        env.sdk4.chats.create({
          accountID: account.accountID,
          type: "single",
          participantIDs: [contacts[3].id, contacts[4].id],
        }),
        BeeperDesktop4.UnprocessableEntityError,
        422,
      );
    });

    it("chats.archive and chats.reminders.create (remindAtMs) / delete", async () => {
      const chat = await newGroup(env);
      await env.sdk4.chats.archive(chat.id);
      expect((await ok<Chat>(env, chatPath(chat.id))).isArchived).toBe(true);
      await env.sdk4.chats.archive(chat.id, { archived: false });
      expect((await ok<Chat>(env, chatPath(chat.id))).isArchived).toBe(false);

      const at = Date.now() + 7 * 86_400_000;
      await env.sdk4.chats.reminders.create(chat.id, { reminder: { remindAtMs: at, dismissOnIncomingMessage: false } });
      const withReminder = await ok<Chat>(env, chatPath(chat.id));
      expect(Date.parse(withReminder.reminder!.remindAt!)).toBe(at);
      await env.sdk4.chats.reminders.delete(chat.id);
      expect((await ok<Chat>(env, chatPath(chat.id))).reminder ?? null).toBeNull();
      await expectSdkError(env.sdk4.chats.reminders.delete("!doesnotexist:nowhere"), BeeperDesktop4.NotFoundError, 404);
    });

    it("messages.list auto-paginates with the last item's sortKey as cursor and walks every message once", async () => {
      let tested = 0;
      for (const chat of await allChats(env)) {
        const first = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
        if (!first.hasMore) continue;
        const expected = ids((await walk<Message>(env, `${chatPath(chat.id)}/messages`)).items);
        const got: string[] = [];
        const cursors: string[] = [];
        let page = await env.sdk4.messages.list(chat.id);
        for (;;) {
          got.push(...page.items.map((m) => m.id));
          if (!page.hasNextPage()) break;
          cursors.push(page.items.at(-1)!.sortKey);
          page = await page.getNextPage();
        }
        expect(got).toEqual(expected);
        expect(duplicates(got)).toEqual([]);
        expect(cursors.length).toBeGreaterThan(0);
        const viaIterator: string[] = [];
        for await (const m of env.sdk4.messages.list(chat.id)) viaIterator.push(m.id);
        expect(viaIterator).toEqual(expected);
        if (++tested === 3) break;
      }
      expect(tested).toBe(3);
    });

    it("messages.search auto-paginates", async () => {
      const expected = ids((await walk<Message>(env, "/v1/messages/search", { query: "you", sender: "others" })).items);
      expect(expected.length).toBeGreaterThan(20);
      const got: string[] = [];
      for await (const m of env.sdk4.messages.search({ query: "you", sender: "others" })) got.push(m.id);
      expect(got).toEqual(expected);
    });

    it("messages.send, with an Echo reply", async () => {
      const echo = await echoChat(env, env.accounts[0].accountID);
      const text = `from sdk4 ${Math.random().toString(36).slice(2)}`;
      const sent = await env.sdk4.messages.send(echo.id, { text });
      expect(sent.chatID).toBe(echo.id);
      const mine = await ok<Message>(env, `${chatPath(echo.id)}/messages/${encodeURIComponent(sent.pendingMessageID)}`);
      expect(mine.text).toBe(text);
      const reply = await echoReply(env, echo.id, sent.pendingMessageID);
      expect(reply.text).toBe(`Echo: ${text}`);
      await expectSdkError(
        env.sdk4.messages.send("!doesnotexist:nowhere", { text: "x" }),
        BeeperDesktop4.NotFoundError,
        404,
      );
    });

    it("maps auth failures to its error classes", async () => {
      const stranger = new BeeperDesktop4({ baseURL: env.url, accessToken: "wrong", ...sdkOptions });
      await expectSdkError(stranger.accounts.list(), BeeperDesktop4.AuthenticationError, 401);
      const readOnly = new BeeperDesktop4({ baseURL: env.url, accessToken: env.ro, ...sdkOptions });
      const chat = (await allChats(env))[0];
      await expectSdkError(readOnly.messages.send(chat.id, { text: "no" }), BeeperDesktop4.PermissionDeniedError, 403);
    });
  });
}
