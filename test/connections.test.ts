import http from "node:http";
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databasePath } from "../adapters/node/data-dir.ts";
import { startServer, type RunningServer } from "../adapters/node/serve.ts";
import { openSqliteStorage } from "../adapters/node/sqlite-storage.ts";
import { ensureToken } from "../src/services/tokens.ts";

// The daemon's connections under refusals and slow clients (adapters/node/request-body.ts): a refused request is
// answered and readable even while its body is still being sent, a kept-alive connection goes on after an early
// refusal, a declared length over the limit is refused before any body, and a body that stalls or trickles is
// timed out (with short timeouts here; the defaults are in request-body.ts).
const TOKEN = "inbx_connections_test_token_0123456789";
const TIMEOUTS = { idleMs: 800, graceMs: 600, minBytesPerSecond: 2048, headersMs: 1000 };
let server: RunningServer;
let dir: string;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "inboxd-connections-"));
  const { storage, close } = await openSqliteStorage(databasePath(dir));
  await ensureToken(storage, TOKEN, { name: "rw", scopes: ["read", "write"] });
  await close();
  server = await startServer({
    port: 0,
    host: "127.0.0.1",
    dbPath: databasePath(dir),
    allowHosts: [],
    verbose: false,
    print: () => undefined,
    bodyTimeouts: TIMEOUTS,
  });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  ms: number;
  /** Which connection of this file's the request went out on (1, 2…), and whether an earlier request had used it. */
  connection: number;
  reusedSocket: boolean;
}

/** Numbers the client sockets requests go out on, so that two answers can be told to have come on the same one. */
const connections = new WeakMap<net.Socket, number>();
let connectionCount = 0;
const connectionOf = (socket: net.Socket) =>
  connections.get(socket) ?? connections.set(socket, ++connectionCount).get(socket)!;

/** One request on `agent`; `write` sends the body (and may keep sending after the answer has come). */
function request(
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string | number>;
    agent?: http.Agent;
    write?: (req: http.ClientRequest) => void;
  },
): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let connection = 0;
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "GET",
        agent: options.agent ?? false,
        headers: { authorization: `Bearer ${TOKEN}`, ...options.headers },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c));
        res.on("end", () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body,
            ms: performance.now() - started,
            connection,
            reusedSocket: req.reusedSocket,
          }),
        );
        res.on("error", reject);
      },
    );
    req.once("socket", (socket) => (connection = connectionOf(socket)));
    req.on("error", reject);
    if (options.write) options.write(req);
    else req.end();
  });
}

const multipart = (boundary: string, parts: string[]) =>
  `${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join("")}--${boundary}--\r\n`;
const _sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Writes `text` on a new connection and answers what the server sent: up to the end of its first whole answer (a
 * kept-alive connection stays open after it), or everything until the server closed the connection.
 */
async function exchange(text: string): Promise<string> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  let answer = "";
  socket.setEncoding("utf8");
  socket.on("error", () => undefined);
  await new Promise((resolve) => {
    socket.once("close", resolve);
    socket.on("data", (c) => {
      answer += c;
      if (whole(answer)) socket.destroy();
    });
    socket.write(text);
  });
  return answer;
}

/**
 * Whether `answer` holds a whole HTTP answer: its head, then the body its Content-Length or chunked framing says (a
 * 204 or 304 has none).
 */
function whole(answer: string): boolean {
  const end = answer.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const head = answer.slice(0, end).toLowerCase();
  const body = answer.slice(end + 4);
  if (/^http\/1\.1 (204|304) /.test(head)) return true; // no body, whatever the headers say
  const length = /\r\ncontent-length:\s*(\d+)/.exec(head)?.[1];
  if (length !== undefined) return Buffer.byteLength(body) >= Number(length);
  if (/\r\ntransfer-encoding:\s*chunked/.test(head)) return /(^|\r\n)0\r\n\r\n$/.test(body);
  return false; // framed by the connection's end
}

/** A raw answer as its status line, headers (lower-cased names) and body (chunked bodies joined). */
function parseAnswer(answer: string) {
  const end = answer.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = answer.slice(0, end).split("\r\n");
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
  );
  let body = answer.slice(end + 4);
  if (headers["transfer-encoding"] === "chunked")
    body = body
      .split("\r\n")
      .filter((_, i) => i % 2 === 1)
      .join("");
  return { statusLine, headers, body };
}

