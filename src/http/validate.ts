import * as v from "valibot";
import { ApiError, badRequest, clip, type Issue } from "../errors.ts";
import { checkJsonStrings, LIMITS, tooLong, utf8Length } from "../schema/limits.ts";
import { readAtMost } from "../util/read-at-most.ts";

/**
 * Query strings as the official clients encode them (wire-compat §3): `+` is a space, form-style (the Python SDK's
 * httpx sends a space as `+` and a plus as `%2B`; the TypeScript SDKs send `%20` and `%2B`, so no official client
 * sends a raw `+` meaning plus); a repeated key is an array; `key=` means "unset" and is dropped.
 */
export function parseQuery(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  const search = url.search.startsWith("?") ? url.search.slice(1) : url.search;
  if (!search) return out;
  if (search.length > LIMITS.queryStringBytes)
    throw tooLong(`the query string`, LIMITS.queryStringBytes, ["query"], 414);
  for (const part of search.split("&")) {
    if (!part) continue;
    const eq = part.indexOf("=");
    const rawKey = eq < 0 ? part : part.slice(0, eq);
    const rawValue = eq < 0 ? "" : part.slice(eq + 1);
    let key: string, value: string;
    try {
      key = decodeURIComponent(rawKey.replace(/\+/g, " ")).replace(/\[\]$/, "");
      value = decodeURIComponent(rawValue.replace(/\+/g, " "));
    } catch {
      throw badRequest("malformed query string", [
        { code: "invalid_encoding", message: "malformed percent-encoding", path: ["query", clip(rawKey)] },
      ]);
    }
    if (value === "") continue;
    const prev = out[key];
    out[key] = prev === undefined ? value : ([] as string[]).concat(prev, value);
  }
  return out;
}

/** Decodes one path segment exactly once; a malformed escape or an over-long value is a 400 naming the parameter. */
export function pathParam(params: Record<string, string> | undefined, name: string): string {
  const raw = params?.[name] ?? "";
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw badRequest(`malformed path parameter ${name}`, [
      { code: "invalid_encoding", message: "malformed percent-encoding", path: ["path", name] },
    ]);
  }
  if (utf8Length(value) > LIMITS.idBytes) throw tooLong(`path parameter ${name}`, LIMITS.idBytes, ["path", name]);
  return value;
}

/** valibot's words for a required key that is absent ('Invalid key: Expected "x" but received undefined'), plainly. */
const missingKey = (issue: v.BaseIssue<unknown>) =>
  issue.received === "undefined" && issue.message.startsWith("Invalid key:");

function toIssues(where: "query" | "body", issues: v.BaseIssue<unknown>[]): Issue[] {
  return issues.map((issue) => ({
    code: issue.type,
    // valibot quotes the whole received value ("… but received "<value>""); quote at most 100 characters of it.
    message: missingKey(issue)
      ? "is required, and missing"
      : issue.received.length > LIMITS.errorQuoteChars
        ? issue.message.split(issue.received).join(clip(issue.received, LIMITS.errorQuoteChars))
        : issue.message,
    path: [where, ...(issue.path?.map((p) => p.key as string | number) ?? [])],
  }));
}

export function validate<S extends v.GenericSchema>(
  where: "query" | "body",
  schema: S,
  input: unknown,
): v.InferOutput<S> {
  const result = v.safeParse(schema, input, { abortPipeEarly: true });
  if (result.success) return result.output;
  const issues = toIssues(where, result.issues);
  const first = issues[0];
  throw badRequest(`invalid ${first.path.join(".")}: ${first.message}`, issues);
}

/** What a route's JSON body may hold: its size (default LIMITS.jsonBodyBytes) and top-level fields allowed to be long. */
export interface BodyLimits {
  maxBytes?: number;
  /** Top-level string fields exempt from LIMITS.stringBytes (their schema bounds them instead). */
  allowLonger?: readonly string[];
}

/** Reads a JSON body; an absent body is `{}` (the SDKs send none for argument-less calls). */
export async function readJson(request: Request, limits: BodyLimits = {}): Promise<unknown> {
  const text = await readCapped(request, limits.maxBytes ?? LIMITS.jsonBodyBytes);
  if (text.trim() === "") return {};
  const type = request.headers.get("content-type") ?? "";
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type))
    throw new ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "request body must be application/json");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest("request body is not valid JSON", [
      { code: "invalid_json", message: "body is not valid JSON", path: ["body"] },
    ]);
  }
  // valibot's object() accepts arrays; every body of this API is an object.
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw badRequest("request body must be a JSON object", [
      { code: "invalid_type", message: "expected a JSON object", path: ["body"] },
    ]);
  checkJsonStrings(parsed, LIMITS.stringBytes, limits.allowLonger);
  return parsed;
}

export async function validateBody<S extends v.GenericSchema>(
  request: Request,
  schema: S,
  limits?: BodyLimits,
): Promise<v.InferOutput<S>> {
  return validate("body", schema, await readJson(request, limits));
}

/** The declared Content-Length over `limit` is refused before a byte of the body is read. */
export function refuseDeclaredLength(request: Request, limit: number, what = "request body"): void {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > limit) throw tooLong(what, limit, ["body"], 413);
}

/** The body as text, refused with 413 as soon as it passes `limit` bytes (declared or read). */
export async function readCapped(request: Request, limit: number): Promise<string> {
  refuseDeclaredLength(request, limit);
  // A declared length within the limit bounds the body (HTTP framing allows no more), so it is read in one go: on
  // the daemon a small body is already in memory (adapters/node/serve.ts), and a stream around it cost a twentieth
  // of a send's CPU. Fetch's text() drops a UTF-8 BOM, as TextDecoder below does; srvx's keeps it, so it goes here.
  if (request.headers.get("content-length") !== null) {
    const text = await request.text().catch(bodyReadFailed);
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
  if (!request.body) return "";
  const all = await readAtMost(request.body, limit).catch(bodyReadFailed);
  if (!all) throw tooLong("request body", limit, ["body"], 413);
  return new TextDecoder().decode(all);
}

/** A body that fails while being read: the runtime's own refusal (a timeout) as it is, else the client went away. */
export function bodyReadFailed(error: unknown): never {
  if (error instanceof ApiError) throw error;
  throw new ApiError(400, "INVALID_REQUEST", "the request body could not be read to its end");
}
