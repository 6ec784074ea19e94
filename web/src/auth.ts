/**
 * The page is an OAuth client like any other (README, "OAuth for apps and MCP clients"): it registers itself, sends
 * the owner to the consent page with S256 PKCE, and keeps the access and refresh tokens it was given. The owner's
 * browser session (the one-time link of `inboxd open`, or the Worker's admin token) only approves; the page never
 * sees it.
 */

import { inboxOf, isInboxID, namedInbox } from "../../src/tenancy.ts";

const AUTH_KEY = "inboxd:auth";
const PENDING_KEY = "inboxd:pending-sign-in";
const CLIENT_NAME = "inboxd web inbox";

export interface Credentials {
  accessToken: string;
  refreshToken?: string;
  clientID?: string;
  /** ms since epoch */
  expiresAt?: number;
}

export function loadCredentials(): Credentials | undefined {
  try {
    const stored = JSON.parse(localStorage.getItem(AUTH_KEY) ?? "null") as Credentials | null;
    return stored?.accessToken ? stored : undefined;
  } catch {
    return undefined;
  }
}

/** The inbox the page's token names, in a deployment of many inboxes (src/tenancy.ts); undefined on a single one. */
export function signedInInbox(): string | undefined {
  const held = loadCredentials();
  return held ? namedInbox(held.accessToken) : undefined;
}

const saveCredentials = (credentials: Credentials) => localStorage.setItem(AUTH_KEY, JSON.stringify(credentials));
export const forgetCredentials = () => localStorage.removeItem(AUTH_KEY);

const redirectURI = () => `${location.origin}/`;

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

async function post(path: string, body: URLSearchParams | object): Promise<Record<string, unknown>> {
  const form = body instanceof URLSearchParams;
  const response = await fetch(path, {
    method: "POST",
    headers: { "content-type": form ? "application/x-www-form-urlencoded" : "application/json" },
    body: form ? body.toString() : JSON.stringify(body),
  });
  const json = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok)
    throw new Error(
      String(json.error_description ?? json.message ?? json.error ?? `${path} answered ${response.status}`),
    );
  return json;
}

/** Registers the page (a fresh client each sign-in: a store that lost it, like a new Worker, cannot strand us) and goes to the consent page. */
export async function startSignIn(): Promise<void> {
  const client = await post("/oauth/register", { client_name: CLIENT_NAME, redirect_uris: [redirectURI()] });
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))),
  );
  sessionStorage.setItem(
    PENDING_KEY,
    JSON.stringify({ verifier, state, clientID: client.client_id, back: location.hash }),
  );
  const query = new URLSearchParams({
    response_type: "code",
    client_id: String(client.client_id),
    redirect_uri: redirectURI(),
    code_challenge: challenge,
    code_challenge_method: "S256",
    scope: "read write",
    state,
  });
  location.assign(`/oauth/authorize?${query}`);
}

/**
 * The consent page sent the owner back here (`?code=…&state=…`, or `?error=…`): trades the code for tokens and
 * cleans the address bar. Answers undefined when this load is not such a return, or an error to show.
 */
export async function finishSignIn(): Promise<{ error?: string } | undefined> {
  const query = new URLSearchParams(location.search);
  if (!query.has("code") && !query.has("error")) return undefined;
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? "null") as {
    verifier: string;
    state: string;
    clientID: string;
    back: string;
  } | null;
  sessionStorage.removeItem(PENDING_KEY);
  history.replaceState(null, "", `/${pending?.back ?? ""}`);
  if (query.has("error"))
    return {
      error:
        query.get("error") === "access_denied"
          ? "Access was denied on the consent page."
          : (query.get("error_description") ?? query.get("error")!),
    };
  if (!pending || query.get("state") !== pending.state)
    return { error: "This sign-in did not start in this tab (its state does not match). Sign in again." };
  const tokens = await post(
    "/oauth/token",
    new URLSearchParams({
      grant_type: "authorization_code",
      code: query.get("code")!,
      code_verifier: pending.verifier,
      client_id: pending.clientID,
      redirect_uri: redirectURI(),
    }),
  );
  const previous = loadCredentials();
  const next = fromTokenAnswer(tokens, pending.clientID);
  saveCredentials(next);
  // The page holds one grant: one it held before (another inbox's, where a deployment holds many) is ended.
  const old = previous && previous.accessToken !== next.accessToken && (previous.refreshToken ?? previous.accessToken);
  if (old) await post("/oauth/revoke", new URLSearchParams({ token: old })).catch(() => undefined);
  return {};
}

const fromTokenAnswer = (tokens: Record<string, unknown>, clientID?: string): Credentials => ({
  accessToken: String(tokens.access_token),
  refreshToken: tokens.refresh_token ? String(tokens.refresh_token) : undefined,
  clientID,
  expiresAt: typeof tokens.expires_in === "number" ? Date.now() + tokens.expires_in * 1000 : undefined,
});

let refreshing: Promise<Credentials | undefined> | undefined;

/**
 * A new access token from the refresh token. Refresh tokens rotate and one used twice ends the grant, so tabs
 * take turns (a Web Lock) and a tab that finds the stored token already renewed by another simply uses it.
 */
export function refreshCredentials(stale: string): Promise<Credentials | undefined> {
  refreshing ??= (async () => {
    const run = async () => {
      const current = loadCredentials();
      if (current && current.accessToken !== stale) return current;
      if (!current?.refreshToken) return undefined;
      try {
        const tokens = await post(
          "/oauth/token",
          new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: current.refreshToken,
            ...(current.clientID ? { client_id: current.clientID } : {}),
          }),
        );
        const next = fromTokenAnswer(tokens, current.clientID);
        saveCredentials(next);
        return next;
      } catch {
        forgetCredentials();
        return undefined;
      }
    };
    try {
      return navigator.locks ? await navigator.locks.request("inboxd-refresh", run) : await run();
    } finally {
      refreshing = undefined;
    }
  })();
  return refreshing;
}

/** Ends this page's grant (the refresh token takes its access tokens with it) and forgets it. */
export async function signOut(): Promise<void> {
  const current = loadCredentials();
  forgetCredentials();
  const token = current?.refreshToken ?? current?.accessToken;
  if (token) await post("/oauth/revoke", new URLSearchParams({ token })).catch(() => undefined);
}

/**
 * A sign-in link's landing where a deployment holds many inboxes (`/?signed-in=<inbox>`): the browser's session now
 * speaks for that inbox. Takes the parameter out of the address, and answers the inbox when the page holds no token
 * of it (none, or one of another inbox from an earlier sign-in on this origin): the page is then to be approved for
 * it. Anyone can write such an address, so it only ever leads to the consent page; nothing is dropped on its word.
 */
export function arrivedFromSignIn(): string | undefined {
  const params = new URLSearchParams(location.search);
  const inbox = params.get("signed-in");
  if (inbox === null) return undefined;
  params.delete("signed-in");
  const rest = params.toString();
  history.replaceState(null, "", `${location.pathname}${rest ? `?${rest}` : ""}${location.hash}`);
  const held = loadCredentials();
  return isInboxID(inbox) && (!held || inboxOf(held.accessToken) !== inbox) ? inbox : undefined;
}
