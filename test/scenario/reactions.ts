/**
 * Reactions: add (transactionID echoed or generated), remove by path (SDK 5) and by query (spec), odd keys.
 */
import BeeperDesktop from "@beeper/desktop-api";
import { describe, expect, it } from "vitest";
import { expectError, expectSdkError } from "./assert.ts";
import type { Chat, Message } from "../../src/schema/wire.ts";
import { chatPath, messagePath } from "../kit/common.ts";
import { allChats, newGroup, ok, qs, raw, sendSettled, walk, type Env } from "./kit.ts";

export function reactionScenarios(env: Env) {
  const selfOf = (accountID: string) => env.accounts.find((a) => a.accountID === accountID)!.user.id;
  const allMessagesOf = async (chatID: string) => (await walk<Message>(env, `${chatPath(chatID)}/messages`)).items;

  describe("messages: reactions", () => {
    it("adds reactions (transactionID echoed or generated) and removes them by path and by query (SDK 5 reactions.add/delete)", async () => {
      const chat = await newGroup(env);
      const self = selfOf(chat.accountID);
      const m = await sendSettled(env, chat.id, "react to me");

      const added = await env.sdk.chats.messages.reactions.add(m.id, {
        chatID: chat.id,
        reactionKey: "🎉",
        transactionID: "txn-scenario-1",
      });
      expect(added).toEqual({
        success: true,
        chatID: chat.id,
        messageID: m.id,
        reactionKey: "🎉",
        transactionID: "txn-scenario-1",
      });
      const generated = await env.sdk.chats.messages.reactions.add(m.id, { chatID: chat.id, reactionKey: "❤️" });
      expect(generated.success).toBe(true);
      expect(typeof generated.transactionID).toBe("string");
      expect(generated.transactionID.length).toBeGreaterThan(0);

      let reactions = (await env.sdk.messages.retrieve(m.id, { chatID: chat.id })).reactions ?? [];
      expect(reactions.map((r) => r.reactionKey).sort()).toEqual(["❤️", "🎉"].sort());
      for (const r of reactions) {
        expect(r.participantID).toBe(self);
        // Several reactions per person are allowed here, so the ID is participantID followed by reactionKey.
        expect(r.id).toBe(`${self}${r.reactionKey}`);
      }

      const removed = await env.sdk.chats.messages.reactions.delete("🎉", { chatID: chat.id, messageID: m.id });
      expect(removed).toEqual({ success: true, chatID: chat.id, messageID: m.id, reactionKey: "🎉" });
      reactions = (await env.sdk.messages.retrieve(m.id, { chatID: chat.id })).reactions ?? [];
      expect(reactions.map((r) => r.reactionKey)).toEqual(["❤️"]);

      const byQuery = await raw(env, `${messagePath(chat.id, m.id)}/reactions${qs({ reactionKey: "❤️" })}`, {
        method: "DELETE",
      });
      expect(byQuery.status).toBe(200);
      expect(byQuery.body).toEqual({ success: true, chatID: chat.id, messageID: m.id, reactionKey: "❤️" });
      expect((await env.sdk.messages.retrieve(m.id, { chatID: chat.id })).reactions ?? []).toEqual([]);
    });

    it("round-trips reaction keys that need percent-encoding in the path", async () => {
      const chat = await newGroup(env);
      const m = await sendSettled(env, chat.id, "keys with odd characters");
      const keys = ["👍🏽", ":+1:", "party/parrot", "100%", "a b"];
      for (const reactionKey of keys) {
        const added = await env.sdk.chats.messages.reactions.add(m.id, { chatID: chat.id, reactionKey });
        expect(added.reactionKey).toBe(reactionKey);
      }
      const present = ((await env.sdk.messages.retrieve(m.id, { chatID: chat.id })).reactions ?? []).map(
        (r) => r.reactionKey,
      );
      expect(present.sort()).toEqual([...keys].sort());
      for (const reactionKey of keys) {
        const removed = await env.sdk.chats.messages.reactions.delete(reactionKey, {
          chatID: chat.id,
          messageID: m.id,
        });
        expect(removed.reactionKey).toBe(reactionKey);
      }
      expect((await env.sdk.messages.retrieve(m.id, { chatID: chat.id })).reactions ?? []).toEqual([]);
    });

    it("removes only one's own reaction when someone else reacted with the same key", async () => {
      // A seeded message that another participant reacted to.
      let target: { chat: Chat; m: Message; key: string } | undefined;
      for (const chat of await allChats(env)) {
        const self = selfOf(chat.accountID);
        for (const m of await allMessagesOf(chat.id)) {
          const r = m.reactions?.find((x) => x.participantID !== self);
          if (r) target = { chat, m, key: r.reactionKey };
          if (target) break;
        }
        if (target) break;
      }
      expect(target, "the seed has reactions by other people").toBeTruthy();
      const { chat, m, key } = target!;
      const self = selfOf(chat.accountID);
      const before = m.reactions!.filter((r) => r.participantID !== self);
      await env.sdk.chats.messages.reactions.add(m.id, { chatID: chat.id, reactionKey: key });
      const after = (await ok<Message>(env, messagePath(chat.id, m.id))).reactions ?? [];
      expect(after.filter((r) => r.reactionKey === key).map((r) => r.participantID)).toContain(self);
      expect(after.filter((r) => r.participantID !== self)).toEqual(before);
      await env.sdk.chats.messages.reactions.delete(key, { chatID: chat.id, messageID: m.id });
      const restored = (await ok<Message>(env, messagePath(chat.id, m.id))).reactions ?? [];
      expect(restored).toEqual(before);
    });

    it("refuses missing reaction keys and unknown messages and chats", async () => {
      const chat = await newGroup(env);
      const m = await sendSettled(env, chat.id, "no reactions here");
      const base = `${messagePath(chat.id, m.id)}/reactions`;
      expectError(await raw(env, base, { method: "POST", json: {} }), 400, ["body", "reactionKey"]);
      expectError(await raw(env, base, { method: "POST", json: { reactionKey: "" } }), 400, ["body", "reactionKey"]);
      expectError(await raw(env, base, { method: "POST", json: { reactionKey: "👍", transactionID: 7 } }), 400, [
        "body",
        "transactionID",
      ]);
      expectError(await raw(env, base, { method: "DELETE" }), 400, ["query", "reactionKey"]);
      expectError(await raw(env, `${base}?reactionKey=`, { method: "DELETE" }), 400, ["query", "reactionKey"]);
      await expectSdkError(
        env.sdk.chats.messages.reactions.add("999999.0", { chatID: chat.id, reactionKey: "👍" }),
        BeeperDesktop.NotFoundError,
        404,
      );
      await expectSdkError(
        env.sdk.chats.messages.reactions.delete("👍", { chatID: chat.id, messageID: "999999.0" }),
        BeeperDesktop.NotFoundError,
        404,
      );
      await expectSdkError(
        env.sdk.chats.messages.reactions.add("1.0", { chatID: "!doesnotexist:nowhere", reactionKey: "👍" }),
        BeeperDesktop.NotFoundError,
        404,
      );
      expect((await ok<Message>(env, messagePath(chat.id, m.id))).reactions ?? []).toEqual([]);
    });
  });
}
