// Worker-side Request: this file reads requests the Worker received, before any object sees them.
import type { Request } from "@cloudflare/workers-types/index.ts";
import { cookie, SESSION_COOKIE } from "../../src/oauth/authorize.ts";
import { inboxOf } from "../../src/tenancy.ts";

/** The OAuth endpoints whose form carries the request's credential, and the field that holds it. */
const FORM_CREDENTIAL: Record<string, (form: URLSearchParams) => string | null> = {
  "/oauth/token": (form) => form.get(form.get("grant_type") === "refresh_token" ? "refresh_token" : "code"),
  "/oauth/introspect": (form) => form.get("token"),
  "/oauth/revoke": (form) => form.get("token"),
  "/oauth/login": (form) => form.get("code"),
};

/** Forms are small; a bigger body is not read here, and such a request names no inbox. */
const MAX_FORM_BYTES = 64 * 1024;

/**
 * The inbox a request is for, in a deployment of many (src/tenancy.ts): the one its credential names — a form's
 * code or token on the OAuth endpoints that take one, a one-time sign-in link's code, then the bearer token (header,
 * or a WebSocket's `bearer.` subprotocol), then the browser's session cookie. Undefined when it carries none.
 *
 * Only a secret counts, never a header or path the client may set to anything: the inbox it names checks the secret
 * against its own store, so naming another inbox gets a refusal there.
 */
export async function inboxFor(request: Request): Promise<string | undefined> {
  const url = new URL(request.url);
  const fromForm = FORM_CREDENTIAL[url.pathname];
  let secret: string | null | undefined;
  if (fromForm && request.method === "POST" && isSmallForm(request)) {
    // A copy is read: the object gets the request as it came (its body is at most 64 KiB).
    secret = fromForm(new URLSearchParams(await request.clone().text()));
  }
  if (!secret && url.pathname === "/oauth/login") secret = url.searchParams.get("code");
  secret ||=
    /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1] ??
    bearerSubprotocol(request) ??
    cookie(request as unknown as globalThis.Request, SESSION_COOKIE);
  return secret ? inboxOf(secret) : undefined;
}

function isSmallForm(request: Request): boolean {
  const type = request.headers.get("content-type") ?? "";
  const length = Number(request.headers.get("content-length") ?? Number.NaN);
  return type.startsWith("application/x-www-form-urlencoded") && Number.isFinite(length) && length <= MAX_FORM_BYTES;
}

function bearerSubprotocol(request: Request): string | undefined {
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return undefined;
  return (request.headers.get("sec-websocket-protocol") ?? "")
    .split(",")
    .map((p) => p.trim())
    .find((p) => p.startsWith("bearer."))
    ?.slice("bearer.".length);
}
