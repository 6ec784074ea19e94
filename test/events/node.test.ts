/**
 * The shared event suite on the Node daemon, plus what only the daemon has: the Origin check on upgrades, the
 * slow-consumer cut-off (close 4008) and keep-alive pings of adapters/node/websocket.ts.
 */
import { LIMITS } from "../../src/schema/limits.ts";
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listenApp } from "../../adapters/node/serve.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attachWebSockets, CLOSE_SLOW_CONSUMER, type WebSocketOptions } from "../../adapters/node/websocket.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { createApp } from "../../src/app.ts";
import { seedDataset } from "../../src/seed/dataset.ts";
import { ensureToken } from "../../src/services/tokens.ts";
import { Db } from "../../src/store/db.ts";
import { startNode, type NodeHarness } from "../harness/node.ts";
import { chatPath, randomToken, waitFor } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { connect, open, refusal, type Conn } from "./kit.ts";
import { eventSuite } from "./suite.ts";
import { resumeSuite } from "./resume.ts";

eventSuite("node", (options) => startNode(options));
resumeSuite("node", ({ maxEvents, ...options }) =>
  startNode({ ...options, eventLog: maxEvents ? { maxEvents } : undefined }),
);

/**
 * The daemon's app and WebSocket layer as adapters/node/serve.ts wires them, but with the WebSocket limits under the
 * test's control (the harness does not expose them). Only what differs from startServer is left out: the one-time
 * token print and the reminder timer.
 */
async function startTunedServer(token: string, ws: WebSocketOptions) {
  const dataDir = mkdtempSync(join(tmpdir(), "inboxd-events-"));
  const { storage, close } = await openSqliteStorage(join(dataDir, "inboxd.sqlite"));
  await ensureToken(storage, token, { name: "rw", scopes: ["read", "write"] });
  await seedDataset(await Db.open(storage), { chats: 6, messages: 60, accounts: 1, seed: 5 });
  const app = await createApp({ storage, allowedHosts: [] });
  const server = await listenApp(app, 0, "127.0.0.1");
  const node = server.node!.server! as Server;
  const sockets = attachWebSockets(node, app, ws);
  const address = node.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    url,
    sockets,
    async stop() {
      sockets.close();
      await server.close(true);
      await app.close();
      await close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The underlying TCP socket of a ws client (to stop reading from it, as a stuck consumer would). */
const tcp = (c: Conn) => (c.ws as unknown as { _socket: import("node:net").Socket })._socket;

describe("node only: upgrade checks", () => {
  let server: NodeHarness;
  const rw = randomToken("rw");
  beforeAll(async () => {
    server = await startNode({
      seed: { chats: 4, messages: 20, accounts: 1, seed: 2 },
      tokens: [{ token: rw, scopes: ["read", "write"] }],
    });
  });
  afterAll(() => server.stop());

  it("refuses a foreign Origin with 403 (cross-site WebSocket hijacking)", async () => {
    const r = await refusal(server.url, { token: rw, origin: "https://evil.example" });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({ code: expect.any(String) });
  });

  it("refuses Sec-Fetch-Site: cross-site with 403, also with the token in the subprotocol", async () => {
    expect((await refusal(server.url, { token: rw, headers: { "sec-fetch-site": "cross-site" } })).status).toBe(403);
    expect(
      (
        await refusal(server.url, {
          token: null,
          protocols: ["inboxd.v1", `bearer.${rw}`],
          origin: "https://evil.example",
        })
      ).status,
    ).toBe(403);
  });

  it("accepts a loopback Origin (a local page)", async () => {
    const c = await connect(server.url, rw, [], { origin: server.url });
    expect(c.frames[0]).toEqual({ type: "ready", version: 1, chatIDs: [] });
    c.close();
  });

  it("refuses a foreign Host with 403 (DNS rebinding)", async () => {
    expect((await refusal(server.url, { token: rw, headers: { host: "evil.example" } })).status).toBe(403);
  });
});

describe("node only: slow consumers", () => {
  const rw = randomToken("rw");

  /**
   * Sends big messages until the server has dropped the stalled connection (or `max` sends). Each send produces
   * a message.upserted and a chat.upserted whose preview repeats the text, so ~2 × textBytes per send.
   */
  async function flood(api: Api, chatID: string, textBytes: number, dropped: () => boolean, max: number) {
    const ids: string[] = [];
    for (let i = 0; i < max && !dropped(); i++) ids.push(await api.send(chatID, `${i} `.padEnd(textBytes, "x")));
    return ids;
  }

  /** Every sent message reached the reader, in seq order without gaps. */
  async function readerGotEverything(reader: Conn, chatID: string, ids: string[]) {
    for (const id of ids)
      await reader.event("message.upserted", chatID, { where: (e) => e.ids.includes(id), timeoutMs: 20_000 });
    const seqs = reader.events().map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i));
  }

  it("closes a connection that stops reading with 4008 while a reading one gets every event (256 KiB limit)", async () => {
    const server = await startTunedServer(rw, { maxBufferedBytes: 256 * 1024 });
    try {
      const api = new Api(server.url, rw);
      const [chat] = await api.quietChats((await api.get("/v1/accounts"))[0].accountID, 1);
      const stalled = await connect(server.url, rw, ["*"]);
      const reader = await connect(server.url, rw, ["*"]);
      expect(server.sockets.connections()).toBe(2);
      tcp(stalled).pause();
      // Sends of the longest text allowed (64 KiB): each makes ~64 KiB of events (the chat's preview is an excerpt).
      const ids = await flood(api, chat.id, LIMITS.textBytes, () => server.sockets.connections() < 2, 3000);
      expect(
        server.sockets.connections(),
        `still 2 connections after ${ids.length} sends of ~64 KiB of events each`,
      ).toBe(1);
      await readerGotEverything(reader, chat.id, ids);
      expect(reader.closed).toBeUndefined();
      // The stalled client reads what was queued, then the close frame.
      tcp(stalled).resume();
      const closed = await stalled.waitClosed(20_000);
      expect(closed.code).toBe(CLOSE_SLOW_CONSUMER);
      expect(closed.code).toBe(4008);
      // What it did get is a gapless prefix (at-most-once: nothing after the cut).
      const seqs = stalled.events().map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i));
      reader.close();
    } finally {
      await server.stop();
    }
  }, 120_000);

  it("does the same on the real daemon with its default 4 MiB limit", async () => {
    const server = await startNode({
      seed: { chats: 4, messages: 20, accounts: 1, seed: 3 },
      tokens: [{ token: rw, scopes: ["read", "write"] }],
    });
    try {
      const api = new Api(server.url, rw);
      const [chat] = await api.quietChats((await api.get("/v1/accounts"))[0].accountID, 1);
      const stalled = await connect(server.url, rw, ["*"]);
      const reader = await connect(server.url, rw, ["*"]);
      tcp(stalled).pause();
      // The harness does not expose the connection count: a stalled client cannot see its close frame either, so
      // resume it after the flood and look for 4008. 600 sends × ~64 KiB of events is far beyond 4 MiB + socket buffers.
      const ids = await flood(api, chat.id, LIMITS.textBytes, () => false, 600);
      tcp(stalled).resume();
      const closed = await stalled.waitClosed(60_000);
      expect(closed.code).toBe(4008);
      await readerGotEverything(reader, chat.id, ids);
      expect(reader.closed).toBeUndefined();
      reader.close();
    } finally {
      await server.stop();
    }
  }, 180_000);
});

