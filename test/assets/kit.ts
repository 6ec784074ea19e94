/**
 * Plumbing of the asset suite on top of the one client (test/kit/http.ts): uploads, serving (as bytes, or hashed as
 * it streams), multipart bodies built by hand (streamed when large). Nothing here asserts.
 */
import { createHash } from "node:crypto";
import BeeperDesktop from "@beeper/desktop-api";
import type * as v from "valibot";
import type { Upload as UploadSchema } from "../../src/schema/bridges.ts";
import type { Chat } from "../../src/schema/wire.ts";
import { ECHO_ID, enc } from "../kit/common.ts";
import type { Api } from "../kit/http.ts";
import { generated } from "./fixtures.ts";

/** The answer of POST /v1/assets/upload. */
export type Upload = v.InferOutput<typeof UploadSchema>;

export const servePath = (url: string) => `/v1/assets/serve?url=${enc(url)}`;

export function sdk(url: string, token: string) {
  return new BeeperDesktop({ baseURL: url, accessToken: token, maxRetries: 0, logLevel: "off" });
}

/** Multipart upload of a FormData (what browsers and the SDK send). */
export const uploadForm = (api: Api, form: FormData) => api.raw<Upload>("POST", "/v1/assets/upload", { body: form });

export async function uploadBytes(
  api: Api,
  bytes: Uint8Array<ArrayBuffer>,
  fileName: string,
  type?: string,
): Promise<Upload> {
  const form = new FormData();
  form.append("file", new Blob([bytes], type ? { type } : {}), fileName);
  const res = await uploadForm(api, form);
  if (res.status !== 200) throw new Error(`upload ${fileName} → ${res.status}: ${res.text}`);
  return res.body;
}

/** GET /v1/assets/serve, body as bytes. */
export async function serveAsset(api: Api, url: string, headers: Record<string, string> = {}, method = "GET") {
  const res = await api.bytes(method, servePath(url), { headers: { accept: "*/*", ...headers } });
  return { ...res, h: (name: string) => res.headers.get(name) };
}

/** GET /v1/assets/serve, hashing the body as it streams (for files too large to hold twice). */
export async function serveHash(api: Api, url: string, headers: Record<string, string> = {}) {
  const res = await api.response("GET", servePath(url), { headers: { accept: "*/*", ...headers } });
  const hash = createHash("sha256");
  let length = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    length += chunk.length;
  }
  return { status: res.status, headers: res.headers, length, sha256: hash.digest("hex") };
}

/** A direct chat where nobody answers (not Echo's). */
export async function quietChat(api: Api): Promise<Chat> {
  const chat = (await api.chats()).find(
    (c) => c.type === "single" && !c.participants.items.some((p) => p.id === ECHO_ID),
  );
  if (!chat) throw new Error("no quiet chat");
  return chat;
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

export function partHead(
  p: { name: string; filename?: string; type?: string },
  boundary = BOUNDARY,
): Uint8Array<ArrayBuffer> {
  const filename = p.filename === undefined ? "" : `; filename="${p.filename}"`;
  return te.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${filename}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ""}\r\n`,
  );
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
  options: {
    fileName?: string;
    type?: string;
    fieldsAfter?: Record<string, string>;
    abortAfter?: number;
    zeros?: boolean;
  } = {},
): ReadableStream<Uint8Array> {
  const source = options.zeros ? zeros(size) : generated(size);
  let stage: "head" | "file" | "tail" | "done" = "head";
  let sent = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (stage === "head") {
          stage = "file";
          return c.enqueue(
            partHead({
              name: "file",
              filename: options.fileName ?? "big.bin",
              type: options.type ?? "application/octet-stream",
            }),
          );
        }
        if (stage === "file") {
          if (options.abortAfter !== undefined && sent >= options.abortAfter)
            return c.error(new Error("client went away"));
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
  for (let at = 0; at < size; at += piece.length)
    yield size - at >= piece.length ? piece : piece.subarray(0, size - at);
}

export const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
