import * as v from "valibot";
import { ApiError, type Issue } from "../errors.ts";

declare global {
  interface String {
    /** ES2024; in Node 20+ and workerd, not yet in this project's ES2023 lib. */
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/**
 * Every bound on what a client may send, in one place; the "Limits" table of docs/limits-and-behaviour.md lists these
 * values, and src/schema/limits.test.ts checks that the table and this object agree. Sizes of strings are UTF-8 bytes, so a
 * limit means the same for every script. Too long is refused (400, or 413/414 for whole bodies and URLs), never
 * truncated: a stored message is exactly what was sent.
 */
export const LIMITS = {
  /**
   * Message text (send, edit) and drafts. Networks cap a message at 4–64 KB (Telegram 4,096 characters, Matrix
   * events 64 KiB in all, XMPP servers commonly 64–256 KB per stanza): 64 KiB passes to any of them whole.
   */
  textBytes: 64 * 1024,
  /** Chat titles (networks: 100–255 characters). */
  titleBytes: 1024,
  /** Chat descriptions and other free text that is not a message. */
  descriptionBytes: 4096,
  /** Any ID: chat, message, account, upload, webhook, login, session, flow, step, reaction key, transaction ID. */
  idBytes: 512,
  /** Opaque pagination cursors (the server's own are well under this). */
  cursorBytes: 1024,
  /** URLs in bodies and queries (webhook URLs, asset URLs). */
  urlBytes: 4096,
  /** Search text and other short free-text query values. */
  queryTextBytes: 1024,
  /** The whole query string of a request (below the daemon's 16 KiB for the request line and headers together). */
  queryStringBytes: 8 * 1024,
  /** Any other string in a JSON body (names, login fields, …). */
  stringBytes: 64 * 1024,
  /** Items of an array in a body or query (participant IDs, chat IDs of a webhook, account filters). */
  arrayItems: 1000,
  /** JSON request bodies, except base64 uploads. */
  jsonBodyBytes: 1024 * 1024,
  /** JSON body of a base64 upload: 25 MiB of data is about 35 MB of base64, plus the other fields. */
  base64BodyBytes: 40 * 1024 * 1024,
  /** Decoded bytes of a base64 upload. */
  base64DataBytes: 25 * 1024 * 1024,
  /** A chat picture (PATCH /v1/chats/{chatID} `imgURL`), uploaded or read from a local path. */
  avatarBytes: 10 * 1024 * 1024,
  /** The file of a multipart upload. */
  uploadBytes: 500 * 1024 * 1024,
  /** A multipart upload's whole body: the file plus its part headers and the small fields. */
  uploadBodyBytes: 500 * 1024 * 1024 + 1024 * 1024,
  /** Parts of a multipart upload (file, fileName, mimeType; the rest is tolerated up to this). */
  multipartParts: 16,
  /** The headers of one multipart part. */
  multipartHeaderBytes: 16 * 1024,
  /** Webhooks of one device. */
  webhooks: 20,
  /** A WebSocket message from a client. */
  webSocketMessageBytes: 256 * 1024,
  /**
   * Characters of a message's text shown as a chat's preview in lists and events (longer texts end in "…"): chat
   * records live in memory and fill every list.
   */
  previewChars: 500,
  /** Characters of an offending value quoted back in an error message. */
  errorQuoteChars: 100,
} as const;

export const utf8Length = (text: string) => {
  // Fast path: each UTF-16 unit is 1–3 UTF-8 bytes, so short strings cannot exceed any limit here.
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? (i++, 4) : 3;
  }
  return bytes;
};

/** 400 (or 413/414 for whole bodies and URLs) for a value longer than its limit, naming where it is. */
export function tooLong(what: string, limit: number, path: Issue["path"], status = 400, unit = "bytes"): ApiError {
  const message = `${what} is longer than ${limit} ${unit}`;
  const code = status === 413 ? "PAYLOAD_TOO_LARGE" : status === 414 ? "URI_TOO_LONG" : "INVALID_REQUEST";
  return new ApiError(status, code, message, { issues: [{ code: "too_long", message, path }] });
}

/** A string of at most `maxBytes` UTF-8 bytes. */
export const bounded = (maxBytes: number) =>
  v.pipe(v.string(), v.maxBytes(maxBytes, `must be at most ${maxBytes} bytes`));
/** A non-empty ID. */
export const id = v.pipe(
  v.string(),
  v.minLength(1, "must not be empty"),
  v.maxBytes(LIMITS.idBytes, `must be at most ${LIMITS.idBytes} bytes`),
);
export const boundedArray = <T extends v.GenericSchema>(item: T) =>
  v.pipe(v.array(item), v.maxLength(LIMITS.arrayItems, `must have at most ${LIMITS.arrayItems} items`));

/** No body of this API nests more than a few levels; a deeper one is refused before it is walked any further. */
const MAX_JSON_DEPTH = 32;

/**
 * Every string inside a parsed JSON body must be well-formed UTF-16 (JSON's `\ud800` escapes can make lone
 * surrogates, which no UTF-8 store, URL or network can carry) and at most `maxBytes` long unless a field's own
 * schema allows more (`allowLonger`, by top-level key).
 */
export function checkJsonStrings(
  value: unknown,
  maxBytes: number,
  allowLonger: readonly string[] = [],
  path: Issue["path"] = ["body"],
): void {
  if (path.length > MAX_JSON_DEPTH)
    throw new ApiError(400, "INVALID_REQUEST", `the request body nests deeper than ${MAX_JSON_DEPTH} levels`, {
      issues: [{ code: "too_deep", message: `nested deeper than ${MAX_JSON_DEPTH} levels`, path: path.slice(0, 3) }],
    });
  if (typeof value === "string") {
    if (!value.isWellFormed())
      throw new ApiError(400, "INVALID_REQUEST", `invalid ${path.join(".")}: a string holds a lone surrogate`, {
        issues: [{ code: "invalid_unicode", message: "string is not well-formed Unicode (lone surrogate)", path }],
      });
    if (
      value.length > maxBytes / 3 &&
      utf8Length(value) > maxBytes &&
      !(path.length === 2 && allowLonger.includes(String(path[1])))
    )
      throw tooLong(path.join("."), maxBytes, path);
    return;
  }
  if (Array.isArray(value)) {
    if (value.length > LIMITS.arrayItems) throw tooLong(path.join("."), LIMITS.arrayItems, path, 400, "items");
    value.forEach((item, i) => checkJsonStrings(item, maxBytes, allowLonger, [...path, i]));
    return;
  }
  if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      checkJsonStrings(key, maxBytes, [], path);
      checkJsonStrings(item, maxBytes, allowLonger, [...path, key]);
    }
  }
}
