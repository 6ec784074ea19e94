/**
 * Plumbing for the live-event, reminder and webhook tests, beside the one HTTP client (test/kit/http.ts): a
 * WebSocket client that records every frame and waits for the ones a test names, and a local webhook receiver.
 * Nothing here asserts.
 */
import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket from "ws";
import { waitFor } from "../kit/common.ts";

// ---------------------------------------------------------------------------------------------------------------
// WebSocket client

/** A domain event as it arrives on /v1/ws (focus and typing are live-only: src/events/protocol.ts). */
export interface WsEvent {
  type: "chat.upserted" | "chat.deleted" | "message.upserted" | "message.deleted" | "focus" | "typing";
  seq: number;
  ts: string;
  chatID: string;
  ids: string[];
  entries?: any[];
  transactionID?: string;
  transactionIDs?: string[];
  typing?: { participantID: string; state: "typing" | "paused"; timeoutMs?: number };
}

export type Frame = Record<string, any>;

let requestCounter = 0;

/**
 * One /v1/ws connection. Every text frame is parsed and kept in `frames` (in arrival order); `next` waits for the
 * first frame from a position on that matches, so a test can wait for "the event after this point".
 */
export class Conn {
  readonly frames: Frame[] = [];
  /** Frames that were not JSON text (there should be none). */
  readonly garbage: unknown[] = [];
  closed?: { code: number; reason: string };
  private readonly listeners = new Set<() => void>();

  constructor(readonly ws: WebSocket) {
    ws.on("message", (data, isBinary) => {
      if (isBinary) this.garbage.push(data);
      else {
        try {
          this.frames.push(JSON.parse(data.toString()));
        } catch {
          this.garbage.push(data.toString());
        }
      }
      this.notify();
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.notify();
    });
    ws.on("error", () => undefined);
  }

  private notify() {
    for (const l of [...this.listeners]) l();
  }

  /** Position to wait from: frames after this call. */
  mark(): number {
    return this.frames.length;
  }

  events(from = 0): WsEvent[] {
    return this.frames.slice(from).filter((f) => typeof f.seq === "number") as WsEvent[];
  }

