import type { Storage } from "unstorage";
import { safeHost } from "../http/guard.ts";
import { verifyToken } from "../services/tokens.ts";
import { errorPage, escapeHtml, hidden, page } from "./pages.ts";
import { readForm, sameSecret } from "./form.ts";
import type { ClientRecord, OAuthStore } from "./store.ts";

/**
 * The browser half of the authorization code flow: the owner signs in (once, with a one-time code or the admin
 * token), then approves or denies each app on a consent page. Only the device's owner can approve; the app never
 * sees the page's session.
 */
export const SESSION_COOKIE = "inboxd_session";
const SESSION_TTL_MS = 30 * 86_400_000;
export const CODE_TTL_MS = 60_000;
const SCOPES = new Set(["read", "write"]);

export interface AuthorizeRequest {
  client: ClientRecord;
  redirectURI: string;
  state?: string;
  challenge: string;
  scopes: ("read" | "write")[];
  resource?: string;
}

/** Loopback http (any port when used, RFC 8252 §7.3) or https; no fragment. */
export function redirectURIAllowed(uri: string): boolean {
  const url = parse(uri);
  if (!url || url.hash || url.username || url.password) return false;
  return url.protocol === "https:" || (url.protocol === "http:" && isLoopbackName(url.hostname));
}

/** Exact match with a registered URI, the port aside for loopback http. */
export function redirectURIMatches(registered: string[], given: string): boolean {
  const url = parse(given);
  if (!url || !redirectURIAllowed(given)) return false;
  return registered.some((r) => {
    if (r === given) return true;
    const reg = parse(r);
    if (reg?.protocol !== "http:" || url.protocol !== "http:" || !isLoopbackName(url.hostname)) return false;
    reg.port = url.port;
    return reg.toString() === url.toString();
  });
}

const isLoopbackName = (host: string) => host === "127.0.0.1" || host === "[::1]" || host === "localhost";

function parse(uri: string): URL | undefined {
  try {
    return new URL(uri);
  } catch {
    return undefined;
  }
}

/** Checks the authorization request: an unknown app or redirect URI is shown as an error, never redirected to. */
/** A client by its ID: registered, or read from its metadata document (`refused` says why that could not be used). */
export type ClientLookup = (clientID: string) => Promise<ClientRecord | { refused: string } | null | undefined>;

export async function readAuthorizeRequest(
  clientOf: ClientLookup,
  params: URLSearchParams,
): Promise<{ ok: AuthorizeRequest } | { page: Response } | { redirect: Response }> {
  const client = await clientOf(params.get("client_id") ?? "");
  if (client && "refused" in client)
    return { page: errorPage(`This app's metadata document cannot be used: ${client.refused}.`) };
  if (!client)
    return {
      page: errorPage(
        "This app is not registered with inboxd, or its registration was removed. Sign in from the app again: it registers itself anew.",
      ),
    };
  const redirectURI = params.get("redirect_uri") ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0] : "");
  if (!redirectURIMatches(client.redirect_uris, redirectURI))
    return { page: errorPage("The app asked to return to an address it did not register.") };
  const state = params.get("state") ?? undefined;
  const fail = (error: string, description: string) => ({
    redirect: redirectTo(redirectURI, { error, error_description: description, state }),
  });
  if (params.get("response_type") !== "code")
    return fail("unsupported_response_type", "only response_type=code is supported");
  const challenge = params.get("code_challenge") ?? "";
  if (params.get("code_challenge_method") !== "S256" || !/^[A-Za-z0-9._~-]{43,128}$/.test(challenge))
    return fail("invalid_request", "PKCE with code_challenge_method=S256 is required");
  const asked = (params.get("scope") ?? "read write").split(" ").filter(Boolean);
  if (asked.length === 0 || asked.some((s) => !SCOPES.has(s)))
    return fail("invalid_scope", "scopes are read and write");
  const resource = params.get("resource") ?? undefined;
  if (resource !== undefined && !parse(resource)) return fail("invalid_target", "resource must be an absolute URI");
  return {
    ok: { client, redirectURI, state, challenge, scopes: [...new Set(asked)] as ("read" | "write")[], resource },
  };
}

export function redirectTo(uri: string, params: Record<string, string | undefined>): Response {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return new Response(null, {
    status: 303,
    headers: { location: url.toString(), "cache-control": "no-store", "referrer-policy": "no-referrer" },
  });
}

