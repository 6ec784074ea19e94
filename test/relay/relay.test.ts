/**
 * The relay (issue 18, part 2): the Worker in relay mode, run by workerd through Miniflare, and the real daemon
 * (`inboxd serve --relay URL` as a child process) dialing out to it. Remote clients talk to the Worker only: the
 * official SDK, a /v1/ws client, an MCP client running OAuth, an event stream. Then the daemon is killed (503 as
 * soon as the relay sees its connection close) and started again (200 once it has dialed back in), and a wrong
 * pairing secret is refused without being logged. The per-address rate limit is checked on a relay of its own, with
 * a budget so low that no refill comes while the test runs.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareDataDir } from "../harness/node.ts";
import { killAll, type ServingProcess } from "../harness/process.ts";
import { connected, serveRelayed } from "./kit.ts";
import { startWorkerd, type WorkerdServer } from "../harness/workerd.ts";
import { connect } from "../events/kit.ts";
import { HEARTBEAT_TIMEOUT_MS } from "../../src/relay/protocol.ts";
import { liveEvents, mcpOAuth, sdkRoundTrip } from "../remote/kit.ts";

const SECRET = randomBytes(24).toString("base64url");
const token = `inbx_${randomBytes(24).toString("base64url")}`;
const readOnly = `inbx_${randomBytes(24).toString("base64url")}`;
const MAX_BODY = 2 * 1024 * 1024;

let relay: WorkerdServer;
let dataDir: string;
let daemon: ServingProcess | undefined;
const relayLogs: { level: string; message: string }[] = [];

const serve = (secret = SECRET, to = { relay: relay.url, dataDir }) => serveRelayed(secret, to);
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${relay.url}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });

beforeAll(async () => {
  relay = await startWorkerd({
    vars: { INBOXD_MODE: "relay", INBOXD_RELAY_SECRET: SECRET, INBOXD_RELAY_MAX_BODY_BYTES: String(MAX_BODY) },
    onLog: (log) => void relayLogs.push(log),
  });
  dataDir = await prepareDataDir({
    seed: { chats: 8, messages: 80, accounts: 1, seed: 21 },
    tokens: [
      { token, scopes: ["read", "write"] },
      { token: readOnly, scopes: ["read"] },
    ],
  });
}, 60_000);

afterAll(async () => {
  await daemon?.stop("SIGTERM");
  killAll();
  await relay?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The attachment the SDK scenario sent, for the MCP client to download. */
let asset = "";

describe("the relay Worker without a daemon", () => {
  it("answers 503 RELAY_OFFLINE, saying what to start", async () => {
    const res = await get("/v1/chats");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(await res.json()).toMatchObject({
      code: "RELAY_OFFLINE",
      message: expect.stringContaining("inboxd serve --relay"),
    });
  });

  it("refuses a daemon with a wrong pairing secret, logging the refusal but never the secret", async () => {
    const wrong = randomBytes(24).toString("base64url");
    const impostor = await serve(wrong);
    try {
      await expect.poll(() => impostor.output(), { timeout: 10_000 }).toContain("refused the pairing secret (401)");
      expect(impostor.output()).not.toContain(wrong);
      expect((await get("/v1/chats")).status).toBe(503);
      const refusal = relayLogs.find((log) => log.message.includes("wrong pairing secret"));
      expect(refusal?.level).toBe("warn");
      for (const log of relayLogs) expect(log.message).not.toContain(wrong);
    } finally {
      await impostor.stop("SIGTERM");
    }
  });
});

