/**
 * The deprecated /v0 generation (src/v0): every endpoint round-tripped against the seeded data the way a v0 client
 * calls it (GET with a query, POST with a JSON body), its effect checked through /v1, its limits and defaults, the
 * v0 error body on every failure and the Deprecation/Link headers on every answer.
 */
import { describe, expect, it } from "vitest";
import type { Chat, Message, Page, User } from "../../src/schema/wire.ts";
import { chatPath, enc, messagePath } from "../kit/common.ts";
import type { Answer } from "../kit/http.ts";
import { allChats, client, contactsOf, ids, ok, qs, raw, type Env } from "./kit.ts";

type V0Message = Message & { messageID: string };
type V0Chat = Omit<Chat, "preview"> & { preview?: V0Message };
interface V0SearchPage extends Page<V0Message> {
  chats: Record<string, V0Chat>;
}

/** Every /v0 answer is marked deprecated (RFC 9745) and links to what replaced it. */
function expectDeprecated(res: Answer, successor: string, method?: string) {
  expect(res.headers.get("deprecation"), res.text).toMatch(/^@\d+$/);
  const link = res.headers.get("link") ?? "";
  expect(link, res.text).toContain(`<${successor}>; rel="successor-version"`);
  if (method) expect(link).toContain(`title="${method} `);
}

/** The v0 error body `{error, code?, details?}` (details: place → message, all strings), with the deprecation headers. */
function expectV0Error(res: Answer, status: number, place?: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
  expect(res.headers.get("x-beeper-desktop-version")).toBeTruthy();
  expect(res.headers.get("deprecation")).toMatch(/^@\d+$/);
  expect(res.headers.get("link")).toContain('rel="successor-version"');
  const body = res.body as { error: string; code?: string; details?: Record<string, unknown> };
  expect(
    Object.keys(body).filter((k) => !["error", "code", "details"].includes(k)),
    res.text,
  ).toEqual([]);
  expect(typeof body.error).toBe("string");
  expect(body.error.length).toBeGreaterThan(0);
  if (body.code !== undefined) expect(typeof body.code).toBe("string");
  for (const value of Object.values(body.details ?? {})) expect(typeof value).toBe("string");
  if (place) expect(Object.keys(body.details ?? {}), res.text).toContain(place);
  return body;
}

const post = (env: Env, name: string, json: unknown, token?: string) =>
  raw(env, `/v0/${name}`, { method: "POST", json, token });

/** A /v0 chat is the /v1 chat plus what v0 adds; its preview message also carries messageID. */
function expectSameChat(v0: V0Chat, v1: Chat) {
  const { preview, ...rest } = v0;
  const { preview: v1Preview, ...v1Rest } = v1;
  expect(rest).toEqual(v1Rest);
  expect(preview && { ...preview, messageID: undefined }).toEqual(v1Preview && { ...v1Preview, messageID: undefined });
  if (preview) expect(preview.messageID).toBe(preview.id);
}

