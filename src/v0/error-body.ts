/**
 * The /v0 error body `{error, code?, details?}` (spec, "Error body (deprecated /v0 endpoints)"): every failure of a
 * /v0 path answers with it — validation, authentication, scope, unknown chats, unknown paths — with the same status
 * and headers /v1 would send.
 */
import * as v from "valibot";
import { ApiError, clip, type Issue } from "../errors.ts";

export const V0ErrorBody = v.pipe(
  v.strictObject({
    error: v.pipe(v.string(), v.description("What went wrong, for a person to read.")),
    code: v.optional(
      v.pipe(
        v.string(),
        v.description("Machine-readable code, the same as /v1's: INVALID_REQUEST, UNAUTHORIZED, FORBIDDEN, NOT_FOUND…"),
      ),
    ),
    details: v.optional(
      v.pipe(
        v.record(v.string(), v.string()),
        v.description(
          "For an invalid request: where each problem is (`query.limit`, `body.chatID`) → what is wrong with it.",
        ),
      ),
    ),
  }),
  v.description("The error body of the deprecated /v0 endpoints."),
);
export type V0ErrorBody = v.InferOutput<typeof V0ErrorBody>;

/** The name the OpenAPI document gives the body (its /v0 operations refer to it). */
export const V0_ERROR_COMPONENT = "V0Error";

/** As /v1 bounds its messages: client values quoted in them must not make an answer grow with the request. */
const MAX_TEXT_CHARS = 300;
const MAX_DETAILS = 20;

export function v0ErrorBody(error: unknown): V0ErrorBody {
  if (!(error instanceof ApiError)) return { error: "internal server error", code: "INTERNAL_ERROR" };
  const body: V0ErrorBody = { error: clip(error.message, MAX_TEXT_CHARS), code: error.code };
  const details = error.details && flatten(error.details);
  if (details && Object.keys(details).length) body.details = details;
  return body;
}

export function v0ErrorResponse(error: unknown): Response {
  const status = error instanceof ApiError ? error.status : 500;
  const headers = error instanceof ApiError ? error.headers : undefined;
  return new Response(JSON.stringify(v0ErrorBody(error)), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/**
 * /v1 details are `{issues: [{path, message}]}` (or, rarely, free-form); /v0's are a flat map of strings. An issue
 * becomes `"query.limit": "<message>"`, the first one per place winning; anything else is written as text.
 */
function flatten(details: NonNullable<ApiError["details"]>): Record<string, string> {
  // No prototype: a client's field named "constructor" or "__proto__" is a place like any other.
  const out: Record<string, string> = Object.create(null);
  const issues = (details as { issues?: Issue[] }).issues;
  const entries: [string, unknown][] = Array.isArray(issues)
    ? issues.map((issue) => [issue.path.join("."), issue.message])
    : Object.entries(details);
  for (const [key, value] of entries) {
    if (Object.keys(out).length === MAX_DETAILS) break;
    const place = clip(key || "request", 200);
    out[place] ??= clip(typeof value === "string" ? value : (JSON.stringify(value) ?? String(value)), MAX_TEXT_CHARS);
  }
  return out;
}
