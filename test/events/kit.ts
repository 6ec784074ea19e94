/**
 * Plumbing for the live-event, reminder and webhook tests: a raw HTTP client, a WebSocket client that records every
 * frame and waits for the ones a test names, and a local webhook receiver. Nothing here asserts.
 */
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket from "ws";

export type Scope = "read" | "write";

export const randomToken = (prefix: string) => `${prefix}_${randomBytes(18).toString("base64url")}`;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const enc = encodeURIComponent;
export const chatPath = (chatID: string) => `/v1/chats/${enc(chatID)}`;
export const messagePath = (chatID: string, messageID: string) => `${chatPath(chatID)}/messages/${enc(messageID)}`;
export const ECHO_ID = "@echo:sandbox.invalid";

/** Polls until `probe` answers something truthy; throws naming `what` after the timeout. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 5000, everyMs = 25): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP

export interface RawResponse<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export class Api {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  async raw<T = any>(method: string, path: string, init: { json?: unknown; token?: string | null; headers?: Record<string, string> } = {}): Promise<RawResponse<T>> {
    const headers: Record<string, string> = { accept: "application/json", ...init.headers };
    const token = init.token === undefined ? this.token : init.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers["content-type"] = "application/json";
    }
    const res = await fetch(this.url + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown;
    if (text && /json/i.test(res.headers.get("content-type") ?? "")) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, text, body: parsed as T };
  }

  /** A setup step: throws with the response shown unless the status is the expected one. */
  async ok<T = any>(method: string, path: string, json?: unknown, status?: number): Promise<T> {
    const res = await this.raw<T>(method, path, { json });
    const wanted = status ?? (method === "DELETE" || /\/(archive|reminders)$/.test(path) ? 204 : 200);
    if (res.status !== wanted) throw new Error(`${method} ${path} → ${res.status} (wanted ${wanted}): ${res.text}`);
    return res.body;
  }

  get = <T = any>(path: string) => this.ok<T>("GET", path);
  chat = (chatID: string) => this.get<Chat>(chatPath(chatID));
  message = (chatID: string, messageID: string) => this.get<Message>(messagePath(chatID, messageID));

  async chats(query = ""): Promise<Chat[]> {
    const out: Chat[] = [];
    let cursor: string | null = null;
    for (;;) {
      const sep = query ? "&" : "";
      const page: Page<Chat> = await this.get(`/v1/chats?${query}${cursor ? `${sep}cursor=${enc(cursor)}` : ""}`);
      out.push(...page.items);
      if (!page.hasMore || !page.oldestCursor) return out;
      cursor = page.oldestCursor;
    }
  }

  async send(chatID: string, text: string): Promise<string> {
    const res = await this.ok<{ pendingMessageID: string }>("POST", `${chatPath(chatID)}/messages`, { text });
    return res.pendingMessageID;
  }

  /** Waits until a sent message has left PENDING (edits and deletes refuse pending messages). */
  settled(chatID: string, messageID: string): Promise<Message> {
    return waitFor(`message ${messageID} to leave PENDING`, async () => {
      const m = await this.message(chatID, messageID);
      return m.sendStatus?.status === "PENDING" ? undefined : m;
    });
  }

  async echoChat(accountID: string): Promise<Chat> {
    const chats = await this.chats(`accountIDs=${enc(accountID)}`);
    const chat = chats.find((c) => c.type === "single" && c.participants.items.some((p) => p.id === ECHO_ID));
    if (!chat) throw new Error(`no Echo chat for ${accountID}`);
    return chat;
  }

  /** A direct chat of the account that is not Echo's (quiet: nobody answers there). */
  async quietChats(accountID: string, n: number): Promise<Chat[]> {
    const chats = await this.chats(`accountIDs=${enc(accountID)}`);
    const quiet = chats.filter((c) => !c.participants.items.some((p) => p.id === ECHO_ID));
    if (quiet.length < n) throw new Error(`only ${quiet.length} quiet chats for ${accountID}`);
    return quiet.slice(0, n);
  }
}

export interface User {
  id: string;
  fullName?: string;
  isSelf?: boolean;
}
export interface Message {
  id: string;
  chatID: string;
  accountID: string;
  senderID: string;
  text?: string;
  isSender?: boolean;
  linkedMessageID?: string;
  editedTimestamp?: string;
  reactions?: { id: string; participantID: string; reactionKey: string }[];
  sendStatus?: { status: string; timestamp: string };
}
export interface Chat {
  id: string;
  accountID: string;
  title: string;
  type: "single" | "group";
  participants: { items: User[]; hasMore: boolean; total: number };
  unreadCount: number;
  isArchived?: boolean;
  isPinned?: boolean;
  isMuted?: boolean;
  isMarkedUnread?: boolean;
  description?: string | null;
  lastReadMessageSortKey?: string;
  reminder?: { remindAt: string; remindAtMs: number; dismissOnIncomingMessage: boolean; isFired: boolean; firedAt?: string };
  preview?: Message;
}
export interface Page<T> {
  items: T[];
  hasMore: boolean;
  oldestCursor: string | null;
  newestCursor: string | null;
}

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
  next<T extends Frame = Frame>(match: (f: Frame) => boolean, options: { from?: number; timeoutMs?: number; what?: string } = {}): Promise<T> {
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
          reject(new Error(`connection closed (${this.closed.code} ${this.closed.reason}) while waiting for ${options.what ?? "a frame"}; got ${this.describe(from)}`));
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? "a frame"}; got ${this.describe(from)}`));
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
  event(type: WsEvent["type"], chatID: string, options: { from?: number; timeoutMs?: number; where?: (e: WsEvent) => boolean } = {}): Promise<WsEvent> {
    return this.next<WsEvent>((f) => f.type === type && f.chatID === chatID && typeof f.seq === "number" && (options.where?.(f as WsEvent) ?? true), {
      ...options,
      what: `${type} on ${chatID}`,
    });
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
    if (answer.type !== "subscriptions.updated") throw new Error(`subscriptions.set answered ${JSON.stringify(answer)}`);
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
    const shown = this.frames.slice(from).map((f) => `${f.type}${f.chatID ? `@${f.chatID}` : ""}${f.ids ? `[${f.ids.join(",")}]` : ""}`);
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
  const ws = new WebSocket(wsURL(url), options.protocols ?? [], { headers, origin: options.origin, ...options.wsOptions });
  const conn = new Conn(ws);
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(conn));
    ws.once("unexpected-response", (_req, res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode} ${text}`), { status: res.statusCode, body: text, headers: res.headers })));
    });
    ws.once("error", (error) => reject(error));
  });
}

/** Opens /v1/ws, waits for the ready frame and, when given, sets the subscriptions. */
export async function connect(url: string, token: string, chatIDs?: string[], options: ConnectOptions = {}): Promise<Conn> {
  const conn = await open(url, { token, ...options });
  await conn.next((f) => f.type === "ready", { what: "the ready frame" });
  if (chatIDs) await conn.subscribe(chatIDs);
  return conn;
}

/** The upgrade refusal (status and body) of a connection attempt that should fail. */
export async function refusal(url: string, options: ConnectOptions): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
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
  return typeof timestamp === "string" && delivery.headers["x-inboxd-signature"] === `sha256=${hmacHex(secret, `${timestamp}.${delivery.body}`)}`;
}
