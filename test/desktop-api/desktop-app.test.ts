/**
 * The desktop-api connector against an upstream that behaves as the desktop app's API does where it differs from
 * inboxd: no instance ID and no event log (GET /v1/events is 404, and `subscriptions.set` with `since` is refused, as
 * its document's additionalProperties: false says), and a send answers a pending ID that is not the message's: the
 * message comes as another ID, resolved through GET …/messages/{pendingMessageID}. The desktop app cannot run here, so
 * this one is an in-process server speaking those parts of its API; the inboxd under test is the real daemon.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDaemonRuntime } from "../harness/bridge-runtime.ts";
import { BRIDGE, Client, randomToken, type Runtime } from "./kit.ts";

const TOKEN = "app-token";
const ACCOUNT = "whatsapp";
const CHAT = "!chat:beeper.local";
const me = { id: "@me:beeper.local", fullName: "Me", isSelf: true };
const bob = { id: "@bob:beeper.local", fullName: "Bob" };

interface AppMessage {
  id: string;
  chatID: string;
  accountID: string;
  senderID: string;
  senderName?: string;
  timestamp: string;
  sortKey: string;
  type: "TEXT";
  text: string;
  isSender: boolean;
}

/** The app's state: one WhatsApp account with one chat, and what the connector asked of it. */
const messages: AppMessage[] = [];
const pending = new Map<string, string>(); // pending ID → message ID
const subscriptions: unknown[] = [];
const sockets = new Set<WebSocket>();
let counter = 0;

function message(text: string, from: typeof me | typeof bob, id = `$m${++counter}`): AppMessage {
  const m: AppMessage = {
    id,
    chatID: CHAT,
    accountID: ACCOUNT,
    senderID: from.id,
    senderName: from.fullName,
    timestamp: new Date(Date.now() + counter).toISOString(),
    sortKey: String(1000 + counter),
    type: "TEXT",
    text,
    isSender: from === me,
  };
  messages.push(m);
  return m;
}

function announce(m: AppMessage) {
  const frame = JSON.stringify({
    type: "message.upserted",
    seq: counter,
    ts: new Date().toISOString(),
    chatID: m.chatID,
    ids: [m.id],
    entries: [m],
  });
  for (const s of sockets) s.send(frame);
}

const chat = () => ({
  id: CHAT,
  accountID: ACCOUNT,
  network: "WhatsApp",
  title: "Bob",
  type: "single",
  participants: { items: [me, bob], hasMore: false, total: 2 },
  unreadCount: 0,
  isArchived: false,
  isMuted: false,
  isPinned: false,
});

async function body(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
}

function startApp(): Promise<Server> {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url!, "http://app");
    // Chat IDs arrive with `!` and `:` raw or escaped, as clients encode them: compared decoded.
    const path = decodeURIComponent(url.pathname);
    const json = (status: number, value: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    if (url.pathname === "/v1/info")
      return json(200, { app: { name: "Desktop", version: "4.2.0", bundle_id: "app" }, server: { status: "running" } });
    if (req.headers.authorization !== `Bearer ${TOKEN}`)
      return json(401, { code: "UNAUTHORIZED", message: "no token" });
    if (url.pathname === "/v1/accounts")
      return json(200, [
        {
          accountID: ACCOUNT,
          network: "WhatsApp",
          bridge: { id: "local-whatsapp", provider: "local", type: "whatsapp" },
          user: me,
        },
      ]);
    if (url.pathname === "/v1/chats")
      return json(200, { items: [chat()], hasMore: false, oldestCursor: null, newestCursor: null });
    if (path === `/v1/chats/${CHAT}`) return json(200, chat());
    const single = path.startsWith(`/v1/chats/${CHAT}/messages/`)
      ? path.slice(`/v1/chats/${CHAT}/messages/`.length)
      : undefined;
    if (single && req.method === "GET") {
      const id = pending.get(single) ?? single;
      const found = messages.find((m) => m.id === id);
      return found ? json(200, found) : json(404, { code: "NOT_FOUND", message: "no such message" });
    }
    if (path === `/v1/chats/${CHAT}/messages` && req.method === "POST") {
      const { text } = await body(req);
      const pendingID = `p${++counter}`;
      // The network takes it: the message has its own ID, and arrives over the WebSocket before the send answers.
      const sent = message(text, me);
      pending.set(pendingID, sent.id);
      announce(sent);
      await new Promise((r) => setTimeout(r, 20));
      json(200, { chatID: CHAT, pendingMessageID: pendingID });
      // Bob answers.
      setTimeout(() => announce(message(`bob: ${text}`, bob)), 10);
      return;
    }
    if (path.startsWith(`/v1/chats/${CHAT}/messages/`) && path.endsWith("/reactions") && req.method === "POST")
      return json(422, {
        code: "NOT_SUPPORTED",
        message: "WhatsApp allows one reaction per message, and it is already there",
      });
    if (path === `/v1/chats/${CHAT}/messages`) {
      const newestFirst = [...messages].reverse();
      const cursor = url.searchParams.get("cursor");
      const from = cursor ? newestFirst.findIndex((m) => m.id === cursor) + 1 : 0;
      const items = newestFirst.slice(from, from + 20);
      return json(200, {
        items,
        hasMore: from + 20 < newestFirst.length,
        oldestCursor: items.at(-1)?.id ?? null,
        newestCursor: items[0]?.id ?? null,
      });
    }
    json(404, { code: "NOT_FOUND", message: `no route for ${req.method} ${url.pathname}` });
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req, socket, head) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on("close", () => sockets.delete(ws));
      ws.send(JSON.stringify({ type: "ready", version: 1, chatIDs: [] }));
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data));
        subscriptions.push(frame);
        if ("since" in frame)
          return ws.send(JSON.stringify({ type: "error", code: "INVALID_PAYLOAD", message: "unknown property since" }));
        ws.send(JSON.stringify({ type: "subscriptions.updated", chatIDs: frame.chatIDs }));
      });
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