export function v0Scenarios(env: Env) {
  describe("/v0: reading", () => {
    it("get-accounts lists every account as {accountID, network, user}", async () => {
      const res = await raw<{ accountID: string; network: string; user: User }[]>(env, "/v0/get-accounts", {
        token: env.ro,
      });
      expect(res.status).toBe(200);
      expectDeprecated(res, "/v1/accounts", "GET");
      expect(res.body.map((a) => a.accountID)).toEqual(env.accounts.map((a) => a.accountID));
      for (const [i, account] of res.body.entries()) {
        expect(Object.keys(account).sort()).toEqual(["accountID", "network", "user"]);
        expect(account.network).toBe(env.accounts[i].network);
        expect(account.user).toEqual(env.accounts[i].user);
      }
    });

    it("get-chat answers the v0 Chat, 20 participants unless asked otherwise, by ID or localChatID", async () => {
      const accountID = env.accounts[0].accountID;
      const participantIDs = (await contactsOf(env, accountID)).slice(0, 25).map((u) => u.id);
      const created = await post(env, "create-chat", {
        accountID,
        type: "group",
        participantIDs,
        title: "v0 big group",
      });
      expect(created.status, created.text).toBe(200);
      const { chatID } = created.body as { chatID: string };

      const res = await raw<V0Chat>(env, `/v0/get-chat${qs({ chatID })}`);
      expectDeprecated(res, chatPath(chatID), "GET");
      expect(res.body.participants).toMatchObject({ hasMore: true, total: 26 });
      expect(res.body.participants.items).toHaveLength(20);
      expectSameChat(res.body, await ok<Chat>(env, `${chatPath(chatID)}?maxParticipantCount=20`));

      const all = await ok<V0Chat>(
        env,
        `/v0/get-chat${qs({ chatID: res.body.localChatID!, maxParticipantCount: -1 })}`,
      );
      expect(all.id).toBe(chatID);
      expect(all.participants).toMatchObject({ hasMore: false, total: 26 });
      expect(all.participants.items).toHaveLength(26);
      // A null (`key=` on the wire) is the default, as is leaving it out.
      expect(
        (await ok<V0Chat>(env, `/v0/get-chat?chatID=${enc(chatID)}&maxParticipantCount=`)).participants.items,
      ).toHaveLength(20);
      expect(
        (await ok<V0Chat>(env, `/v0/get-chat${qs({ chatID, maxParticipantCount: 0 })}`)).participants.items,
      ).toHaveLength(0);

      expectV0Error(
        await raw(env, `/v0/get-chat${qs({ chatID, maxParticipantCount: 501 })}`),
        400,
        "query.maxParticipantCount",
      );
      expectV0Error(
        await raw(env, `/v0/get-chat${qs({ chatID, maxParticipantCount: -2 })}`),
        400,
        "query.maxParticipantCount",
      );
      expectV0Error(await raw(env, "/v0/get-chat"), 400, "query.chatID");
      const missing = await raw(env, "/v0/get-chat?chatID=no-such-chat");
      expect(expectV0Error(missing, 404).code).toBe("NOT_FOUND");
      expectDeprecated(missing, "/v1/chats/no-such-chat");
    });

    it("search-chats pages like /v1 chat search (same items and cursors); nullable booleans as null or absent", async () => {
      const params = { type: "group", limit: 7 };
      const first = await raw<Page<V0Chat>>(env, `/v0/search-chats${qs(params)}`);
      expectDeprecated(first, "/v1/chats/search", "GET");
      const v1 = await ok<Page<Chat>>(env, `/v1/chats/search${qs(params)}`);
      expect(ids(first.body.items)).toEqual(ids(v1.items));
      expect(first.body.oldestCursor).toBe(v1.oldestCursor);
      first.body.items.forEach((chat, i) => expectSameChat(chat, v1.items[i]));

      const next = await ok<Page<V0Chat>>(env, `/v0/search-chats${qs({ ...params, cursor: first.body.oldestCursor })}`);
      const v1Next = await ok<Page<Chat>>(env, `/v1/chats/search${qs({ ...params, cursor: v1.oldestCursor })}`);
      expect(ids(next.items)).toEqual(ids(v1Next.items));

      const absent = await ok<Page<V0Chat>>(env, `/v0/search-chats${qs(params)}`);
      const nulls = await ok<Page<V0Chat>>(env, `/v0/search-chats${qs(params)}&includeMuted=&unreadOnly=`);
      expect(ids(nulls.items)).toEqual(ids(absent.items));
      const unmuted = await ok<Page<V0Chat>>(
        env,
        `/v0/search-chats${qs({ ...params, includeMuted: false, unreadOnly: true })}`,
      );
      expect(ids(unmuted.items)).toEqual(
        ids(
          (await ok<Page<Chat>>(env, `/v1/chats/search${qs({ ...params, includeMuted: false, unreadOnly: true })}`))
            .items,
        ),
      );
      expectV0Error(await raw(env, "/v0/search-chats?includeMuted=maybe"), 400, "query.includeMuted");
    });

    it("search-messages takes limit 1–500 (default 20) but answers pages of at most 20, in v0 Messages", async () => {
      const byDefault = await raw<V0SearchPage>(env, "/v0/search-messages");
      expectDeprecated(byDefault, "/v1/messages/search", "GET");
      expect(byDefault.body.items).toHaveLength(20);
      expect(byDefault.body.hasMore).toBe(true);
      const most = await ok<V0SearchPage>(env, "/v0/search-messages?limit=500");
      expect(ids(most.items)).toEqual(ids(byDefault.body.items));
      expect((await ok<V0SearchPage>(env, "/v0/search-messages?limit=1")).items).toHaveLength(1);
      expectV0Error(await raw(env, "/v0/search-messages?limit=0"), 400, "query.limit");
      expectV0Error(await raw(env, "/v0/search-messages?limit=501"), 400, "query.limit");

      const params = { query: "the", sender: "me", limit: 500 };
      const mine = await ok<V0SearchPage>(env, `/v0/search-messages${qs(params)}&excludeLowPriority=&includeMuted=`);
      const v1 = await ok<Page<Message> & { chats: Record<string, Chat> }>(env, `/v1/messages/search${qs(params)}`);
      expect(mine.items.length).toBeGreaterThan(0);
      expect(ids(mine.items)).toEqual(ids(v1.items));
      for (const [i, message] of mine.items.entries()) {
        expect(message.isSender).toBe(true);
        expect(message).toEqual({ ...v1.items[i], messageID: v1.items[i].id });
        expectSameChat(mine.chats[message.chatID], v1.chats[message.chatID]);
      }
      const older = await ok<V0SearchPage>(env, `/v0/search-messages${qs({ ...params, cursor: mine.oldestCursor })}`);
      expect(ids(older.items)).toEqual(
        ids((await ok<Page<Message>>(env, `/v1/messages/search${qs({ ...params, cursor: v1.oldestCursor })}`)).items),
      );
    });

    it("search answers the unified search with v0 chats and messages; query is required", async () => {
      const res = await raw<{ results: { chats: V0Chat[]; in_groups: V0Chat[]; messages: V0SearchPage } }>(
        env,
        "/v0/search?query=coffee",
      );
      expectDeprecated(res, "/v1/search", "GET");
      const v1 = await ok<{ results: { chats: Chat[]; in_groups: Chat[]; messages: Page<Message> } }>(
        env,
        "/v1/search?query=coffee",
      );
      expect(ids(res.body.results.chats)).toEqual(ids(v1.results.chats));
      expect(ids(res.body.results.in_groups)).toEqual(ids(v1.results.in_groups));
      expect(ids(res.body.results.messages.items)).toEqual(ids(v1.results.messages.items));
      for (const m of res.body.results.messages.items) expect(m.messageID).toBe(m.id);
      expectV0Error(await raw(env, "/v0/search"), 400, "query.query");
    });

    it("search-users answers the account's matching contacts as {items}", async () => {
      const accountID = env.accounts[1].accountID;
      const someone = (await contactsOf(env, accountID))[3];
      const query = someone.fullName!.split(" ")[0];
      const res = await raw<{ items: User[] }>(env, `/v0/search-users${qs({ accountID, query })}`);
      expectDeprecated(res, `/v1/accounts/${enc(accountID)}/contacts`, "GET");
      expect(res.body).toEqual(await ok(env, `/v1/accounts/${enc(accountID)}/contacts${qs({ query })}`));
      expect(ids(res.body.items)).toContain(someone.id);
      expectV0Error(await raw(env, `/v0/search-users${qs({ query })}`), 400, "query.accountID");
      expectV0Error(await raw(env, `/v0/search-users${qs({ accountID: "no-such-account", query })}`), 404);
    });
  });

  describe("/v0: actions", () => {
    it("create-chat, send-message, archive-chat and reminders act as their /v1 successors do", async () => {
      const accountID = env.accounts[0].accountID;
      const participantIDs = (await contactsOf(env, accountID)).slice(2, 4).map((u) => u.id);
      const created = await post(env, "create-chat", { accountID, type: "group", participantIDs, title: "v0 created" });
      expectDeprecated(created, "/v1/chats", "POST");
      expect(created.body).toEqual({ success: true, chatID: expect.any(String) });
      const { chatID } = created.body as { chatID: string };
      expect(await ok<Chat>(env, chatPath(chatID))).toMatchObject({ title: "v0 created", type: "group", accountID });

      const sent = await post(env, "send-message", { chatID, text: "sent through v0" });
      expectDeprecated(sent, `${chatPath(chatID)}/messages`, "POST");
      expect(sent.body).toEqual({ success: true, chatID, pendingMessageID: expect.any(String) });
      const message = await client(env).settled(chatID, (sent.body as { pendingMessageID: string }).pendingMessageID);
      expect(message).toMatchObject({ text: "sent through v0", isSender: true });

      const archived = await post(env, "archive-chat", { chatID });
      expect(archived.body).toEqual({ success: true });
      expectDeprecated(archived, `${chatPath(chatID)}/archive`, "POST");
      expect((await ok<Chat>(env, chatPath(chatID))).isArchived).toBe(true);
      // By localChatID too, and `archived: false` moves it back.
      const { localChatID } = await ok<Chat>(env, chatPath(chatID));
      expect((await post(env, "archive-chat", { chatID: localChatID, archived: false })).body).toEqual({
        success: true,
      });
      expect((await ok<Chat>(env, chatPath(chatID))).isArchived).toBe(false);

      const remindAtMs = Date.parse("2031-02-03T04:05:06.000Z");
      const set = await post(env, "set-chat-reminder", {
        chatID,
        reminder: { remindAtMs, dismissOnIncomingMessage: true },
      });
      expect(set.body).toEqual({ success: true });
      expectDeprecated(set, `${chatPath(chatID)}/reminders`, "POST");
      expect((await ok<Chat>(env, chatPath(chatID))).reminder).toMatchObject({
        remindAtMs,
        dismissOnIncomingMessage: true,
      });
      const cleared = await post(env, "clear-chat-reminder", { chatID });
      expect(cleared.body).toEqual({ success: true });
      expectDeprecated(cleared, `${chatPath(chatID)}/reminders`, "DELETE");
      expect((await ok<Chat>(env, chatPath(chatID))).reminder ?? null).toBeNull();

      expectV0Error(await post(env, "set-chat-reminder", { chatID, reminder: {} }), 400, "body.reminder");
      expectV0Error(await post(env, "send-message", { chatID: "no-such-chat", text: "x" }), 404);
      expectV0Error(await post(env, "create-chat", { accountID, type: "group" }), 400, "body.participantIDs");
    });

    it("send-message takes an upload; download-asset answers a srcURL that /v1/assets/serve serves", async () => {
      const chat = (await allChats(env)).find((c) => c.type === "single")!;
      const bytes = Buffer.from("v0 attachment bytes\n");
      const upload = await ok<{ uploadID: string }>(env, "/v1/assets/upload/base64", {
        method: "POST",
        json: { content: bytes.toString("base64"), fileName: "v0.txt", mimeType: "text/plain" },
      });
      const sent = await post(env, "send-message", { chatID: chat.id, attachment: { uploadID: upload.uploadID } });
      expect(sent.status, sent.text).toBe(200);
      const message = await ok<Message>(
        env,
        messagePath(chat.id, (sent.body as { pendingMessageID: string }).pendingMessageID),
      );
      const url = message.attachments![0].id!;

      const downloaded = await post(env, "download-asset", { url });
      expectDeprecated(downloaded, "/v1/assets/download", "POST");
      expect(downloaded.body).toEqual({ success: true, srcURL: expect.any(String) });
      const served = await fetch(
        `${env.url}/v1/assets/serve${qs({ url: (downloaded.body as { srcURL: string }).srcURL })}`,
        {
          headers: { authorization: `Bearer ${env.rw}` },
        },
      );
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer())).toEqual(bytes);

      expectV0Error(await post(env, "download-asset", { url: "mxc://inboxd/nosuchasset" }), 404);
      expectV0Error(await post(env, "download-asset", {}), 400, "body.url");
    });

    it("open-app answers success for nothing, a chat, or a chat and message; 404 for unknown ones", async () => {
      const chat = (await allChats(env)).find((c) => c.preview)!;
      const opened = await post(env, "open-app", {});
      expectDeprecated(opened, "/v1/focus", "POST");
      expect(opened.body).toEqual({ success: true });
      expect(
        (await post(env, "open-app", { chatID: chat.id, messageID: chat.preview!.id, draftText: "hi" })).body,
      ).toEqual({ success: true });
      expectV0Error(await post(env, "open-app", { chatID: "no-such-chat" }), 404);
    });
  });

  describe("/v0: failures", () => {
    const actions = [
      "open-app",
      "download-asset",
      "create-chat",
      "archive-chat",
      "set-chat-reminder",
      "clear-chat-reminder",
      "send-message",
    ];

    it("refuses every action to a read-only token (403) and every endpoint without a valid token (401), in the v0 body", async () => {
      const chat = (await allChats(env))[0];
      for (const name of actions) {
        const res = await post(env, name, { chatID: chat.id }, env.ro);
        expect(expectV0Error(res, 403).code, name).toBe("FORBIDDEN");
        expect((await ok<Chat>(env, chatPath(chat.id))).isArchived).toBe(chat.isArchived);
      }
      for (const path of ["/v0/get-accounts", `/v0/get-chat${qs({ chatID: chat.id })}`]) {
        const res = await raw(env, path, { token: null });
        expect(expectV0Error(res, 401).code).toBe("UNAUTHORIZED");
        expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
        expectV0Error(await raw(env, path, { token: "not-a-token" }), 401);
      }
    });

    it("answers broken bodies, unknown paths and wrong methods in the v0 body, still pointing to /v1", async () => {
      expectV0Error(
        await raw(env, "/v0/archive-chat", {
          method: "POST",
          body: "{not json",
          headers: { "content-type": "application/json" },
        }),
        400,
        "body",
      );
      expectV0Error(await post(env, "archive-chat", {}), 400, "body.chatID");
      expectV0Error(await post(env, "archive-chat", { chatID: "x", archived: "yes" }), 400, "body.archived");
      const unknown = await raw(env, "/v0/no-such-endpoint");
      expect(expectV0Error(unknown, 404).code).toBe("NOT_FOUND");
      expectDeprecated(unknown, "/v1/spec");
      const wrongMethod = await raw(env, "/v0/send-message");
      expectV0Error(wrongMethod, 405);
      expect(wrongMethod.headers.get("allow")).toBe("POST");
      expectDeprecated(wrongMethod, "/v1/chats/%7BchatID%7D/messages", "POST");
    });
  });
}