/** What every error answer must be: the status line with its reason phrase, and the documented JSON error body. */
function expectJsonError(answer: string, status: number, code: string) {
  const { statusLine, headers, body } = parseAnswer(answer);
  expect(statusLine).toBe(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}`);
  expect(headers["content-type"]).toBe("application/json");
  const json = JSON.parse(body);
  expect(json).toMatchObject({ code, message: expect.any(String) });
  expect(json.message.length).toBeGreaterThan(0);
  return json as { code: string; message: string };
}

describe("connections", () => {
  it("a kept-alive connection answers the next requests after an early 413 (10,000 small multipart fields): the same socket, not a new one", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const boundary = "b0undary";
    const fields = Array.from({ length: 10_000 }, (_, i) => `Content-Disposition: form-data; name="f${i}"\r\n\r\nv`);
    const body = multipart(boundary, fields);
    const refused = await request("/v1/assets/upload", {
      method: "POST",
      agent,
      headers: {
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": Buffer.byteLength(body),
      },
      write: (req) => req.end(body),
    });
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body).code).toBe("PAYLOAD_TOO_LARGE");
    expect(refused.headers.connection).not.toBe("close");
    for (let i = 0; i < 3; i++) {
      const next = await request("/v1/accounts", { agent });
      expect(next.status).toBe(200);
      // Had the daemon closed the connection (or left the rest of the body unread on it), the agent would have
      // opened another socket, or the answer would be a parse error.
      expect({ connection: next.connection, reused: next.reusedSocket }, `request ${i + 1} after the 413`).toEqual({
        connection: refused.connection,
        reused: true,
      });
    }
    agent.destroy();
  });

  it("a 100 KB multipart header line is answered with 400 that the client reads, while it is still sending", async () => {
    const boundary = "b0undary";
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${"x".repeat(100_000)}"\r\n\r\n`;
    const answer = await request("/v1/assets/upload", {
      method: "POST",
      headers: {
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": head.length + 4 * 1024 * 1024,
      },
      write: (req) => {
        req.write(head);
        // Keep sending the declared body in pieces, as a client that does not watch for an early answer would.
        let sent = 0;
        const timer = setInterval(() => {
          if (sent >= 4 * 1024 * 1024 || req.destroyed) return clearInterval(timer);
          req.write(Buffer.alloc(256 * 1024, 0x61));
          sent += 256 * 1024;
        }, 5);
      },
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body).code).toBe("INVALID_REQUEST");
  });

  it("a URL over 16 KB is answered with a JSON 431 that the client reads, even with a body on its way", async () => {
    const answer = await request(`/v1/chats?x=${"a".repeat(17 * 1024)}`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": 1024 * 1024 },
      write: (req) => {
        req.write(Buffer.alloc(512 * 1024, 0x20));
      },
    });
    expect(answer.status).toBe(431);
    expect(answer.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(answer.body)).toMatchObject({ code: "HEADERS_TOO_LARGE" });
  });

  it("refuses a declared Content-Length over the upload limit before any of the body is sent", async () => {
    const answer = await request("/v1/assets/upload", {
      method: "POST",
      headers: { "content-type": "multipart/form-data; boundary=x", "content-length": 600 * 1024 * 1024 },
      write: (req) => req.flushHeaders(), // headers only; the body never comes
    });
    // The body never comes, so an answer at all is one made from the headers; a wait for the body would end in 408.
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe("close");
  });

  it("times out a body that stops (408), and one trickled byte by byte (408)", async () => {
    const stalled = await request("/v1/webhooks", {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": 100 },
      write: (req) => req.write('{"url":'),
    });
    expect(stalled.status).toBe(408);
    expect(stalled.ms).toBeGreaterThanOrEqual(TIMEOUTS.idleMs - 50);
    const trickled = await request("/v1/webhooks", {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": 1000 },
      write: (req) => {
        const timer = setInterval(() => (req.destroyed ? clearInterval(timer) : req.write("a")), 100);
      },
    });
    expect(trickled.status).toBe(408);
    expect(JSON.parse(trickled.body).code).toBe("REQUEST_TIMEOUT");
  });

  it("answers malformed HTTP with a JSON 400 instead of dropping the connection", async () => {
    expectJsonError(
      await exchange("GET /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Line\r\n\r\n"),
      400,
      "INVALID_REQUEST",
    );
  });

  it("every error Node's HTTP layer makes carries the JSON error body: 431, 400 (no Host), 408 (slow headers), 417, 405 (CONNECT), 400 (a WebSocket handshake without its key)", async () => {
    expectJsonError(
      await exchange(`GET /v1/accounts?x=${"a".repeat(18 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`),
      431,
      "HEADERS_TOO_LARGE",
    );
    const noHost = expectJsonError(await exchange("GET /v1/accounts HTTP/1.1\r\n\r\n"), 400, "INVALID_REQUEST");
    expect(noHost.message).toMatch(/Host/);
    const started = performance.now();
    const slow = expectJsonError(
      await exchange("GET /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
      408,
      "REQUEST_TIMEOUT",
    ); // the headers never end
    expect(slow.message).toMatch(/headers did not arrive within 1 s/);
    expect(performance.now() - started).toBeGreaterThanOrEqual(TIMEOUTS.headersMs - 50);
    const expectation = expectJsonError(
      await exchange("GET /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: teapot\r\n\r\n"),
      417,
      "EXPECTATION_FAILED",
    );
    expect(expectation.message).toMatch(/teapot/);
    expectJsonError(
      await exchange("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
      405,
      "METHOD_NOT_ALLOWED",
    );
    // A WebSocket handshake the app admits but that is malformed (no Sec-WebSocket-Key): ws's check, our body.
    const noKey = expectJsonError(
      await exchange(
        `GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      ),
      400,
      "INVALID_REQUEST",
    );
    expect(noKey.message).toMatch(/Sec-WebSocket-Key/);
    // The daemon still answers.
    expect((await request("/v1/accounts", {})).status).toBe(200);
  });

  it("every status line carries its standard reason phrase, also the WebSocket refusal's", async () => {
    const bearer = `Authorization: Bearer ${TOKEN}\r\n`;
    const lines: [string, string][] = [
      [`GET /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\n${bearer}\r\n`, "200 OK"],
      ["GET /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "401 Unauthorized"],
      [`GET /v1/nosuch HTTP/1.1\r\nHost: 127.0.0.1\r\n${bearer}\r\n`, "404 Not Found"],
      [`GET /v1/chats/search?unreadOnly=maybe HTTP/1.1\r\nHost: 127.0.0.1\r\n${bearer}\r\n`, "400 Bad Request"],
      [`GET /v1/accounts HTTP/1.1\r\nHost: evil.example\r\n${bearer}\r\n`, "403 Forbidden"],
      [`DELETE /v1/webhooks/wh_0 HTTP/1.1\r\nHost: 127.0.0.1\r\n${bearer}\r\n`, "404 Not Found"],
      // Refused before its body is read (finishBody's response).
      [
        `POST /v1/chats HTTP/1.1\r\nHost: 127.0.0.1\r\n${bearer}Content-Type: application/json\r\nContent-Length: 3000000\r\n\r\n`,
        "413 Payload Too Large",
      ],
      [
        "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        "401 Unauthorized",
      ],
    ];
    for (const [text, status] of lines)
      expect(parseAnswer(await exchange(text)).statusLine, text.split("\r\n")[0]).toBe(`HTTP/1.1 ${status}`);
    // A created webhook's DELETE: 204 No Content.
    const created = JSON.parse(
      (
        await request("/v1/webhooks", {
          method: "POST",
          headers: { "content-type": "application/json" },
          write: (req) => req.end('{"url":"http://127.0.0.1:9/x"}'),
        })
      ).body,
    );
    expect(
      parseAnswer(await exchange(`DELETE /v1/webhooks/${created.id} HTTP/1.1\r\nHost: 127.0.0.1\r\n${bearer}\r\n`))
        .statusLine,
    ).toBe("HTTP/1.1 204 No Content");
  });
});
