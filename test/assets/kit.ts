/**
 * Plumbing of the asset suite: a raw HTTP client that shows what went over the wire, multipart bodies built by hand
 * (streamed when large), and waiting helpers. Nothing here asserts.
 */
import { createHash, randomBytes } from "node:crypto";
import BeeperDesktop from "@beeper/desktop-api";
import { generated } from "./fixtures.ts";

export type Scope = "read" | "write";
export interface StartOptions {
  seed: { chats: number; messages: number; accounts?: number; seed?: number };
  tokens: { token: string; scopes: Scope[] }[];
}
export type Start = (options: StartOptions) => Promise<{ url: string; stop(): Promise<void> }>;

export const randomToken = (prefix: string) => `${prefix}_${randomBytes(18).toString("base64url")}`;
export const enc = encodeURIComponent;
export const chatPath = (chatID: string) => `/v1/chats/${enc(chatID)}`;
export const messagePath = (chatID: string, messageID: string) => `${chatPath(chatID)}/messages/${enc(messageID)}`;
export const servePath = (url: string) => `/v1/assets/serve?url=${enc(url)}`;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const ECHO_ID = "@echo:sandbox.invalid";

export function sdk(url: string, token: string) {
  return new BeeperDesktop({ baseURL: url, accessToken: token, maxRetries: 0, logLevel: "off" });
}

export interface Upload {
  uploadID: string;
  srcURL: string;
  fileName: string;
  mimeType: string;
  fileSize: number;
  width?: number;
  height?: number;
  duration?: number;
}

export interface Attachment {
  type: string;
  id?: string;
  srcURL?: string;
  mimeType?: string;
  fileName?: string;
  fileSize?: number;
  size?: { width: number; height: number };
  duration?: number;
  isGif?: boolean;
  isSticker?: boolean;
  isVoiceNote?: boolean;
}
export interface Message {
  id: string;
  chatID: string;
  senderID: string;
  type?: string;
  text?: string;
  isSender?: boolean;
  linkedMessageID?: string;
  attachments?: Attachment[];
  sendStatus?: { status: string };
}
export interface Chat {
  id: string;
  accountID: string;
  type: "single" | "group";
  participants: { items: { id: string }[] };
}

export interface Answer<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export class Api {
  constructor(
    readonly url: string,
    readonly token: string | null,
  ) {}

  withToken(token: string | null) {
    return new Api(this.url, token);
  }

  async raw<T = any>(method: string, path: string, init: { json?: unknown; body?: BodyInit; headers?: Record<string, string>; duplex?: boolean } = {}): Promise<Answer<T>> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let body = init.body;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers["content-type"] ??= "application/json";
    }
    const res = await fetch(`${this.url}${path}`, { method, headers, body, ...(init.duplex ? { duplex: "half" } : {}) } as RequestInit);
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    return { status: res.status, headers: res.headers, text, body: parsed as T };
  }

  /** A setup step: throws with the response shown unless the status is the expected one. */
  async ok<T = any>(method: string, path: string, json?: unknown, status = 200): Promise<T> {
    const res = await this.raw<T>(method, path, { json });
    if (res.status !== status) throw new Error(`${method} ${path} → ${res.status} (wanted ${status}): ${res.text}`);
    return res.body;
  }

  /** Multipart upload of a FormData (what browsers and the SDK send). */
  upload(form: FormData) {
    return this.raw<Upload>("POST", "/v1/assets/upload", { body: form });
  }

  async uploadBytes(bytes: Uint8Array<ArrayBuffer>, fileName: string, type?: string): Promise<Upload> {
    const form = new FormData();
    form.append("file", new Blob([bytes], type ? { type } : {}), fileName);
    const res = await this.upload(form);
    if (res.status !== 200) throw new Error(`upload ${fileName} → ${res.status}: ${res.text}`);
    return res.body;
  }

  /** GET /v1/assets/serve, body as bytes. */
  async serve(url: string, headers: Record<string, string> = {}, method = "GET") {
    const h: Record<string, string> = { ...headers };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    const res = await fetch(`${this.url}${servePath(url)}`, { method, headers: h });
    const bytes = new Uint8Array(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes, h: (name: string) => res.headers.get(name) };
  }

  /** GET /v1/assets/serve, hashing the body as it streams (for files too large to hold twice). */
  async serveHash(url: string, headers: Record<string, string> = {}) {
    const h: Record<string, string> = { ...headers };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    const res = await fetch(`${this.url}${servePath(url)}`, { headers: h });
    const hash = createHash("sha256");
    let length = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      length += chunk.length;
    }
    return { status: res.status, headers: res.headers, length, sha256: hash.digest("hex") };
  }

  async send(chatID: string, body: unknown) {
    return this.raw<{ chatID: string; pendingMessageID: string }>("POST", `${chatPath(chatID)}/messages`, { json: body });
  }

  message = (chatID: string, messageID: string) => this.ok<Message>("GET", messagePath(chatID, messageID));

  async chats(query = ""): Promise<Chat[]> {
    const out: Chat[] = [];
    let cursor: string | null = null;
    for (;;) {
      const page: { items: Chat[]; hasMore: boolean; oldestCursor: string | null } = await this.ok("GET", `/v1/chats?${query}${cursor ? `&cursor=${enc(cursor)}` : ""}`);
      out.push(...page.items);
      if (!page.hasMore || !page.oldestCursor) return out;
      cursor = page.oldestCursor;
    }
  }

  async echoChat(): Promise<Chat> {
    const chat = (await this.chats()).find((c) => c.type === "single" && c.participants.items.some((p) => p.id === ECHO_ID));
    if (!chat) throw new Error("no Echo chat");
    return chat;
  }

  async quietChat(): Promise<Chat> {
    const chat = (await this.chats()).find((c) => c.type === "single" && !c.participants.items.some((p) => p.id === ECHO_ID));
    if (!chat) throw new Error("no quiet chat");
    return chat;
  }

  /** Waits until a sent message has left PENDING. */
  settled(chatID: string, messageID: string): Promise<Message> {
    return waitFor(`message ${messageID} to leave PENDING`, async () => {
      const m = await this.message(chatID, messageID);
      return m.sendStatus?.status === "PENDING" ? undefined : m;
    });
  }

  /** The newest messages of a chat (first page). */
  async recent(chatID: string): Promise<Message[]> {
    return (await this.ok<{ items: Message[] }>("GET", `${chatPath(chatID)}/messages`)).items;
  }
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Multipart bodies by hand.

