/**
 * The Matrix client against a homeserver that misbehaves. No real server does this on purpose, so this one is an
 * in-process HTTP server that answers /sync with what a broken or hostile server might send: garbage, an endless
 * answer, bad UTF-8, events forged for another room, giant events. The client must keep going (reporting the
 * trouble as its status), store what is sound, and never hold an unbounded answer in memory.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InboundEvent } from "../../src/bridges/connector.ts";
import type { NetworkError } from "../../src/bridges/connector.ts";
import { MatrixClient } from "../../src/connectors/matrix/client.ts";
import { createMatrixLogin } from "../../src/connectors/matrix/login.ts";
import type { AccountRecord } from "../../src/store/records.ts";
import { waitFor } from "./kit.ts";

const ROOM = "!room:hostile.test";
const SELF = "@alice:hostile.test";

type Answer = { status?: number; body: string | Buffer | (() => AsyncGenerator<Buffer>) };

describe("the Matrix client against a hostile homeserver", () => {
  let server: Server;
  let url: string;
  const answers: Answer[] = [];
  let syncs = 0;

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      if (req.url === "/_matrix/client/versions") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ versions: ["v1.11"] }));
      if (req.url === "/_matrix/client/v3/login")
        return void res.writeHead(429, { "content-type": "application/json" }).end(JSON.stringify({ errcode: "M_LIMIT_EXCEEDED", error: "Too Many Requests", retry_after_ms: 12_300 }));
      if (!req.url?.startsWith("/_matrix/client/v3/sync")) return void res.writeHead(404).end("{}");
      syncs++;
      const answer = answers.shift();
      if (!answer) return void setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ next_batch: `idle-${syncs}` })), 200);
      res.writeHead(answer.status ?? 200, { "content-type": "application/json" });
      if (typeof answer.body === "function") {
        for await (const chunk of answer.body()) if (!res.write(chunk)) await new Promise((r) => res.once("drain", r));
        res.end();
      } else res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function client() {
    const events: InboundEvent[] = [];
    const saved: Record<string, unknown>[] = [];
    const account = { accountID: "local-matrix_ba_test", network: "matrix", user: { id: SELF }, status: "connecting", state: { homeserver: url, userID: SELF, deviceID: "DEV", accessToken: "token" } } as unknown as AccountRecord;
    const c = new MatrixClient(account, { emit: async (e) => void events.push(e), saveState: async (s) => void saved.push(structuredClone(s)) }, { firstBackfill: 10 });
    return { c, events, saved, statuses: () => events.filter((e) => e.type === "status").map((e) => (e as { statusText?: string }).statusText ?? "") };
  }

  const sync = (next: string, rooms: unknown) => JSON.stringify({ next_batch: next, rooms: { join: { [ROOM]: rooms } } });
  const member = (id: string) => ({ type: "m.room.member", state_key: id, sender: id, event_id: `$m-${id}`, origin_server_ts: 1, content: { membership: "join" } });
  const text = (id: string, body: string, extra: Record<string, unknown> = {}) => ({ type: "m.room.message", sender: "@bob:hostile.test", event_id: id, origin_server_ts: 2, content: { msgtype: "m.text", body }, ...extra });

  it("survives garbage, an oversized answer and bad UTF-8, and stores only what is sound", async () => {
    const hugeBody = async function* () {
      yield Buffer.from('{"next_batch":"x","pad":"');
      const mib = Buffer.alloc(1024 * 1024, 0x61);
      for (let i = 0; i < 70; i++) yield mib; // past the 64 MiB the client reads of one answer
      yield Buffer.from('"}');
    };
    const badUTF8 = Buffer.concat([Buffer.from(sync("s2", { state: { events: [member(SELF), member("@bob:hostile.test")] }, timeline: { events: [text("$bad", "PLACEHOLDER")] } }).replace("PLACEHOLDER", "bad:"), "utf8")]);
    // Splice raw invalid bytes into the JSON string value: 0xff 0xfe are never valid UTF-8.
    const bad = Buffer.concat([badUTF8.subarray(0, badUTF8.indexOf("bad:") + 4), Buffer.from([0xff, 0xfe]), badUTF8.subarray(badUTF8.indexOf("bad:") + 4)]);
    answers.push(
      { body: "<html>not json</html>" },
      { body: "[1,2,3]" },
      { body: hugeBody },
      { body: bad },
      {
        body: sync("s3", {
          timeline: {
            events: [
              text("$forged", "forged for another room", { room_id: "!other:hostile.test" }),
              text("$huge", "y".repeat(200_000)),
              { type: "m.room.message", sender: "not-a-user", event_id: "$nosender", content: { body: "x" } },
              text("$ok", "a sound message"),
            ],
          },
        }),
      },
    );
    const { c, events, saved, statuses } = client();
    await c.connect();
    try {
      await waitFor("the sound message", () => events.some((e) => e.type === "message" && e.message.networkMessageID === "$ok"), 60_000);
    } finally {
      await c.disconnect();
    }
    const messages = events.filter((e): e is Extract<InboundEvent, { type: "message" }> => e.type === "message").map((e) => e.message);
    expect(messages.map((m) => m.networkMessageID)).toEqual(["$bad", "$huge", "$ok"]);
    expect(messages[0].text).toBe("bad:\uFFFD\uFFFD");
    expect(messages[1].text).toHaveLength(64 * 1024);
    // Each bad answer was reported and retried; none moved the saved position.
    expect(statuses().join("\n")).toMatch(/not a Matrix JSON object/);
    expect(statuses().join("\n")).toMatch(/larger than 67108864 bytes/);
    expect(saved.map((s) => (s.synced as { since?: string }).since)).toEqual(expect.arrayContaining(["s2", "s3"]));
    expect(saved.map((s) => (s.synced as { since?: string }).since)).not.toContain("x");
  }, 120_000);

  it("fails a rate-limited login with rate_limited and the time to wait, without waiting itself", async () => {
    const login = createMatrixLogin("password");
    const step = await login.start();
    const started = Date.now();
    const failure = await login.submit(step, { fields: { username: SELF, password: "pw", homeserver: url } }).catch((e: NetworkError) => e);
    expect(failure).toMatchObject({ kind: "rejected", code: "rate_limited", message: expect.stringContaining("try again in 13 s") });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("drops a revoked session's sync loop and asks for sign-in again", async () => {
    answers.push({ status: 401, body: JSON.stringify({ errcode: "M_UNKNOWN_TOKEN", error: "Invalid access token passed.", soft_logout: false }) });
    const { c, events } = client();
    await c.connect();
    await waitFor("reconnect_required", () => events.some((e) => e.type === "status" && e.status === "reconnect_required"), 20_000);
    const before = syncs;
    await new Promise((r) => setTimeout(r, 500));
    expect(syncs).toBe(before); // no more requests with a dead token
    await c.disconnect();
  });
});
