import { ApiError, clip, forbidden, unauthorized } from "../errors.ts";
import { isProxied } from "./proxied.ts";
import { isLoopbackHost } from "../util/hosts.ts";
import type { Scope, TokenVerifier } from "../services/tokens.ts";

export interface GuardOptions {
  /**
   * Host names (without port) the server answers to. Defaults to loopback names only, which defeats DNS rebinding:
   * a page on evil.example that rebinds its name to 127.0.0.1 still sends `Host: evil.example`. "*" disables the
   * check (remote access behind a proxy, or the Worker).
   */
  allowedHosts?: string[] | "*";
}

export function hostAllowed(host: string | null, options: GuardOptions): boolean {
  if (options.allowedHosts === "*") return true;
  if (!host) return false;
  const name = host.replace(/:\d+$/, "").toLowerCase();
  return isLoopbackHost(name) || (options.allowedHosts ?? []).some((allowed) => allowed.toLowerCase() === name);
}

/**
 * Refuses requests that a browser made on behalf of another site. A bearer token already stops blind CSRF (a form
 * cannot set Authorization); this also stops a page from probing the API with a token it somehow holds.
 * `readableCrossOrigin`: only the Host is checked (the discovery documents under remote access, src/http/cors.ts).
 */
export function checkRequestOrigin(request: Request, url: URL, options: GuardOptions, readableCrossOrigin = false) {
  const host = request.headers.get("host") ?? url.host;
  if (!isProxied(request) && !hostAllowed(host, options)) throw hostNotAllowed(host);
  if (readableCrossOrigin) return;
  const site = request.headers.get("sec-fetch-site");
  const origin = request.headers.get("origin");
  // `Origin: null` comes from sandboxed iframes, file:// pages and some redirects: a page whose site cannot be
  // told, so it is refused like a foreign one. A page of this server's own origin (the public one, behind a
  // proxy) is at home.
  if (
    site === "cross-site" ||
    origin === "null" ||
    (origin && origin !== url.origin && !hostAllowed(safeHost(origin), options))
  )
    throw new ApiError(403, "CROSS_SITE_REQUEST", "cross-site requests are not allowed");
}

/** The daemon's refusal of a foreign Host (the Worker answers any): it names the option that allows one. */
function hostNotAllowed(host: string | null) {
  const name = clip((host ?? "").replace(/:\d+$/, ""), 100) || "(none)";
  return new ApiError(
    403,
    "HOST_NOT_ALLOWED",
    `Host ${name} is not allowed: this server answers only to loopback host names (localhost, 127.0.0.1, [::1]); to reach it as ${name}, start it with --allow-host ${name}`,
  );
}

export function safeHost(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

export interface Principal {
  id: string;
  name: string;
  scopes: Scope[];
  /** OAuth-issued tokens: the client, and when the token expires (ms since epoch). */
  clientID?: string;
  expiresAt?: number;
  createdAt?: string;
}

export async function authenticate(request: Request, tokens: TokenVerifier): Promise<Principal> {
  const header = request.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw unauthorized();
  const record = await tokens.verify(match[1]);
  if (!record) throw unauthorized();
  return {
    id: record.id,
    name: record.name,
    scopes: record.scopes,
    clientID: record.clientID,
    expiresAt: record.expiresAt,
    createdAt: record.createdAt,
  };
}

/** Reads need `read`; anything that changes state needs `write`. */
export function requiredScope(method: string): Scope {
  return method === "GET" || method === "HEAD" ? "read" : "write";
}

export function authorize(principal: Principal, scope: Scope) {
  // The spec's words first (clients may match them), then what would help.
  if (!principal.scopes.includes(scope))
    throw forbidden(
      `access token does not have the required scope: this needs ${scope}, and the token has ${principal.scopes.join(" and ") || "none"} (inboxd token create gives read and write)`,
    );
}