describe("desktop-api connector against an upstream without an event log (as the desktop app's API)", () => {
  let app: Server;
  let appURL: string;
  let runtime: Runtime;
  let api: Client;
  let accountID: string;
  let chatID: string;
  const texts = async () => (await api.messages(chatID)).map((m) => m.text);

  beforeAll(async () => {
    for (let i = 1; i <= 30; i++) message(`old ${i}`, i % 3 ? bob : me);
    app = await startApp();
    appURL = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    runtime = await startDaemonRuntime(randomToken(), { desktopApiFirstBackfill: 10 });
    api = new Client(runtime);
  });

  afterAll(async () => {
    await runtime?.stop();
    for (const s of sockets) s.terminate();
    await new Promise((r) => app?.close(r));
  });

  it("signs in without an instance ID, loads the chat, and pages its older messages", async () => {
    const session = await api.login({ baseURL: appURL, accessToken: TOKEN }, undefined, {
      bridgeID: BRIDGE,
      flowID: "token",
    });
    expect(session.status).toBe("complete");
    accountID = session.accountID;
    const account = await api.accountStatus(accountID, "connected");
    expect(account).toMatchObject({
      network: "WhatsApp",
      bridge: { id: BRIDGE, provider: "self-hosted", type: "whatsapp" },
      via: { accountID: ACCOUNT, servers: [] },
    });
    chatID = (await api.chatTitled(accountID, "Bob")).id;
    expect(await texts()).toEqual([...messages].reverse().map((m) => m.text));
    // With no event log to resume from (GET /v1/events is 404 here), it subscribes without `since`.
    expect(subscriptions).toEqual([{ type: "subscriptions.set", chatIDs: ["*"] }]);
  });

  it("sends: the pending ID resolves to the message's own, which arrived first, and is stored once", async () => {
    const before = (await texts()).length;
    const sent = await api.sdk.messages.send(chatID, { text: "hi bob" });
    await api.messageWith(chatID, (m) => m.text === "bob: hi bob", "Bob's answer");
    const all = await texts();
    expect(all.filter((t) => t === "hi bob")).toHaveLength(1);
    expect(all.length).toBe(before + 2);
    const mine = await api.sdk.messages.retrieve(sent.pendingMessageID, { chatID });
    expect(mine.sendStatus).toMatchObject({ status: "SUCCESS" });
  });

  it("refuses what the upstream refuses, with the upstream's reason", async () => {
    const [newest] = await api.messages(chatID);
    const refused = await api.raw(
      "POST",
      `/v1/chats/${encodeURIComponent(chatID)}/messages/${encodeURIComponent(newest!.id)}/reactions`,
      { reactionKey: "👍" },
    );
    expect(refused.status).toBe(422);
    expect(refused.body.message).toContain("WhatsApp allows one reaction per message, and it is already there");
    expect((await api.messages(chatID))[0]!.reactions ?? []).toEqual([]);
  });

  it("after the app drops the connection, reloads the chat (no resume there) and doubles nothing", async () => {
    for (const s of sockets) s.terminate();
    message("while reconnecting", bob);
    await api.messageWith(chatID, (m) => m.text === "while reconnecting", "the message the reload brings", 20_000);
    expect(await texts()).toEqual([...messages].reverse().map((m) => m.text));
  });
});
