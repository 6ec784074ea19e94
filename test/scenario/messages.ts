/**
 * Messages of a chat: list, send (Echo included), retrieve, edit, delete. Reactions are in reactions.ts.
 */
import BeeperDesktop from "@beeper/desktop-api";
import { describe, expect, it } from "vitest";
import { expectError, expectSdkError, expectSorted } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, ECHO_ID, messagePath } from "../kit/common.ts";
import {
  allChats,
  duplicates,
  echoChat,
  echoReply,
  ids,
  ms,
  newGroup,
  ok,
  qs,
  raw,
  sendSettled,
  walk,
  type Env,
} from "./kit.ts";

const unique = (label: string) => `${label}${Math.random().toString(36).slice(2, 10)}`;

export function messageScenarios(env: Env) {
  const selfOf = (accountID: string) => env.accounts.find((a) => a.accountID === accountID)!.user.id;

  /** Seeded group chats (they have messages from other people), with their newest page. */
  async function seededGroups(): Promise<{ chat: Chat; page: Message[] }[]> {
    const out: { chat: Chat; page: Message[] }[] = [];
    for (const chat of await allChats(env)) {
      if (chat.type !== "group") continue;
      const page = (await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items;
      if (page.some((m) => !m.isSender && !m.attachments)) out.push({ chat, page });
    }
    return out;
  }

  describe("messages: list", () => {
    it("lists a chat's messages newest first in pages of 20 with sortKey cursors (SDK 5 messages.list auto-pagination)", async () => {
      let biggest!: Chat;
      let most = -1;
      for (const chat of await allChats(env)) {
        const n = (await walk<Message>(env, `${chatPath(chat.id)}/messages`)).items.length;
        if (n > most) [biggest, most] = [chat, n];
      }
      const all: Message[] = [];
      for await (const m of env.sdk.messages.list(biggest.id)) all.push(m as Message);
      expect(all.length).toBeGreaterThan(60);
      expect(all.length).toBe(most);
      expect(duplicates(ids(all))).toEqual([]);
      expect(duplicates(all.map((m) => m.sortKey))).toEqual([]);
      expectSorted(all, (m) => ms(m.timestamp), "desc");
      expectSorted(all, (m) => m.sortKey, "desc");
      const self = selfOf(biggest.accountID);
      const types = ["TEXT", "NOTICE", "IMAGE", "VIDEO", "VOICE", "AUDIO", "FILE", "STICKER", "LOCATION", "REACTION"];
      for (const m of all) {
        expect(m.chatID).toBe(biggest.id);
        expect(m.accountID).toBe(biggest.accountID);
        expect(typeof m.senderID).toBe("string");
        expect(Number.isNaN(ms(m.timestamp))).toBe(false);
        expect(m.isSender ?? false, m.id).toBe(m.senderID === self);
        const x = m as Message & { type?: string };
        if (x.type !== undefined) expect(types).toContain(x.type);
        for (const a of m.attachments ?? []) expect(["unknown", "img", "video", "audio"]).toContain(a.type);
        for (const r of m.reactions ?? []) {
          expect(typeof r.participantID).toBe("string");
          expect(typeof r.reactionKey).toBe("string");
          expect([r.participantID, `${r.participantID}${r.reactionKey}`]).toContain(r.id);
        }
      }
      const senders = new Set(all.map((m) => m.senderID));
      for (const id of senders) expect(ids(biggest.participants.items), `sender ${id} is a participant`).toContain(id);
      expect(all[0].id).toBe(biggest.preview!.id);

      const first = await ok<Page<Message>>(env, `${chatPath(biggest.id)}/messages`);
      expect(first.items.length).toBe(20);
      expect(first.hasMore).toBe(true);
      expect(first.oldestCursor).toBe(first.items.at(-1)!.sortKey);
      expect(first.newestCursor).toBe(first.items[0].sortKey);
      expect(ids(first.items)).toEqual(ids(all.slice(0, 20)));

      // The same messages as a search restricted to this chat with no other filter.
      const searched = await walk<Message>(env, "/v1/messages/search", {
        chatIDs: biggest.id,
        excludeLowPriority: false,
      });
      expect(ids(searched.items).sort()).toEqual(ids(all).sort());
    });

    it("answers an empty page for a chat without messages", async () => {
      const chat = await newGroup(env);
      const page = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
      expect(page).toEqual({ items: [], hasMore: false, oldestCursor: null, newestCursor: null });
      const sdkItems: unknown[] = [];
      for await (const m of env.sdk.messages.list(chat.id)) sdkItems.push(m);
      expect(sdkItems).toEqual([]);
    });
  });

  describe("messages: send and retrieve", () => {
    it("sends, answers with a pending ID that retrieve finds at once, and updates the chat (SDK 5 messages.send/retrieve)", async () => {
      const chat = await newGroup(env);
      const word = unique("zebrafish");
      const text = `Hello **markdown** ${word} + plus`;
      const before = Date.now();
      const sent = await env.sdk.messages.send(chat.id, { text });
      expect(sent.chatID).toBe(chat.id);
      expect(typeof sent.pendingMessageID).toBe("string");

      const got = await env.sdk.messages.retrieve(sent.pendingMessageID, { chatID: chat.id });
      expect(got.text).toBe(text);
      expect(got.isSender).toBe(true);
      expect(got.chatID).toBe(chat.id);
      expect(got.senderID).toBe(selfOf(chat.accountID));
      expect(ms(got.timestamp)).toBeGreaterThanOrEqual(before - 1000);

      const page = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
      expect(page.items[0].text).toBe(text);
      const fresh = await env.sdk.chats.retrieve(chat.id);
      expect(fresh.unreadCount).toBe(0);
      expect(ms(fresh.lastActivity)).toBeGreaterThanOrEqual(ms(got.timestamp));
      const listed = (await allChats(env)).find((c) => c.id === chat.id)!;
      expect(listed.preview?.text).toBe(text);

      // Searchable at once by its words.
      const found = await ok(env, `/v1/messages/search${qs({ query: word })}`);
      expect(ids(found.items)).toEqual([page.items[0].id]);
      expect(Object.keys(found.chats)).toEqual([chat.id]);
    });

    it("moves the chat to the top of GET /v1/chats when a message is sent to it", async () => {
      const all = await allChats(env);
      const old = all.filter((c) => c.type === "single" && !c.participants.items.some((p) => p.id === ECHO_ID)).at(-1)!;
      expect(ids(all).indexOf(old.id)).toBeGreaterThan(25);
      await env.sdk.messages.send(old.id, { text: "bringing this back" });
      const after = await ok<Page<Chat>>(env, "/v1/chats");
      expect(after.items[0].id).toBe(old.id);
      expect(after.items[0].preview?.text).toBe("bringing this back");
      expect(ms(after.items[0].lastActivity)).toBeGreaterThan(ms(old.lastActivity));
      const whole = await allChats(env);
      expect(whole.length).toBe(all.length);
      expect(ids(whole).filter((id) => id !== old.id)).toEqual(ids(all).filter((id) => id !== old.id));
    });

    it("sends a reply: linkedMessageID names the replied-to message", async () => {
      const chat = await newGroup(env);
      const first = await sendSettled(env, chat.id, "question?");
      const reply = await env.sdk.messages.send(chat.id, { text: "answer!", replyToMessageID: first.id });
      const got = await env.sdk.messages.retrieve(reply.pendingMessageID, { chatID: chat.id });
      expect(got.linkedMessageID).toBe(first.id);
      expect(got.text).toBe("answer!");
    });

    it("gets an Echo reply `Echo: <text>` linked to the sent message, on every account", async () => {
      for (const account of env.accounts) {
        const echo = await echoChat(env, account.accountID);
        expect(echo.type).toBe("single");
        const text = `ping ${unique("echo")}`;
        const sent = await env.sdk.messages.send(echo.id, { text });
        const reply = await echoReply(env, echo.id, sent.pendingMessageID);
        expect(reply.text).toBe(`Echo: ${text}`);
        expect(reply.isSender).toBe(false);
        expect(reply.senderID).toBe(ECHO_ID);
        expect(reply.chatID).toBe(echo.id);
        const page = await ok<Page<Message>>(env, `${chatPath(echo.id)}/messages`);
        expect(ids(page.items).indexOf(reply.id)).toBeLessThan(ids(page.items).indexOf(sent.pendingMessageID));
        const chat = await ok<Chat>(env, chatPath(echo.id));
        expect(chat.unreadCount).toBe(1);
        expect((await allChats(env)).find((c) => c.id === echo.id)!.preview?.id).toBe(reply.id);
      }
    });

    it("refuses sends without text, with an unknown upload or reply target, and to unknown chats — adding nothing", async () => {
      const chat = await newGroup(env);
      const path = `${chatPath(chat.id)}/messages`;
      expectError(await raw(env, path, { method: "POST", json: {} }), 400, ["body", "text"]);
      expectError(await raw(env, path, { method: "POST", json: { text: "" } }), 400, ["body", "text"]);
      expectError(await raw(env, path, { method: "POST", json: { text: 5 } }), 400, ["body", "text"]);
      expectError(
        await raw(env, path, { method: "POST", json: { text: "x", attachment: { uploadID: "upl_unknown" } } }),
        422,
      );
      await expectSdkError(
        env.sdk.messages.send(chat.id, { text: "with file", attachment: { uploadID: "upl_unknown" } }),
        BeeperDesktop.UnprocessableEntityError,
        422,
      );
      const badReply = await raw(env, path, { method: "POST", json: { text: "x", replyToMessageID: "424242.1" } });
      expect([404, 422]).toContain(badReply.status);
      expectError(badReply, badReply.status);
      await expectSdkError(
        env.sdk.messages.send("!doesnotexist:nowhere", { text: "x" }),
        BeeperDesktop.NotFoundError,
        404,
      );
      expect((await ok<Page<Message>>(env, path)).items).toEqual([]);
    });

    it("keeps long and non-ASCII texts intact and finds them by their words", async () => {
      const chat = await newGroup(env);
      const long = `${unique("longtext")} ${"lorem ipsum dolor sit amet ".repeat(200)}end`;
      expect(long.length).toBeGreaterThan(5000);
      const sentLong = await env.sdk.messages.send(chat.id, { text: long });
      expect((await env.sdk.messages.retrieve(sentLong.pendingMessageID, { chatID: chat.id })).text).toBe(long);
      expect((await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items[0].text).toBe(long);

      const word = unique("münchen");
      const text = `Grüße aus ${word} 👋🏽 — שלום 日本語`;
      const sent = await env.sdk.messages.send(chat.id, { text });
      expect((await env.sdk.messages.retrieve(sent.pendingMessageID, { chatID: chat.id })).text).toBe(text);
      for (const query of [word, word.toUpperCase(), `日本語 ${word}`, "grüße"]) {
        const found = await walk<Message>(env, "/v1/messages/search", { query, chatIDs: chat.id });
        expect(ids(found.items), query).toEqual([sent.pendingMessageID]);
      }
    });

    it("refuses a reply to a message of another chat", async () => {
      const a = await newGroup(env);
      const b = await newGroup(env);
      const inB = await sendSettled(env, b.id, "in chat b");
      const res = await raw(env, `${chatPath(a.id)}/messages`, {
        method: "POST",
        json: { text: "reply across chats", replyToMessageID: inB.id },
      });
      expect([404, 422]).toContain(res.status);
      expectError(res, res.status);
      expect((await ok<Page<Message>>(env, `${chatPath(a.id)}/messages`)).items).toEqual([]);
    });

    it("retrieves listed messages as listed, and 404s unknown IDs and IDs of another chat", async () => {
      const [{ chat: a, page }, { chat: b }] = await seededGroups();
      for (const m of page.slice(0, 3)) expect(await env.sdk.messages.retrieve(m.id, { chatID: a.id })).toEqual(m);
      await expectSdkError(
        env.sdk.messages.retrieve("no-such-message", { chatID: a.id }),
        BeeperDesktop.NotFoundError,
        404,
      );
      expectError(await raw(env, messagePath(b.id, page[0].id)), 404);
      expectError(await raw(env, messagePath(a.id, "999999.0")), 404);
    });
  });

  describe("messages: edit", () => {
    it("replaces the text of one's own message and answers with the Message plus messageID and success (SDK 5 messages.update)", async () => {
      const chat = await newGroup(env);
      const oldWord = unique("oldword");
      const newWord = unique("newword");
      const kept = unique("keptword");
      const sent = await sendSettled(env, chat.id, `before ${oldWord} ${kept}`);
      const edited = await env.sdk.messages.update(sent.id, { chatID: chat.id, text: `after ${newWord} ${kept}` });
      expect(edited.success).toBe(true);
      expect(edited.messageID).toBe(sent.id);
      expect(edited.id).toBe(sent.id);
      expect(edited.chatID).toBe(chat.id);
      expect(edited.text).toBe(`after ${newWord} ${kept}`);
      expect(edited.sortKey).toBe(sent.sortKey);
      expect((await env.sdk.messages.retrieve(sent.id, { chatID: chat.id })).text).toBe(`after ${newWord} ${kept}`);
      expect((await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items[0].text).toBe(
        `after ${newWord} ${kept}`,
      );
      expect(ids((await ok(env, `/v1/messages/search${qs({ query: newWord })}`)).items)).toEqual([sent.id]);
      expect((await ok(env, `/v1/messages/search${qs({ query: oldWord })}`)).items).toEqual([]);
      // A word the edit kept still finds the message exactly once, as does a filter-only search.
      expect(ids((await ok(env, `/v1/messages/search${qs({ query: kept })}`)).items)).toEqual([sent.id]);
      expect(ids((await walk<Message>(env, "/v1/messages/search", { chatIDs: chat.id })).items)).toEqual([sent.id]);
      expect((await allChats(env)).find((c) => c.id === chat.id)!.preview?.text).toBe(`after ${newWord} ${kept}`);
      // Edited again: still one message.
      await env.sdk.messages.update(sent.id, { chatID: chat.id, text: `third ${kept}` });
      expect(ids((await walk<Message>(env, "/v1/messages/search", { query: kept })).items)).toEqual([sent.id]);
      expect(ids((await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items)).toEqual([sent.id]);
    });

    it("refuses to edit a message with attachments (422)", async () => {
      const withMedia = await ok(
        env,
        `/v1/messages/search${qs({ mediaTypes: "any", excludeLowPriority: false, limit: 20 })}`,
      );
      const target: Message | undefined = withMedia.items.find((m: Message) => m.attachments?.length);
      expect(target, "the seed has messages with attachments").toBeTruthy();
      await expectSdkError(
        env.sdk.messages.update(target!.id, { chatID: target!.chatID, text: "edited" }),
        BeeperDesktop.UnprocessableEntityError,
        422,
      );
      const after = await ok<Message>(env, messagePath(target!.chatID, target!.id));
      expect(after.text).toBe(target!.text);
      expect(after.attachments).toEqual(target!.attachments);
    });

    it("refuses to edit someone else's message (422)", async () => {
      const [{ chat, page }] = await seededGroups();
      const theirs = page.find((m) => !m.isSender && !m.attachments)!;
      const res = await raw(env, messagePath(chat.id, theirs.id), {
        method: "PUT",
        json: { text: "putting words in their mouth" },
      });
      expectError(res, 422);
      expect((await ok<Message>(env, messagePath(chat.id, theirs.id))).text).toBe(theirs.text);
    });

    it("refuses an empty or missing text, and unknown messages and chats", async () => {
      const chat = await newGroup(env);
      const sent = await sendSettled(env, chat.id, "keep me");
      expectError(await raw(env, messagePath(chat.id, sent.id), { method: "PUT", json: { text: "" } }), 400, [
        "body",
        "text",
      ]);
      expectError(await raw(env, messagePath(chat.id, sent.id), { method: "PUT", json: {} }), 400, ["body", "text"]);
      expect((await ok<Message>(env, messagePath(chat.id, sent.id))).text).toBe("keep me");
      await expectSdkError(
        env.sdk.messages.update("999999.0", { chatID: chat.id, text: "x" }),
        BeeperDesktop.NotFoundError,
        404,
      );
      await expectSdkError(
        env.sdk.messages.update(sent.id, { chatID: "!doesnotexist:nowhere", text: "x" }),
        BeeperDesktop.NotFoundError,
        404,
      );
    });
  });

  describe("messages: delete", () => {
    it("deletes one's message: 204, then 404 on retrieve and delete, gone from list, preview and search (SDK 5 messages.delete)", async () => {
      const chat = await newGroup(env);
      const keep = await sendSettled(env, chat.id, "this one stays");
      const word = unique("ephemeral");
      const doomed = await sendSettled(env, chat.id, `delete me ${word}`);
      expect(ids((await ok(env, `/v1/messages/search${qs({ query: word })}`)).items)).toEqual([doomed.id]);

      const result = await env.sdk.messages.delete(doomed.id, { chatID: chat.id });
      expect(result ?? null).toBeNull();
      await expectSdkError(env.sdk.messages.retrieve(doomed.id, { chatID: chat.id }), BeeperDesktop.NotFoundError, 404);
      expectError(await raw(env, messagePath(chat.id, doomed.id), { method: "DELETE" }), 404);
      expect(ids((await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items)).toEqual([keep.id]);
      expect((await ok(env, `/v1/messages/search${qs({ query: word })}`)).items).toEqual([]);
      const listed = (await allChats(env)).find((c) => c.id === chat.id)!;
      expect(listed.preview?.id).toBe(keep.id);
    });

    it("treats a deleted message as gone for edit, reactions, read markers and replies", async () => {
      const chat = await newGroup(env);
      await sendSettled(env, chat.id, "survivor");
      const gone = await sendSettled(env, chat.id, "soon gone");
      await env.sdk.messages.delete(gone.id, { chatID: chat.id });
      expectError(await raw(env, messagePath(chat.id, gone.id), { method: "PUT", json: { text: "zombie" } }), 404);
      expectError(
        await raw(env, `${messagePath(chat.id, gone.id)}/reactions`, { method: "POST", json: { reactionKey: "👍" } }),
        404,
      );
      expectError(await raw(env, `${chatPath(chat.id)}/read`, { method: "POST", json: { messageID: gone.id } }), 404);
      const reply = await raw(env, `${chatPath(chat.id)}/messages`, {
        method: "POST",
        json: { text: "to the void", replyToMessageID: gone.id },
      });
      expect([404, 422]).toContain(reply.status);
      expect((await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items.map((m) => m.text)).toEqual([
        "survivor",
      ]);
    });

    it("passes forEveryone through as a query flag, and 404s unknown messages and chats", async () => {
      const chat = await newGroup(env);
      const m = await sendSettled(env, chat.id, "for everyone");
      await env.sdk.messages.delete(m.id, { chatID: chat.id, forEveryone: true });
      expectError(await raw(env, messagePath(chat.id, m.id)), 404);
      await expectSdkError(env.sdk.messages.delete("999999.0", { chatID: chat.id }), BeeperDesktop.NotFoundError, 404);
      await expectSdkError(
        env.sdk.messages.delete("1.0", { chatID: "!doesnotexist:nowhere" }),
        BeeperDesktop.NotFoundError,
        404,
      );
    });
  });
}