describe("the daemon dialed in to the relay", () => {
  beforeAll(async () => {
    daemon = await serve();
    await connected(daemon);
  }, 30_000);

  it("/v1/info through the relay names the relay's origin for every URL, and remote_access true", async () => {
    const info = (await (await get("/v1/info")).json()) as any;
    expect(info.server).toMatchObject({ base_url: relay.url, remote_access: true });
    for (const url of [
      info.endpoints.spec,
      info.endpoints.mcp,
      info.endpoints.ws_events,
      ...Object.values(info.endpoints.oauth as Record<string, string>),
    ])
      expect((url as string).replace(/^ws/, "http").startsWith(`${relay.url}/`), url).toBe(true);
  });

  it("the daemon decides on tokens: none, a wrong one, and the read-only scope are refused as on loopback", async () => {
    expect((await fetch(`${relay.url}/v1/chats`)).status).toBe(401);
    const wrong = await fetch(`${relay.url}/v1/chats`, { headers: { authorization: "Bearer inbx_nope" } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toContain(
      `resource_metadata="${relay.url}/.well-known/oauth-protected-resource"`,
    );
    expect((await fetch(`${relay.url}/v1/chats`, { headers: { authorization: `Bearer ${readOnly}` } })).status).toBe(
      200,
    );
    const write = await fetch(`${relay.url}/v1/labels`, {
      method: "POST",
      headers: { authorization: `Bearer ${readOnly}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "nope" }),
    });
    expect(write.status).toBe(403);
  });

  it("runs the SDK scenario through the relay: a message to Echo and its answer, uploads in and bytes out with flow control", async () => {
    // Larger than the relay's per-stream credit (256 KiB) several times over, both ways.
    asset = await sdkRoundTrip({ origin: relay.url, token }, 1_500_000, "through the relay");
  });

  it("refuses a request body over the relay's limit with 413 before it reaches the daemon", async () => {
    const res = await fetch(`${relay.url}/v1/assets/upload/base64`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "x".repeat(MAX_BODY + 1),
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { message: string }).message).toContain(`at most ${MAX_BODY} bytes`);
  });

  it("passes on a refusal the daemon answers before reading the body (a big upload with a wrong token: 401, not 502)", async () => {
    const big = await fetch(`${relay.url}/v1/assets/upload/base64`, {
      method: "POST",
      headers: { authorization: "Bearer inbx_expired", "content-type": "application/json" },
      body: "x".repeat(1_500_000),
    });
    expect(big.status).toBe(401);
    expect(big.headers.get("www-authenticate")).toMatch(/^Bearer /);
    // The same without a Content-Length (a streamed body).
    const streamed = await fetch(`${relay.url}/v1/labels`, {
      method: "POST",
      headers: { authorization: "Bearer inbx_expired", "content-type": "application/json" },
      body: chunks(3, 10_000),
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(401);
    // And the connection carries on.
    expect((await get("/v1/chats?limit=1")).status).toBe(200);
  });

  it("refuses a streamed body that grows past the limit with 413", async () => {
    // A multipart upload the daemon reads as it comes (and would take far beyond 2 MiB).
    const res = await fetch(`${relay.url}/v1/assets/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "multipart/form-data; boundary=relay-test" },
      body: chunks(40, 64 * 1024),
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { message: string }).message).toContain(
      `the relay forwards request bodies of at most ${MAX_BODY} bytes`,
    );
    expect((await get("/v1/chats?limit=1")).status).toBe(200);
  });

  it("closes a relayed session that sends a message over the /v1/ws limit (1009), and only that session", async () => {
    const other = await connect(relay.url, token, ["*"]);
    const big = await connect(relay.url, token, ["*"]);
    try {
      big.ws.send("x".repeat(300 * 1024));
      const [code] = await new Promise<[number]>((resolve) => big.ws.once("close", (c: number) => resolve([c])));
      expect(code).toBe(1009);
      // The other session and plain requests still go through: the daemon's connection stayed up.
      const chats = (await (await get("/v1/chats?limit=1")).json()) as { items: { id: string }[] };
      const sent = (await (
        await fetch(`${relay.url}/v1/chats/${encodeURIComponent(chats.items[0].id)}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ text: "after the big one" }),
        })
      ).json()) as { pendingMessageID: string };
      await other.next((f) => f.type === "message.upserted" && (f.ids as string[]).includes(sent.pendingMessageID), {
        what: "the event on the other session",
      });
      expect(daemon!.output()).not.toContain("connection to");
    } finally {
      other.close();
      big.close();
    }
  });

  it("carries a /v1/ws session: subscriptions, and the events of a message sent through the relay", async () => {
    await liveEvents({ origin: relay.url, token }, "live through the relay");
    // Refused upgrades come back as the daemon's refusal.
    await expect(connect(relay.url, "inbx_wrong")).rejects.toMatchObject({ status: 401 });
  });

  it("streams a response as it is produced: an event sent after the stream opened arrives while it stays open", async () => {
    // From now (no `after`): nothing is replayed, so the event read below can only be the message sent once the
    // stream is open, carried to the client while the daemon's answer is still being produced.
    const stream = await get("/v1/events", { accept: "text/event-stream" });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    const reader = stream.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    /** Reads until a whole SSE event (or comment block) passes `found`; returns it. */
    const readUntil = async (found: (block: string) => boolean) => {
      for (;;) {
        const blocks = text.split("\n\n");
        const block = blocks.slice(0, -1).find(found);
        if (block !== undefined) return block;
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended; it said: ${text}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    try {
      await readUntil((block) => /^: inboxd events after \d+$/m.test(block));
      const chats = (await (await get("/v1/chats?limit=1")).json()) as { items: { id: string }[] };
      const sent = await fetch(`${relay.url}/v1/chats/${encodeURIComponent(chats.items[0].id)}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ text: "streamed through the relay" }),
      });
      const { pendingMessageID } = (await sent.json()) as { pendingMessageID: string };
      const event = await readUntil((block) => {
        const data = /^data: (.*)$/m.exec(block)?.[1];
        const parsed = data ? (JSON.parse(data) as { type: string; ids: string[] }) : undefined;
        return parsed?.type === "message.upserted" && parsed.ids.includes(pendingMessageID);
      });
      expect(event).toMatch(/^id: \d+$/m);
    } finally {
      await reader.cancel();
    }
  });

  it("an MCP client runs the whole OAuth flow through the relay (discovery, registration, PKCE, token) and lists the tools", async () => {
    await mcpOAuth({ origin: relay.url, token }, asset);
  });

  it("answers 503 once the daemon is killed (the relay sees its connection close), and 200 again once a restarted daemon dials back in", async () => {
    expect(await daemon!.stop("SIGKILL")).toBeNull();
    // The relay's own watchdog would give up on a silent daemon only after HEARTBEAT_TIMEOUT_MS, longer than this
    // waits: a 503 within it is the closed connection noticed. A request sent into the connection before the relay
    // saw it close fails with 502 RELAY_DISCONNECTED; nothing is answered as if the daemon were there.
    const statuses: number[] = [];
    const status = async () => statuses[statuses.push((await get("/v1/chats?limit=1")).status) - 1];
    await expect.poll(status, { timeout: HEARTBEAT_TIMEOUT_MS / 2, interval: 50 }).toBe(503);
    expect(statuses.filter((s) => s !== 502 && s !== 503)).toEqual([]);
    daemon = await serve();
    await connected(daemon);
    expect((await get("/v1/chats?limit=1")).status).toBe(200);
  }, 30_000);
});

describe("the relay's per-address rate limit", () => {
  /**
   * INBOXD_RELAY_RATE_LIMIT: one request per 1,000 s, so a burst of one. No request's budget comes back while the
   * test runs (its timeout is 30 s), however slowly the machine answers; the arithmetic of bursts and refills is
   * src/http/rate-limit.test.ts's, on a clock it moves by hand.
   */
  const RATE = 0.001;
  let limited: WorkerdServer;
  let limitedDir: string;
  let behind: ServingProcess | undefined;

  beforeAll(async () => {
    limited = await startWorkerd({
      vars: { INBOXD_MODE: "relay", INBOXD_RELAY_SECRET: SECRET, INBOXD_RELAY_RATE_LIMIT: String(RATE) },
    });
    limitedDir = await prepareDataDir({ tokens: [{ token, scopes: ["read", "write"] }] });
    behind = await serve(SECRET, { relay: limited.url, dataDir: limitedDir });
    await connected(behind);
  }, 60_000);
  afterAll(async () => {
    await behind?.stop("SIGTERM");
    await limited?.stop();
    if (limitedDir) rmSync(limitedDir, { recursive: true, force: true });
  });

  it("refuses an address past its budget before forwarding (429 with retry-after, named as the relay's), other addresses unaffected", async () => {
    const from = (address: string) =>
      fetch(`${limited.url}/v1/info`, { headers: { authorization: `Bearer ${token}`, "cf-connecting-ip": address } });
    const first = await from("203.0.113.50");
    expect(first.status).toBe(200);
    // The daemon's answer, forwarded.
    expect(((await first.json()) as { server: unknown }).server).toMatchObject({
      base_url: limited.url,
      remote_access: true,
    });
    for (let i = 0; i < 3; i++) {
      const refused = await from("203.0.113.50");
      expect(refused.status).toBe(429);
      // The relay's refusal (the daemon runs with --rate-limit off, and counts tokens, not addresses).
      expect(await refused.json()).toMatchObject({
        code: "RATE_LIMITED",
        message: expect.stringContaining(`this address may make ${RATE} requests per second with bursts of up to 1`),
      });
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(900);
    }
    expect((await from("198.51.100.60")).status).toBe(200);
  });
});

/** A request body of `count` chunks of `size` bytes, streamed (no Content-Length). */
function chunks(count: number, size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent++ >= count) return controller.close();
      controller.enqueue(new Uint8Array(size).fill(120));
    },
  });
}