export const BOUNDARY = "----inboxdAssetSuite9f2c1e";
const te = { encode: (s: string) => new TextEncoder().encode(s) as Uint8Array<ArrayBuffer> };

export interface Part {
  name: string;
  filename?: string;
  type?: string;
  content: Uint8Array | string;
}

export function partHead(p: { name: string; filename?: string; type?: string }, boundary = BOUNDARY): Uint8Array<ArrayBuffer> {
  const filename = p.filename === undefined ? "" : `; filename="${p.filename}"`;
  return te.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${filename}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ""}\r\n`);
}

export function multipart(parts: Part[], { close = true } = {}): Uint8Array<ArrayBuffer> {
  const pieces: Uint8Array[] = [];
  for (const p of parts) {
    pieces.push(partHead(p), typeof p.content === "string" ? te.encode(p.content) : p.content, te.encode("\r\n"));
  }
  if (close) pieces.push(te.encode(`--${BOUNDARY}--\r\n`));
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export const multipartType = `multipart/form-data; boundary=${BOUNDARY}`;

/**
 * A multipart body streamed on demand: the generated file of `size` bytes (fixtures.generated) in a part `file`,
 * then optional fields. Nothing is held beyond one piece. `abortAfter` ends the stream with an error after that
 * many file bytes (a client that goes away mid-upload).
 */
export function streamedUpload(
  size: number,
  options: { fileName?: string; type?: string; fieldsAfter?: Record<string, string>; abortAfter?: number; zeros?: boolean } = {},
): ReadableStream<Uint8Array> {
  const source = options.zeros ? zeros(size) : generated(size);
  let stage: "head" | "file" | "tail" | "done" = "head";
  let sent = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (stage === "head") {
          stage = "file";
          return c.enqueue(partHead({ name: "file", filename: options.fileName ?? "big.bin", type: options.type ?? "application/octet-stream" }));
        }
        if (stage === "file") {
          if (options.abortAfter !== undefined && sent >= options.abortAfter) return c.error(new Error("client went away"));
          const next = source.next();
          if (!next.done) {
            sent += next.value.length;
            return c.enqueue(next.value);
          }
          stage = "tail";
        }
        if (stage === "tail") {
          stage = "done";
          let tail = "\r\n";
          for (const [name, value] of Object.entries(options.fieldsAfter ?? {}))
            tail += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
          return c.enqueue(te.encode(`${tail}--${BOUNDARY}--\r\n`));
        }
        c.close();
      },
    },
    { highWaterMark: 0 },
  );
}

/** `size` zero bytes in 1 MiB pieces (one shared buffer: cheap for very large bodies whose content does not matter). */
function* zeros(size: number): Generator<Uint8Array> {
  const piece = new Uint8Array(1 << 20);
  for (let at = 0; at < size; at += piece.length) yield size - at >= piece.length ? piece : piece.subarray(0, size - at);
}

export const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
