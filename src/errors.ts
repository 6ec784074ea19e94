/**
 * The one error type of the API. Services throw it; `toErrorResponse` (src/http/errors.ts) is the only place that
 * turns it into the /v1 wire body `{code, message, details?}` (wire-compat §2).
 */
export interface Issue {
  code: string;
  message: string;
  path: (string | number)[];
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: { issues: Issue[] } | Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

/**
 * Thrown by a service that answers while start-up still reads the older chats (Db.loading) when its answer needs
 * more than the newest ones: the operation is run again once every chat is loaded (src/http/route-kit.ts).
 */
export class ChatsStillLoading extends Error {
  constructor() {
    super("the chats older than the newest are still being read at start-up");
  }
}

export const badRequest = (message: string, issues?: Issue[]) =>
  new ApiError(400, "INVALID_REQUEST", message, issues ? { issues } : undefined);
/**
 * RFC 6750: a 401 names the scheme to use (MCP clients read it to learn that a bearer token is expected). The message
 * says where a token comes from: the daemon's `inboxd token create`, or the Worker's admin-token secret.
 */
const UNAUTHORIZED_MESSAGE =
  "access token is missing or invalid: send the header Authorization: Bearer <token>, with a token from `inboxd token create` (on a Cloudflare Worker: its admin token, the INBOXD_ADMIN_TOKEN secret)";
export const unauthorized = () =>
  new ApiError(401, "UNAUTHORIZED", UNAUTHORIZED_MESSAGE, undefined, { "www-authenticate": 'Bearer realm="inboxd"' });
export const forbidden = (message = "access token does not have the required scope") =>
  new ApiError(403, "FORBIDDEN", message);
export const notFound = (what: string) => new ApiError(404, "NOT_FOUND", `${clip(what, 120)} not found`);
export const unprocessable = (message: string, path?: (string | number)[]) =>
  new ApiError(
    422,
    "UNPROCESSABLE_ENTITY",
    message,
    path ? { issues: [{ code: "invalid", message, path }] } : undefined,
  );
/** A conflict that retrying cannot fix: tell the SDKs (which retry 409s) not to. */
export const conflict = (message: string) =>
  new ApiError(409, "CONFLICT", message, undefined, { "x-should-retry": "false" });

/**
 * At most `max` characters of a client's value, for quoting it back (a 10 MB ID must not come back as a 10 MB 404);
 * 100 is LIMITS.errorQuoteChars (limits.ts imports this module, so the number is repeated here).
 */
export function clip(value: string, max = 100): string {
  if (value.length <= max) return value;
  const cut = /[\uD800-\uDBFF]/.test(value[max - 1]) ? max - 1 : max; // never split a surrogate pair
  return `${value.slice(0, cut)}…`;
}
