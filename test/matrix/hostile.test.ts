/**
 * The Matrix client against a homeserver that misbehaves. No real server does this on purpose, so this one is an
 * in-process HTTP server that answers /sync with what a broken or hostile server might send: garbage, an endless
 * answer, bad UTF-8, events forged for another room, giant events. The client must keep going (reporting the
 * trouble as its status), store what is sound, and never hold an unbounded answer in memory.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHTTPSServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from "undici";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InboundEvent } from "../../src/bridges/connector.ts";
import type { NetworkError } from "../../src/bridges/connector.ts";
import { MatrixClient } from "../../src/connectors/matrix/client.ts";
import { MatrixHttp } from "../../src/connectors/matrix/http.ts";
import { createMatrixLogin, discover } from "../../src/connectors/matrix/login.ts";
import { uploadMedia } from "../../src/connectors/matrix/media.ts";
import type { AccountRecord } from "../../src/store/records.ts";
import { waitFor } from "./kit.ts";

const ROOM = "!room:hostile.test";
const SELF = "@alice:hostile.test";

type Answer = { status?: number; body: string | Buffer | (() => AsyncGenerator<Buffer>) };

/** Media as a newer homeserver serves it: authenticated downloads only, and uploads rate-limited once. */
const FILE = Buffer.from("bytes only a signed-in client may read");
const uploads: Buffer[] = [];
/** Transaction IDs of the sends the server saw, in order. */
const sends: string[] = [];
function mediaRoutes(
  url: string,
  authorization: string | undefined,
): ((body: Buffer, res: ServerResponse) => void) | undefined {
  const json = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  if (url.startsWith("/_matrix/media/v3/download/"))
    return (_b, res) => json(res, 404, { errcode: "M_NOT_FOUND", error: "use authenticated media" });
  if (url.startsWith("/_matrix/client/v1/media/download/hostile.test/file1"))
    return (_b, res) =>
      authorization === "Bearer token"
        ? res
            .writeHead(200, { "content-type": "text/plain", "content-disposition": 'attachment; filename="note.txt"' })
            .end(FILE)
        : json(res, 401, { errcode: "M_MISSING_TOKEN", error: "no token" });
  const send = /^\/_matrix\/client\/v3\/rooms\/[^/]+\/send\/m\.room\.message\/([^/?]+)/.exec(url);
  if (send)
    return (_b, res) => {
      sends.push(send[1]);
      // The first attempt's answer is lost (a gateway error): the client must repeat the same transaction.
      if (sends.length === 1) res.writeHead(502).end("bad gateway");
      else json(res, 200, { event_id: "$sent" });
    };
  if (url.startsWith("/_matrix/media/v3/upload"))
    return (body, res) => {
      uploads.push(body);
      if (uploads.length === 1)
        json(res, 429, { errcode: "M_LIMIT_EXCEEDED", error: "Too Many Requests", retry_after_ms: 300 });
      else json(res, 200, { content_uri: `mxc://hostile.test/upload${uploads.length}` });
    };
  return undefined;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req
      .on("data", (c: Buffer) => chunks.push(c))
      .on("end", () => resolve(Buffer.concat(chunks)))
      .on("error", reject);
  });
}