  /** The first frame at index ≥ from that matches, waiting up to timeoutMs for it. */
  next<T extends Frame = Frame>(
    match: (f: Frame) => boolean,
    options: { from?: number; timeoutMs?: number; what?: string } = {},
  ): Promise<T> {
    const from = options.from ?? 0;
    const timeoutMs = options.timeoutMs ?? 5000;
    return new Promise((resolve, reject) => {
      const check = () => {
        for (let i = from; i < this.frames.length; i++)
          if (match(this.frames[i])) {
            done();
            resolve(this.frames[i] as T);
            return true;
          }
        if (this.closed) {
          done();
          reject(
            new Error(
              `connection closed (${this.closed.code} ${this.closed.reason}) while waiting for ${options.what ?? "a frame"}; got ${this.describe(from)}`,
            ),
          );
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${options.what ?? "a frame"}; got ${this.describe(from)}`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.listeners.delete(listener);
      };
      const listener = () => void check();
      if (check()) return;
      this.listeners.add(listener);
    });
  }

  /** Waits for a domain event of this type on this chat (and matching `extra`), from `from` on. */
  event(
    type: WsEvent["type"],
    chatID: string,
    options: { from?: number; timeoutMs?: number; where?: (e: WsEvent) => boolean } = {},
  ): Promise<WsEvent> {
    return this.next<WsEvent>(
      (f) =>
        f.type === type && f.chatID === chatID && typeof f.seq === "number" && (options.where?.(f as WsEvent) ?? true),
      {
        ...options,
        what: `${type} on ${chatID}`,
      },
    );
  }

  send(frame: unknown) {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /** Sends a command and waits for the answer carrying its requestID. */
  async request(frame: Record<string, unknown>, timeoutMs = 5000): Promise<Frame> {
    const requestID = (frame.requestID as string | undefined) ?? `r${++requestCounter}`;
    const from = this.mark();
    this.send({ ...frame, requestID });
    return this.next((f) => f.requestID === requestID, { from, timeoutMs, what: `the answer to ${requestID}` });
  }

  async subscribe(chatIDs: string[]): Promise<Frame> {
    const answer = await this.request({ type: "subscriptions.set", chatIDs });
    if (answer.type !== "subscriptions.updated")
      throw new Error(`subscriptions.set answered ${JSON.stringify(answer)}`);
    return answer;
  }

  waitClosed(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    return new Promise((resolve, reject) => {
      if (this.closed) return resolve(this.closed);
      const timer = setTimeout(() => reject(new Error(`connection not closed after ${timeoutMs} ms`)), timeoutMs);
      this.ws.once("close", (code, reason) => {
        clearTimeout(timer);
        resolve({ code, reason: reason.toString() });
      });
    });
  }

  close() {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
  }

  private describe(from: number): string {
    const shown = this.frames
      .slice(from)
      .map((f) => `${f.type}${f.chatID ? `@${f.chatID}` : ""}${f.ids ? `[${f.ids.join(",")}]` : ""}`);
    return shown.length ? shown.slice(-20).join(", ") : "nothing";
  }
}

export const wsURL = (httpURL: string) => `${httpURL.replace(/^http/, "ws")}/v1/ws`;

export interface ConnectOptions {
  /** Sent as Authorization: Bearer; null sends none. */
  token?: string | null;
  protocols?: string[];
  headers?: Record<string, string>;
  origin?: string;
  /** ws client options passed through (e.g. autoPong). */
  wsOptions?: WebSocket.ClientOptions;
}

/** Opens /v1/ws and resolves once the connection is open (the ready frame may still be on its way). */
export function open(url: string, options: ConnectOptions = {}): Promise<Conn> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const ws = new WebSocket(wsURL(url), options.protocols ?? [], {
    headers,
    origin: options.origin,
    ...options.wsOptions,
  });
  const conn = new Conn(ws);
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(conn));
    ws.once("unexpected-response", (_req, res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () =>
        reject(
          Object.assign(new Error(`upgrade refused: ${res.statusCode} ${text}`), {
            status: res.statusCode,
            body: text,
            headers: res.headers,
          }),
        ),
      );
    });
    ws.once("error", (error) => reject(error));
  });
}

/** Opens /v1/ws, waits for the ready frame and, when given, sets the subscriptions. */
export async function connect(
  url: string,
  token: string,
  chatIDs?: string[],
  options: ConnectOptions = {},
): Promise<Conn> {
  const conn = await open(url, { token, ...options });
  await conn.next((f) => f.type === "ready", { what: "the ready frame" });
  if (chatIDs) await conn.subscribe(chatIDs);
  return conn;
}

/** The upgrade refusal (status and body) of a connection attempt that should fail. */
export async function refusal(
  url: string,
  options: ConnectOptions,
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  try {
    const conn = await open(url, options);
    conn.close();
    throw new Error("the upgrade was accepted");
  } catch (error) {
    const e = error as { status?: number; body?: string; headers?: IncomingHttpHeaders };
    if (e.status === undefined) throw error;
    return { status: e.status, body: e.body ?? "", headers: e.headers ?? {} };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Webhook receiver

export interface Delivery {
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  /** The status this receiver answered. */
  status: number;
}

/**
 * A local HTTP server that records every POST. `answer` picks the status of each request (default 200), so a
 * test can fail the first attempts.
 */
export class Receiver {
  readonly deliveries: Delivery[] = [];
  answer: (request: { headers: IncomingHttpHeaders; body: string; n: number }) => number = () => 200;
  private server?: Server;
  port = 0;

  get url() {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Listens on the given port (0: a free one). */
  async start(port = this.port): Promise<this> {
    const server = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        const status = this.answer({ headers: req.headers, body, n: this.deliveries.length });
        this.deliveries.push({ at: Date.now(), headers: req.headers, body, json, status });
        res.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? "ok" : "no");
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop() {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Accepted deliveries (answered 2xx). */
  accepted(): Delivery[] {
    return this.deliveries.filter((d) => d.status < 300);
  }

  waitFor(what: string, match: (d: Delivery) => boolean, timeoutMs = 8000): Promise<Delivery> {
    return waitFor(what, () => this.deliveries.find(match), timeoutMs);
  }
}

export const hmacHex = (secret: string, data: string) => createHmac("sha256", secret).update(data).digest("hex");

/** True when the delivery's signature is the HMAC-SHA256 of `<timestamp>.<body>` under the secret. */
export function signatureValid(delivery: Delivery, secret: string): boolean {
  const timestamp = delivery.headers["x-inboxd-timestamp"];
  return (
    typeof timestamp === "string" &&
    delivery.headers["x-inboxd-signature"] === `sha256=${hmacHex(secret, `${timestamp}.${delivery.body}`)}`
  );
}
