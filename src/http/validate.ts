import * as v from "valibot";
import { ApiError, badRequest, type Issue } from "./errors.ts";

/**
 * Query strings as the official clients encode them (wire-compat §3): RFC 3986, so `+` is a literal plus (not a
 * space, unlike URLSearchParams); a repeated key is an array; `key=` means "unset" and is dropped.
 */
export function parseQuery(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  const search = url.search.startsWith("?") ? url.search.slice(1) : url.search;
  if (!search) return out;
  for (const part of search.split("&")) {
    if (!part) continue;
    const eq = part.indexOf("=");
    const rawKey = eq < 0 ? part : part.slice(0, eq);
    const rawValue = eq < 0 ? "" : part.slice(eq + 1);
    let key: string, value: string;
    try {
      key = decodeURIComponent(rawKey).replace(/\[\]$/, "");
      value = decodeURIComponent(rawValue);
    } catch {
      throw badRequest("malformed query string", [{ code: "invalid_encoding", message: "malformed percent-encoding", path: ["query", rawKey] }]);
    }
    if (value === "") continue;
    const prev = out[key];
    out[key] = prev === undefined ? value : ([] as string[]).concat(prev, value);
  }
  return out;
}

/** Decodes one path segment exactly once; a malformed escape is a 400 naming the parameter. */
export function pathParam(params: Record<string, string> | undefined, name: string): string {
  const raw = params?.[name] ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    throw badRequest(`malformed path parameter ${name}`, [{ code: "invalid_encoding", message: "malformed percent-encoding", path: ["path", name] }]);
  }
}

function toIssues(where: "query" | "body", issues: v.BaseIssue<unknown>[]): Issue[] {
  return issues.map((issue) => ({
    code: issue.type,
    message: issue.message,
    path: [where, ...(issue.path?.map((p) => p.key as string | number) ?? [])],
  }));
}

export function validate<S extends v.GenericSchema>(where: "query" | "body", schema: S, input: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, input, { abortPipeEarly: true });
  if (result.success) return result.output;
  const issues = toIssues(where, result.issues);
  const first = issues[0];
  throw badRequest(`invalid ${first.path.join(".")}: ${first.message}`, issues);
}

/** JSON bodies are read whole, so they are capped (base64 uploads are the largest: 25 MB of data). */
export const MAX_JSON_BYTES = 40 * 1024 * 1024;

/** Reads a JSON body; an absent body is `{}` (the SDKs send none for argument-less calls). */
export async function readJson(request: Request): Promise<unknown> {
  const text = await readCapped(request, MAX_JSON_BYTES);
  if (text.trim() === "") return {};
  const type = request.headers.get("content-type") ?? "";
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type))
    throw new ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "request body must be application/json");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest("request body is not valid JSON", [{ code: "invalid_json", message: "body is not valid JSON", path: ["body"] }]);
  }
  // valibot's object() accepts arrays; every body of this API is an object.
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw badRequest("request body must be a JSON object", [{ code: "invalid_type", message: "expected a JSON object", path: ["body"] }]);
  return parsed;
}

export async function validateBody<S extends v.GenericSchema>(request: Request, schema: S): Promise<v.InferOutput<S>> {
  return validate("body", schema, await readJson(request));
}

// Reusable query field schemas (strings in, typed values out).
export const queryArray = v.pipe(
  v.union([v.string(), v.array(v.string())]),
  v.transform((x) => (Array.isArray(x) ? x : [x])),
);
export const queryBoolean = v.pipe(v.picklist(["true", "false"], "expected true or false"), v.transform((x) => x === "true"));
export const queryInt = (min: number, max: number) =>
  v.pipe(v.string(), v.regex(/^-?\d+$/, "expected an integer"), v.transform(Number), v.minValue(min), v.maxValue(max));
export const isoDate = v.pipe(
  v.string(),
  v.isoTimestamp("expected an ISO 8601 date-time"),
  v.transform((s) => Date.parse(s)),
);
export const direction = v.picklist(["before", "after"], "expected before or after");

async function readCapped(request: Request, limit: number): Promise<string> {
  if (Number(request.headers.get("content-length") ?? 0) > limit) throw tooLarge(limit);
  if (!request.body) return "";
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    parts.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return new TextDecoder().decode(all);
}

const tooLarge = (limit: number) => new ApiError(413, "PAYLOAD_TOO_LARGE", `JSON bodies are limited to ${limit} bytes`);