describe("the Matrix client against a hostile homeserver", () => {
  let server: Server;
  let url: string;
  const answers: Answer[] = [];
  let syncs = 0;

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      if (req.url === "/_matrix/client/versions")
        return void res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ versions: ["v1.11"] }));
      if (req.url === "/_matrix/client/v3/login")
        return void res
          .writeHead(429, { "content-type": "application/json" })
          .end(JSON.stringify({ errcode: "M_LIMIT_EXCEEDED", error: "Too Many Requests", retry_after_ms: 12_300 }));
      const media = mediaRoutes(req.url ?? "", req.headers.authorization);
      if (media) {
        const body = await readBody(req);
        return void media(body, res);
      }
      if (!req.url?.startsWith("/_matrix/client/v3/sync")) return void res.writeHead(404).end("{}");
      syncs++;
      const answer = answers.shift();
      if (!answer)
        return void setTimeout(
          () =>
            res
              .writeHead(200, { "content-type": "application/json" })
              .end(JSON.stringify({ next_batch: `idle-${syncs}` })),
          200,
        );
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
    const account = {
      accountID: "local-matrix_ba_test",
      network: "matrix",
      user: { id: SELF },
      status: "connecting",
      state: { homeserver: url, userID: SELF, deviceID: "DEV", accessToken: "token" },
    } as unknown as AccountRecord;
    const c = new MatrixClient(
      account,
      {
        emit: async (e) => void events.push(e),
        saveState: async (s) => void saved.push(structuredClone(s)),
        setLoginAccounts: async () => [],
        records: { get: async () => undefined, put: () => undefined, commit: async () => undefined },
      },
      { firstBackfill: 10 },
    );
    return {
      c,
      events,
      saved,
      statuses: () =>
        events.filter((e) => e.type === "status").map((e) => (e as { statusText?: string }).statusText ?? ""),
    };
  }

  const sync = (next: string, rooms: unknown) =>
    JSON.stringify({ next_batch: next, rooms: { join: { [ROOM]: rooms } } });
  const member = (id: string) => ({
    type: "m.room.member",
    state_key: id,
    sender: id,
    event_id: `$m-${id}`,
    origin_server_ts: 1,
    content: { membership: "join" },
  });
  const text = (id: string, body: string, extra: Record<string, unknown> = {}) => ({
    type: "m.room.message",
    sender: "@bob:hostile.test",
    event_id: id,
    origin_server_ts: 2,
    content: { msgtype: "m.text", body },
    ...extra,
  });

  it("survives garbage, an oversized answer and bad UTF-8, and stores only what is sound", async () => {
    const hugeBody = async function* () {
      yield Buffer.from('{"next_batch":"x","pad":"');
      const mib = Buffer.alloc(1024 * 1024, 0x61);
      for (let i = 0; i < 70; i++) yield mib; // past the 64 MiB the client reads of one answer
      yield Buffer.from('"}');
    };
    const badUTF8 = Buffer.concat([
      Buffer.from(
        sync("s2", {
          state: { events: [member(SELF), member("@bob:hostile.test")] },
          timeline: { events: [text("$bad", "PLACEHOLDER")] },
        }).replace("PLACEHOLDER", "bad:"),
        "utf8",
      ),
    ]);
    // Splice raw invalid bytes into the JSON string value: 0xff 0xfe are never valid UTF-8.
    const bad = Buffer.concat([
      badUTF8.subarray(0, badUTF8.indexOf("bad:") + 4),
      Buffer.from([0xff, 0xfe]),
      badUTF8.subarray(badUTF8.indexOf("bad:") + 4),
    ]);
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
      await waitFor(
        "the sound message",
        () => events.some((e) => e.type === "message" && e.message.networkMessageID === "$ok"),
        60_000,
      );
    } finally {
      await c.disconnect();
    }
    const messages = events
      .filter((e): e is Extract<InboundEvent, { type: "message" }> => e.type === "message")
      .map((e) => e.message);
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
    const failure = await login
      .submit(step, { fields: { username: SELF, password: "pw", homeserver: url } })
      .catch((e: NetworkError) => e);
    expect(failure).toMatchObject({
      kind: "rejected",
      code: "rate_limited",
      message: expect.stringContaining("try again in 13 s"),
    });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("asks for sign-in again on a soft logout, saying so", async () => {
    answers.push({
      status: 401,
      body: JSON.stringify({ errcode: "M_UNKNOWN_TOKEN", error: "Access token has expired", soft_logout: true }),
    });
    const { c, events } = client();
    await c.connect();
    const status = await waitFor(
      "reconnect_required",
      () =>
        events.find(
          (e): e is Extract<InboundEvent, { type: "status" }> =>
            e.type === "status" && e.status === "reconnect_required",
        ),
      20_000,
    );
    expect(status.statusText).toMatch(/soft logout/);
    await c.disconnect();
  });

  it("downloads through authenticated media where the server offers it, with the account's token", async () => {
    const { c } = client();
    const media = await c.downloadMedia("mxc://hostile.test/file1");
    const chunks: Uint8Array[] = [];
    for await (const chunk of media!.content) chunks.push(chunk);
    expect(Buffer.concat(chunks)).toEqual(FILE);
    expect(media).toMatchObject({ fileName: "note.txt", mimeType: "text/plain" });
  });

  it("repeats a rate-limited upload with the whole file once the server allows", async () => {
    const bytes = Buffer.from("an attachment sent twice, the first time refused");
    const file = {
      info: {
        type: "unknown" as const,
        id: "local",
        fileName: "a.txt",
        mimeType: "text/plain",
        fileSize: bytes.length,
      },
      open: () => new Blob([bytes]).stream(),
    };
    expect(await uploadMedia(new MatrixHttp(url, "token"), file)).toBe("mxc://hostile.test/upload2");
    expect(uploads).toHaveLength(2);
    expect(uploads.map((u) => u.toString())).toEqual([bytes.toString(), bytes.toString()]);
  });

  it("repeats a send whose answer was lost under the same transaction ID, so it is posted once", async () => {
    answers.push({
      body: sync("s-room", {
        state: { events: [member(SELF), member("@bob:hostile.test")] },
        timeline: { events: [] },
      }),
    });
    const { c, saved } = client();
    await c.connect();
    try {
      await waitFor(
        "the room synced",
        () => saved.some((s) => (s.synced as { since?: string }).since === "s-room"),
        20_000,
      );
      expect(await c.send(ROOM, { text: "posted once" })).toMatchObject({ networkMessageID: "$sent" });
    } finally {
      await c.disconnect();
    }
    expect(sends).toHaveLength(2);
    expect(sends[1]).toBe(sends[0]);
  });

  it("finds the homeserver of a server name through its /.well-known/matrix/client (HTTPS)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "inboxd-wellknown-"));
    const previous = getGlobalDispatcher();
    try {
      execFileSync(
        "openssl",
        [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=127.0.0.1",
          "-addext",
          "subjectAltName=IP:127.0.0.1",
          "-keyout",
          join(dir, "key.pem"),
          "-out",
          join(dir, "cert.pem"),
        ],
        { stdio: "ignore" },
      );
      const cert = readFileSync(join(dir, "cert.pem"));
      const https = createHTTPSServer({ key: readFileSync(join(dir, "key.pem")), cert }, (req, res) => {
        if (req.url === "/.well-known/matrix/client")
          return void res
            .writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify({ "m.homeserver": { base_url: `${url}/` } }));
        res.writeHead(404).end();
      });
      await new Promise<void>((resolve) => https.listen(0, "127.0.0.1", resolve));
      setGlobalDispatcher(new Agent({ connect: { ca: cert } })); // this test's certificate, for fetch in this worker
      try {
        const name = `127.0.0.1:${(https.address() as AddressInfo).port}`;
        expect(await discover(name)).toBe(url);
        // A name whose well-known is missing is tried as https://name itself, which is no homeserver here.
        https.removeAllListeners("request").on("request", (_req, res) => res.writeHead(404).end("{}"));
        await expect(discover(name)).rejects.toMatchObject({ code: "not_a_homeserver" });
      } finally {
        https.close();
      }
    } finally {
      setGlobalDispatcher(previous);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("drops a revoked session's sync loop and asks for sign-in again", async () => {
    answers.push({
      status: 401,
      body: JSON.stringify({ errcode: "M_UNKNOWN_TOKEN", error: "Invalid access token passed.", soft_logout: false }),
    });
    const { c, events } = client();
    await c.connect();
    await waitFor(
      "reconnect_required",
      () => events.some((e) => e.type === "status" && e.status === "reconnect_required"),
      20_000,
    );
    const before = syncs;
    await new Promise((r) => setTimeout(r, 500));
    expect(syncs).toBe(before); // no more requests with a dead token
    await c.disconnect();
  });
});
