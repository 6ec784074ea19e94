/**
 * GET /v1/search (SDK 5.0.0 `client.search`): chats by title, groups by participant name, and the first page of
 * message search, in one answer. Names are found as people type them: the start of each word is enough.
 * POST /v1/focus (`client.focus`): checks what it names and answers success (its event: test/events).
 */
import { describe, expect, it } from "vitest";
import { expectError } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { enc } from "../kit/common.ts";
import { allChats, ids, ok, raw, type Env } from "./kit.ts";

interface Unified {
  results: { chats: Chat[]; in_groups: Chat[]; messages: Page<Message> & { chats: Record<string, Chat> } };
}

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
const startsEveryWord = (query: string, haystack: string) =>
  words(query).every((q) => words(haystack).some((w) => w.startsWith(q)));

export function unifiedSearchScenarios(env: Env) {
  describe("unified search (GET /v1/search)", () => {
    /** A seeded group member with a two-word name, and the groups and direct chat that have them. */
    async function someone() {
      const chats = await allChats(env);
      const groups = chats.filter((c) => c.type === "group");
      for (const group of groups) {
        const person = group.participants?.items?.find((p) => !p.isSelf && p.fullName?.trim().includes(" "));
        if (!person) continue;
        const hasThem = (c: Chat) => c.type === "group" && !!c.participants?.items?.some((p) => p.id === person.id);
        return { person, groups: groups.filter(hasThem), chats };
      }
      throw new Error("no seeded group has a member with a two-word name");
    }

    it("finds a person's groups by their name as typed (whole words or their starts), and chats by title", async () => {
      const { person, groups } = await someone();
      const [first, last] = person.fullName!.toLowerCase().split(/\s+/);
      for (const query of [
        `${first} ${last}`,
        `${first.slice(0, 3)} ${last.slice(0, 3)}`,
        person.fullName!.toUpperCase(),
      ]) {
        const answer = await ok<Unified>(env, `/v1/search?query=${enc(query)}`);
        const inGroups = answer.results.in_groups;
        for (const group of groups.slice(0, 20)) expect(ids(inGroups), `${query}: ${group.title}`).toContain(group.id);
        for (const chat of inGroups) {
          expect(chat.type).toBe("group");
          expect(
            chat.participants!.items.some((p) => startsEveryWord(query, `${p.fullName ?? ""} ${p.username ?? ""}`)),
            chat.title,
          ).toBe(true);
        }
        for (const chat of answer.results.chats)
          expect(startsEveryWord(query, `${chat.title} ${chat.network ?? ""}`), chat.title).toBe(true);
      }
    });

    it("answers in the SDK 5.0.0 shape, with the first page of message search as messages", async () => {
      const query = "coffee";
      const answer = (await env.sdk.search({ query })) as unknown as Unified;
      expect(Object.keys(answer.results).sort()).toEqual(["chats", "in_groups", "messages"]);
      const page = await ok<Page<Message>>(env, `/v1/messages/search?query=${query}`);
      expect(ids(answer.results.messages.items)).toEqual(ids(page.items));
      expect(answer.results.messages.hasMore).toBe(page.hasMore);
      for (const m of answer.results.messages.items)
        expect(answer.results.messages.chats[m.chatID], m.chatID).toBeTruthy();
    });

    it("finds a chat by the start of its title; nothing for words no chat has", async () => {
      const chat = (await allChats(env)).find((c) => words(c.title).length > 0 && words(c.title)[0].length >= 4)!;
      const prefix = words(chat.title)[0].slice(0, 4);
      expect(ids((await ok<Unified>(env, `/v1/search?query=${enc(prefix)}`)).results.chats)).toContain(chat.id);
      const none = await ok<Unified>(env, "/v1/search?query=zzqxjvnonexistent");
      expect(none.results).toMatchObject({ chats: [], in_groups: [], messages: { items: [], hasMore: false } });
    });

    it("requires a query of at least one character", async () => {
      expectError(await raw(env, "/v1/search"), 400, ["query", "query"]);
      expectError(await raw(env, "/v1/search?query=%20"), 400, ["query", "query"]);
    });
  });

  describe("focus (POST /v1/focus)", () => {
    it("answers success for nothing, a chat, or a chat and message; 404 for unknown ones; messageID needs chatID", async () => {
      const chat = (await allChats(env)).find((c) => c.preview)!;
      expect(await env.sdk.focus()).toEqual({ success: true });
      expect(await env.sdk.focus({ chatID: chat.id, draftText: "draft" })).toEqual({ success: true });
      const message = (await ok<Page<Message>>(env, `/v1/chats/${enc(chat.id)}/messages`)).items[0];
      expect(await ok(env, "/v1/focus", { method: "POST", json: { chatID: chat.id, messageID: message.id } })).toEqual({
        success: true,
      });
      expectError(await raw(env, "/v1/focus", { method: "POST", json: { chatID: "no-such-chat" } }), 404);
      expectError(
        await raw(env, "/v1/focus", { method: "POST", json: { chatID: chat.id, messageID: "no-such-message" } }),
        404,
      );
      expectError(await raw(env, "/v1/focus", { method: "POST", json: { messageID: message.id } }), 400, [
        "body",
        "chatID",
      ]);
      expect((await raw(env, "/v1/focus", { method: "POST", token: env.ro, json: {} })).status).toBe(403);
    });
  });
}