/** `inbox`: where a deployment holds many inboxes, the one the browser is signed in to (named on the page). */
export function consentPage(request: AuthorizeRequest, csrf: string, inbox?: string): Response {
  const host = new URL(request.redirectURI).host;
  const can = request.scopes.map((s) =>
    s === "read"
      ? "<li>read your chats, messages, contacts and accounts</li>"
      : "<li>send, edit and delete messages and change chats on your behalf</li>",
  );
  return page(
    `Allow ${request.client.client_name}?`,
    `<p><strong>${escapeHtml(request.client.client_name)}</strong> wants to use ${inbox ? `the inbox <strong>${escapeHtml(inbox)}</strong>` : "your inboxd"}. It will be able to:</p>
<ul>${can.join("")}</ul>
<p class="muted">After you decide, your browser goes back to <code>${escapeHtml(host)}</code>.</p>
<form method="post" action="/oauth/authorize">
${hidden({ client_id: request.client.client_id, redirect_uri: request.redirectURI, state: request.state, code_challenge: request.challenge, code_challenge_method: "S256", scope: request.scopes.join(" "), resource: request.resource, response_type: "code", csrf })}
<button class="primary" type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
    { formTargets: [new URL(request.redirectURI).origin] },
  );
}

export function signInPage(next: string, message?: string, status = 200): Response {
  return page(
    "Sign in to inboxd",
    `${message ? `<p><strong>${escapeHtml(message)}</strong></p>` : ""}
<p>Only the owner of this inboxd can approve apps. Run <code>inboxd open</code> on the machine inboxd runs on and open
the link it prints, or paste its sign-in code here. (In a Worker: paste the admin token.)</p>
<form method="post" action="/oauth/login">
${hidden({ next })}
<label for="code">Sign-in code or admin token</label>
<input id="code" name="code" type="password" autocomplete="off" required>
<p><button class="primary" type="submit">Sign in</button></p>
</form>`,
    { status },
  );
}

/** The session cookie: HttpOnly, SameSite=Strict, and Secure except on loopback (plain http there). */
export function sessionCookie(id: string, url: URL): string {
  const secure = isLoopbackName(url.hostname) ? "" : "; Secure";
  return `${SESSION_COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_TTL_MS / 1000}${secure}`;
}

export function cookie(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return v.join("=");
  }
  return undefined;
}

/**
 * Where to go after signing in: a path of this origin, never another site (an open redirect); default "/", the web
 * inbox. Read as a browser reads it (which drops tabs and newlines and takes "\\" for "/"), so that
 * "/\t/evil.example" cannot slip past as a path and land elsewhere.
 */
export function safeNext(next: string | null): string {
  if (!next?.startsWith("/")) return "/";
  const here = "http://next.invalid";
  const parsed = new URL(next, here);
  return parsed.origin === here ? parsed.pathname + parsed.search + parsed.hash : "/";
}

/**
 * Signs the owner in with a one-time code, or with a read+write token made by the CLI or set as the Worker's secret.
 * `via`: a token counts only from the sign-in page's form (which takes posts from this origin only), never from a
 * link: a link puts it in browser history and server logs, and anyone holding a token could send a link that signs
 * another person's browser in to the token's inbox (in a deployment of many, their own).
 */
export async function signIn(
  store: OAuthStore,
  storage: Storage,
  _request: Request,
  url: URL,
  code: string,
  next: string,
  via: "link" | "form",
): Promise<Response> {
  let ok = await store.useSignIn(code);
  if (!ok) {
    const token = await verifyToken(storage, code);
    ok = token !== undefined && token.clientID === undefined && token.scopes.includes("write");
    if (ok && via === "link")
      return signInPage(
        next,
        "A token signs in only when pasted here, never from a link (links land in browser history and logs).",
        401,
      );
  }
  if (!ok) return signInPage(next, "That code is not valid (each code works once, for 10 minutes).", 401);
  const session = await store.createSession(SESSION_TTL_MS);
  // Where a deployment holds many inboxes, the web inbox is told which one this browser now speaks for: it may hold
  // an app token of another inbox, from an earlier sign-in on the same origin (web/src/main.tsx).
  const to = safeNext(next);
  const location = store.inbox && to === "/" ? `/?${new URLSearchParams({ "signed-in": store.inbox })}` : to;
  return new Response(null, {
    status: 303,
    headers: { location, "set-cookie": sessionCookie(session.id, url), "cache-control": "no-store" },
  });
}

/**
 * The page's forms post to this server only: a form from anywhere else is refused before its fields are read (the
 * CSRF token and the SameSite cookie already stop it; this holds where the Host and Origin checks do not, in the
 * Worker, which answers any host).
 */
export function sameOrigin(request: Request): Response | undefined {
  const origin = request.headers.get("origin");
  const site = request.headers.get("sec-fetch-site");
  // Compared by host: behind the Worker's routing the request URL may not carry the host the browser used.
  const host = request.headers.get("host") ?? new URL(request.url).host;
  if ((origin && safeHost(origin) !== host) || site === "cross-site" || site === "same-site")
    return errorPage("This form was sent from another site.", 403);
  return undefined;
}

export async function consentDecision(
  store: OAuthStore,
  clientOf: ClientLookup,
  request: Request,
  now: () => number,
): Promise<Response> {
  const foreign = sameOrigin(request);
  if (foreign) return foreign;
  const form = await readForm(request);
  const session = await store.session(cookie(request, SESSION_COOKIE));
  if (!session) return signInPage("/oauth/signed-in", "Sign in again, then ask the app to start over.", 401);
  if (!sameSecret(form.get("csrf") ?? "", session.csrf))
    return errorPage("This form did not come from this server's consent page.", 403);
  const read = await readAuthorizeRequest(clientOf, form);
  if ("page" in read) return read.page;
  if ("redirect" in read) return read.redirect;
  const { ok } = read;
  if (form.get("decision") !== "approve")
    return redirectTo(ok.redirectURI, {
      error: "access_denied",
      error_description: "the owner denied the request",
      state: ok.state,
    });
  const code = store.secret("code");
  await store.saveCode(code, {
    clientID: ok.client.client_id,
    redirectURI: ok.redirectURI,
    scopes: ok.scopes,
    resource: ok.resource,
    challenge: ok.challenge,
    expiresAt: now() + CODE_TTL_MS,
  });
  return redirectTo(ok.redirectURI, { code, state: ok.state, iss: new URL(request.url).origin });
}