describe("node only: keep-alive", () => {
  const rw = randomToken("rw");
  let server: Awaited<ReturnType<typeof startTunedServer>>;
  beforeAll(async () => {
    server = await startTunedServer(rw, { pingIntervalMs: 200 });
  });
  afterAll(() => server.stop());

  it("pings; a client that answers stays connected and keeps getting events", async () => {
    const c = await connect(server.url, rw, ["*"]);
    let pings = 0;
    c.ws.on("ping", () => pings++);
    await waitFor("three pings", () => pings >= 3, 5000);
    expect(c.closed).toBeUndefined();
    const api = new Api(server.url, rw);
    const [chat] = await api.quietChats((await api.get("/v1/accounts"))[0].accountID, 1);
    await api.ok("PATCH", chatPath(chat.id), { description: "still here" });
    await c.event("chat.upserted", chat.id);
    c.close();
  });

  it("drops a client that does not answer pings", async () => {
    const silent = await open(server.url, { token: rw, wsOptions: { autoPong: false } });
    const closed = await silent.waitClosed(5000);
    expect(closed.code).toBe(1006); // terminated, no close frame
  });
});

describe("node only: shutdown", () => {
  it("closes open connections with 1001 (going away) when the daemon stops", async () => {
    const rw = randomToken("rw");
    const server = await startTunedServer(rw, {});
    const c = await connect(server.url, rw, ["*"]);
    const closing = c.waitClosed(10_000);
    await server.stop();
    expect((await closing).code).toBe(1001);
  });
});
