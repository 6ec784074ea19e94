/**
 * What a desktop-api account keeps in its connector state. Every account of one login holds the same `baseURL`,
 * `auth` and `eventID` (the login has one connection to the upstream server); `upstreamAccountID` and `backfilled`
 * are the account's own.
 */
export interface UpstreamAuth {
  accessToken: string;
  /** OAuth logins: the refresh token (rotated on every use), when the access token expires, and where to refresh it. */
  refreshToken?: string;
  expiresAt?: number;
  clientID?: string;
  issuer?: string;
  tokenEndpoint?: string;
}

export interface DesktopApiState {
  baseURL: string;
  auth: UpstreamAuth;
  upstreamAccountID: string;
  /** The upstream's instance ID (inboxd servers have one; the desktop app does not). */
  instanceID?: string;
  /** The last upstream event handled: where the event stream resumes (`since`), on upstreams that keep a log. */
  eventID?: number;
  /** Set once the account's chats and their recent messages were loaded. */
  backfilled?: boolean;
}

export function readState(state: Record<string, unknown> | undefined): DesktopApiState {
  const s = (state ?? {}) as Partial<DesktopApiState>;
  if (
    typeof s.baseURL !== "string" ||
    typeof s.auth?.accessToken !== "string" ||
    typeof s.upstreamAccountID !== "string"
  )
    throw new Error("this account's desktop-api state lacks its server, token or account: sign in again");
  return s as DesktopApiState;
}
