/** The read-only tools and the resources, each compared with what REST answers for the same question. */
import { expect, it } from "vitest";
import type { Chat, Page } from "../../src/schema/wire.ts";
import { chatPath, enc } from "../kit/common.ts";
import { ok, type Message } from "./kit.ts";
import type { McpEnv } from "./suite.ts";

const UNTRUSTED_FENCE = /(`{3,})untrusted\n[\s\S]*?\n\1/;

export function readingTests(env: McpEnv) {
  const chats = async () => (await env.api.get<Page<Chat>>("/v1/chats")).items;

  it("get_accounts: the accounts REST lists", async () => {
    const { structured, text } = await ok(env.client, "get_accounts");
    expect(structured.items).toEqual(await env.api.get("/v1/accounts"));
    for (const a of structured.items) expect(text).toContain(a.accountID);
  });

  it("search_chats: the same chats as /v1/chats/search, paged with the cursor the text names", async () => {
    const first = await ok(env.client, "search_chats", { limit: 5 });
    const rest = await env.api.get<Page<Chat>>("/v1/chats/search?limit=5");
    expect(first.structured.items.map((c: Chat) => c.id)).toEqual(rest.items.map((c) => c.id));
    expect(first.structured.hasMore).toBe(true);
    expect(first.text).toContain(first.structured.oldestCursor);
    const second = await ok(env.client, "search_chats", {
      limit: 5,
      cursor: first.structured.oldestCursor,
      direction: "before",
    });
    const restSecond = await env.api.get<Page<Chat>>(
      `/v1/chats/search?limit=5&cursor=${enc(rest.oldestCursor!)}&direction=before`,
    );
    expect(second.structured.items.map((c: Chat) => c.id)).toEqual(restSecond.items.map((c) => c.id));
    // A participant's name typed as words finds the chat.
    const group = (await chats()).find((c) => c.type === "group")!;
    const person = group.participants.items.find((p) => !p.isSelf && p.fullName)!;
    const byName = await ok(env.client, "search_chats", {
      query: person.fullName!.toLowerCase(),
      scope: "participants",
    });
    expect(byName.structured.items.map((c: Chat) => c.id)).toContain(group.id);
    expect((await ok(env.client, "search_chats", { query: "qqqzzzxxx" })).text).toContain("No chat matches");
  });

  it("get_chat: the chat, participants capped at 20 by default", async () => {
    const chat = (await chats())[0];
    const { structured, text } = await ok(env.client, "get_chat", { chatID: chat.id });
    expect(structured).toMatchObject({ id: chat.id, title: chat.title, unreadCount: chat.unreadCount });
    expect(structured.participants.items.length).toBeLessThanOrEqual(20);
    expect(text).toContain(chat.id);
    const missing = await env.client.callTool({ name: "get_chat", arguments: { chatID: "!nope:nowhere" } });
    expect(missing.isError).toBe(true);
    expect((missing.content as { text: string }[])[0].text).toMatch(/404 NOT_FOUND/);
    const bad = await env.client.callTool({ name: "get_chat", arguments: { chatID: 42 } });
    expect(bad.isError).toBe(true);
    expect((bad.content as { text: string }[])[0].text).toMatch(/arguments\.chatID/);
  });

  it("list_messages: the page REST gives, oldest first in the text, other people's text fenced as untrusted", async () => {
    const chat = (await chats()).find((c) => c.type === "group")!;
    const rest = await env.api.get<Page<Message>>(`${chatPath(chat.id)}/messages`);
    const { structured, text } = await ok(env.client, "list_messages", { chatID: chat.id });
    expect(structured.items.map((m: Message) => m.id)).toEqual(rest.items.map((m) => m.id));
    const others = rest.items.find((m) => !m.isSender && m.text)!;
    expect(text).toMatch(UNTRUSTED_FENCE);
    expect(text).toContain(others.text!.slice(0, 30));
    expect(text.indexOf(rest.items.at(-1)!.id)).toBeLessThan(text.indexOf(rest.items[0].id));
    if (rest.hasMore) {
      const older = await ok(env.client, "list_messages", { chatID: chat.id, cursor: structured.oldestCursor });
      const restOlder = await env.api.get<Page<Message>>(
        `${chatPath(chat.id)}/messages?cursor=${enc(rest.oldestCursor!)}`,
      );
      expect(older.structured.items.map((m: Message) => m.id)).toEqual(restOlder.items.map((m) => m.id));
    }
  });

  it("list_messages: a message's ID as cursor pages next to that message, like its sortKey; another chat's message is an error that says so", async () => {
    const [chat, other] = (await chats()).filter((c) => c.type === "group");
    const middle = (await env.api.get<Page<Message>>(`${chatPath(chat.id)}/messages`)).items[10];
    for (const direction of ["before", "after"]) {
      const byID = await ok(env.client, "list_messages", { chatID: chat.id, cursor: middle.id, direction });
      const rest = await env.api.get<Page<Message>>(
        `${chatPath(chat.id)}/messages?cursor=${enc(middle.sortKey)}&direction=${direction}`,
      );
      expect(
        byID.structured.items.map((m: Message) => m.id),
        direction,
      ).toEqual(rest.items.map((m) => m.id));
      expect(byID.structured.items.map((m: Message) => m.id)).not.toContain(middle.id);
    }
    const foreign = (await env.api.get<Page<Message>>(`${chatPath(other.id)}/messages`)).items[0];
    const refused = await env.client.callTool({
      name: "list_messages",
      arguments: { chatID: chat.id, cursor: foreign.id },
    });
    expect(refused.isError).toBe(true);
    expect((refused.content as { text: string }[])[0].text).toMatch(/400 INVALID_REQUEST.*another chat/);
  });

  it("search_messages: literal words, the same hits as /v1/messages/search", async () => {
    const chat = (await chats())[env.lane + 2];
    const sample = (await env.api.get<Page<Message>>(`${chatPath(chat.id)}/messages`)).items.find(
      (m) => (m.text ?? "").split(" ").length > 3,
    )!;
    const word = sample.text!.split(/[^\p{L}]+/u).filter((w) => w.length > 5)[0] ?? sample.text!.split(" ")[0];
    const { structured, text } = await ok(env.client, "search_messages", { query: word, chatIDs: [chat.id] });
    const rest = await env.api.get(`/v1/messages/search?query=${enc(word)}&chatIDs=${enc(chat.id)}`);
    expect(structured.items.map((m: Message) => m.id)).toEqual(rest.items.map((m: Message) => m.id));
    expect(structured.items.map((m: Message) => m.id)).toContain(sample.id);
    expect(structured.chats[chat.id].id).toBe(chat.id);
    expect(text).toContain(sample.id);
    const none = await ok(env.client, "search_messages", { query: "qqqzzzxxx" });
    expect(none.structured.items).toEqual([]);
  });

  it("get_message and the 1,000-character cap: cut in lists and by default, whole with fullText", async () => {
    const chat = (await chats())[env.lane + 4];
    const long = `${"long message ".repeat(150)}end`;
    const { pendingMessageID } = await env.api.ok("POST", `${chatPath(chat.id)}/messages`, { text: long });
    const cut = await ok(env.client, "get_message", { chatID: chat.id, messageID: pendingMessageID });
    expect(cut.structured).toMatchObject({ id: pendingMessageID, textTruncated: true });
    expect(cut.structured.text).toHaveLength(1000);
    expect(cut.text).toContain("cut at 1000 characters");
    const whole = await ok(env.client, "get_message", { chatID: chat.id, messageID: pendingMessageID, fullText: true });
    expect(whole.structured.text).toBe(long);
    expect(whole.structured.textTruncated).toBeUndefined();
    const listed = await ok(env.client, "list_messages", { chatID: chat.id });
    expect(listed.structured.items[0]).toMatchObject({ id: pendingMessageID, textTruncated: true });
    expect(listed.text).not.toContain("end\n");
  });

  it("search: chats by title as typed, groups by participant, and messages, like /v1/search", async () => {
    const group = (await chats()).find((c) => c.type === "group")!;
    const person = group.participants.items.find((p) => !p.isSelf && p.fullName)!;
    const query = person.fullName!.split(" ")[0];
    const { structured, text } = await ok(env.client, "search", { query });
    const rest = await env.api.get(`/v1/search?query=${enc(query)}`);
    expect(structured.results.chats.map((c: Chat) => c.id)).toEqual(rest.results.chats.map((c: Chat) => c.id));
    expect(structured.results.in_groups.map((c: Chat) => c.id)).toContain(group.id);
    expect(structured.results.messages.items.map((m: Message) => m.id)).toEqual(
      rest.results.messages.items.map((m: Message) => m.id),
    );
    expect(text).toContain("## Groups with a matching participant");
    // Its message part pages on through search_messages, with the cursor its text names.
    const common = await ok(env.client, "search", { query: "the" });
    const cursor = common.structured.results.messages.oldestCursor;
    expect(common.structured.results.messages.hasMore).toBe(true);
    expect(common.text).toContain(`search_messages with query \`the\`, cursor \`${cursor}\``);
    const next = await ok(env.client, "search_messages", { query: "the", cursor, direction: "before" });
    const restNext = await env.api.get(`/v1/messages/search?query=the&cursor=${enc(cursor)}&direction=before`);
    expect(next.structured.items.map((m: Message) => m.id)).toEqual(restNext.items.map((m: Message) => m.id));
    expect(next.structured.items[0].id).not.toBe(common.structured.results.messages.items[0].id);
  });

  it("search_docs: operations of the served OpenAPI document and README sections, best first", async () => {
    const reminders = await ok(env.client, "search_docs", { query: "chat reminder", language: "http" });
    expect(reminders.structured.results[0].matched).toEqual(["chat", "reminder"]);
    expect(reminders.structured.results.map((r: { title: string }) => r.title)).toContain(
      "POST /v1/chats/{chatID}/reminders — Create a chat reminder",
    );
    const spec = await env.api.get("/v1/spec");
    expect(spec.paths["/v1/chats/{chatID}/reminders"].post.summary).toBe("Create a chat reminder");
    const ws = await ok(env.client, "search_docs", { query: "websocket subscriptions", detail: "verbose" });
    expect(
      ws.structured.results.some(
        (r: { source: string; text: string }) => r.source === "readme" && r.text.includes("subscriptions.set"),
      ),
    ).toBe(true);
    expect((await ok(env.client, "search_docs", { query: "qqqzzzxxx" })).structured.results).toEqual([]);
  });

  it("list_unread: the inbox's unread chats (as /v1/chats/search?unreadOnly) with their unread messages", async () => {
    const { structured, text } = await ok(env.client, "list_unread", { limit: 50 });
    const rest = await env.api.get<Page<Chat>>(
      "/v1/chats/search?unreadOnly=true&inbox=primary&includeMuted=false&limit=50",
    );
    expect(structured.items.map((i: { chat: Chat }) => i.chat.id)).toEqual(rest.items.map((c) => c.id));
    expect(rest.items.length).toBeGreaterThan(0);
    for (const { chat, messages } of structured.items as { chat: Chat; messages: Message[] }[]) {
      expect(messages.length).toBeGreaterThan(0);
      if (chat.unreadCount > 0) expect(messages.every((m) => m.isUnread)).toBe(true);
    }
    expect(text).toContain(rest.items[0].id);
  });

  it("resources: the unread overview and a chat's messages, by URI and by template", async () => {
    const { resources } = await env.client.listResources();
    expect(resources[0]).toMatchObject({ uri: "inboxd://unread", mimeType: "text/markdown" });
    const { resourceTemplates } = await env.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      "inboxd://chats/{chatID}/messages",
      "inboxd://assets/{assetID}",
    ]);
    const unread = await env.client.readResource({ uri: "inboxd://unread" });
    const firstUnread = (
      await env.api.get<Page<Chat>>("/v1/chats/search?unreadOnly=true&inbox=primary&includeMuted=false&limit=1")
    ).items[0];
    expect((unread.contents[0] as { text: string }).text).toContain(firstUnread.id);
    const chat = (await chats())[1];
    const uri = `inboxd://chats/${encodeURIComponent(chat.id)}/messages`;
    expect(resources.map((r) => r.uri)).toContain(uri);
    const newest = (await env.api.get<Page<Message>>(`${chatPath(chat.id)}/messages`)).items[0];
    expect((await env.client.readResource({ uri })).contents[0]).toMatchObject({
      uri,
      mimeType: "text/markdown",
      text: expect.stringContaining(newest.id),
    });
    await expect(env.client.readResource({ uri: "inboxd://chats/nope/messages" })).rejects.toThrow(/not found/i);
  });

  it("wait_for_message: times out quietly when nothing comes", async () => {
    const chat = (await chats()).find((c) => c.type === "group")!;
    const started = Date.now();
    const { structured, text } = await ok(env.client, "wait_for_message", { chatIDs: [chat.id], timeoutSeconds: 1 });
    expect(structured).toEqual({ message: null, timedOut: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(text).toContain("No new message");
  });
}
