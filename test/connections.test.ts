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
const TIMEOUTS = { idleMs: 800, graceMs: 600, minBytesPerSecond: 2048 };
let server: RunningServer;
let dir: string;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "inboxd-connections-"));
  const { storage, close } = await openSqliteStorage(databasePath(dir));
  await ensureToken(storage, TOKEN, { name: "rw", scopes: ["read", "write"] });
  await close();
  server = await startServer({ port: 0, host: "127.0.0.1", dbPath: databasePath(dir), allowHosts: [], verbose: false, print: () => undefined, bodyTimeouts: TIMEOUTS });
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
}

/** One request on `agent`; `write` sends the body (and may keep sending after the answer has come). */
function request(path: string, options: { method?: string; headers?: Record<string, string | number>; agent?: http.Agent; write?: (req: http.ClientRequest) => void }): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method: options.method ?? "GET", agent: options.agent ?? false, headers: { authorization: `Bearer ${TOKEN}`, ...options.headers } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body, ms: performance.now() - started }));
      res.on("error", reject);
    });
    req.on("error", reject);
    if (options.write) options.write(req);
    else req.end();
  });
}

const multipart = (boundary: string, parts: string[]) => `${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join("")}--${boundary}--\r\n`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("connections", () => {
  it("a kept-alive connection answers the next request at once after an early 413 (10,000 small multipart fields)", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const boundary = "b0undary";
    const fields = Array.from({ length: 10_000 }, (_, i) => `Content-Disposition: form-data; name="f${i}"\r\n\r\nv`);
    const body = multipart(boundary, fields);
    const refused = await request("/v1/assets/upload", {
      method: "POST",
      agent,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": Buffer.byteLength(body) },
      write: (req) => req.end(body),
    });
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body).code).toBe("PAYLOAD_TOO_LARGE");
    for (let i = 0; i < 3; i++) {
      const next = await request("/v1/accounts", { agent });
      expect(next.status).toBe(200);
      expect(next.ms).toBeLessThan(1_000);
    }
    agent.destroy();
  });

  it("a 100 KB multipart header line is answered with 400 that the client reads, while it is still sending", async () => {
    const boundary = "b0undary";
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${"x".repeat(100_000)}"\r\n\r\n`;
    const answer = await request("/v1/assets/upload", {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": head.length + 4 * 1024 * 1024 },
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
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe("close");
    expect(answer.ms).toBeLessThan(TIMEOUTS.idleMs);
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
    const socket = net.connect(port, "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (c) => (text += c));
    socket.write("GET /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Line\r\n\r\n");
    await new Promise((resolve) => socket.once("end", resolve));
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toMatchObject({ code: "INVALID_REQUEST" });
    await sleep(10);
  });
});
