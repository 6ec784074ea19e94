/**
 * What a Matrix account keeps between runs (the account's connector state: stored with the account, never returned
 * by the API). The password is never kept: only the access token and device ID the login produced.
 */
export interface MatrixState {
  /** The client-server API base URL (after .well-known discovery). */
  homeserver: string;
  userID: string;
  deviceID: string;
  accessToken: string;
  /**
   * Sync progress. Kept under `synced`, which a reconnect of the login leaves alone (services/bridges.ts), so
   * signing in again resumes where the account stopped instead of loading everything again.
   */
  synced?: {
    /** The last `/sync` batch whose events are all stored: the next sync starts here. */
    since?: string;
  };
}

export function readState(state: Record<string, unknown>): MatrixState {
  const s = state as Partial<MatrixState>;
  return {
    homeserver: String(s.homeserver ?? ""),
    userID: String(s.userID ?? ""),
    deviceID: String(s.deviceID ?? ""),
    accessToken: String(s.accessToken ?? ""),
    synced: { since: typeof s.synced?.since === "string" ? s.synced.since : undefined },
  };
}

/** A user ID (`@localpart:server`), as the spec's grammar allows it (historical local parts included). */
export const USER_ID = /^@[\x21-\x39\x3b-\x7e]+:[A-Za-z0-9.:[\]-]+$/;
/** A room ID (`!opaque:server`). */
export const ROOM_ID = /^![\x21-\x7e]+$/;
