import { readBridgesState, type BridgesState } from "./bridged.ts";
import type { HeldRelationsState } from "./held-relations.ts";

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
  /** The device was made by inboxd's password login (a token login uses a session the user made elsewhere). */
  ownDevice?: boolean;
  /**
   * The key of the device's end-to-end encryption store (crypto/machine.ts): every value the store keeps in the
   * account's records is encrypted with it. Made when the store is first opened.
   */
  cryptoStoreKey?: string;
  /**
   * The name of the store's databases, when the login made the store (to verify the device before the account
   * existed: see verify.ts). Stores made by the account itself are named after it.
   */
  cryptoStoreName?: string;
  /**
   * Sync progress. Kept under `synced`, which a reconnect of the login leaves alone (services/bridges.ts), so
   * signing in again resumes where the account stopped instead of loading everything again.
   */
  synced?: {
    /** The last `/sync` batch whose events are all stored: the next sync starts here. */
    since?: string;
    /**
     * Per room, where paging back goes on: the oldest message handed over and the pagination token just before it
     * (a first sync's `prev_batch`, then each history page's `end`). Paging from the token reads exactly what comes
     * before what was loaded; a position found afresh from a message (/context) is topological and can skip events
     * that were sent concurrently with it.
     */
    history?: Record<string, HistoryMark>;
    /** Edits and reactions of messages not loaded yet (held-relations.ts). */
    held?: HeldRelationsState;
    /** Encrypted events waiting for their room key: Megolm session ID → [room ID, event ID] (read once it comes). */
    waiting?: Record<string, [string, string][]>;
    /**
     * Bridged networks and which of their accounts shows each room (bridged.ts); null for an account that synced
     * before bridged networks had accounts of their own (its rooms stay where they are).
     */
    bridges?: BridgesState | null;
  };
}

export interface HistoryMark {
  oldest: string;
  token: string;
}

export function readState(state: Record<string, unknown>): MatrixState {
  const s = state as Partial<MatrixState>;
  return {
    homeserver: String(s.homeserver ?? ""),
    userID: String(s.userID ?? ""),
    deviceID: String(s.deviceID ?? ""),
    accessToken: String(s.accessToken ?? ""),
    ...(s.ownDevice === true ? { ownDevice: true } : {}),
    ...(typeof s.cryptoStoreKey === "string" ? { cryptoStoreKey: s.cryptoStoreKey } : {}),
    ...(typeof s.cryptoStoreName === "string" ? { cryptoStoreName: s.cryptoStoreName } : {}),
    synced: {
      since: typeof s.synced?.since === "string" ? s.synced.since : undefined,
      history: historyMarks(s.synced?.history),
      held: heldState(s.synced?.held),
      waiting: waitingState(s.synced?.waiting),
      bridges: readBridgesState(s.synced?.bridges),
    },
  };
}

/** A user ID (`@localpart:server`), as the spec's grammar allows it (historical local parts included). */
export const USER_ID = /^@[\x21-\x39\x3b-\x7e]+:[A-Za-z0-9.:[\]-]+$/;
/** A room ID (`!opaque:server`). */
export const ROOM_ID = /^![\x21-\x7e]+$/;

function historyMarks(value: unknown): Record<string, HistoryMark> {
  const marks: Record<string, HistoryMark> = {};
  if (!value || typeof value !== "object") return marks;
  for (const [roomID, mark] of Object.entries(value as Record<string, Partial<HistoryMark>>))
    if (typeof mark?.oldest === "string" && typeof mark.token === "string")
      marks[roomID] = { oldest: mark.oldest, token: mark.token };
  return marks;
}

/** Held relations as saved (a room's entries are checked where they are used; a bad shape is dropped whole). */
function heldState(value: unknown): HeldRelationsState {
  if (!value || typeof value !== "object" || Array.isArray(value)) return {};
  const rooms = value as HeldRelationsState;
  const valid = Object.values(rooms).every(
    (room) =>
      room &&
      typeof room === "object" &&
      Object.values(room.edits ?? {}).every((e) => Array.isArray(e) && typeof e[0] === "string") &&
      Object.values(room.reactions ?? {}).every((r) => Array.isArray(r) && r.every(Array.isArray)),
  );
  return valid ? rooms : {};
}

function waitingState(value: unknown): Record<string, [string, string][]> {
  const waiting: Record<string, [string, string][]> = {};
  if (!value || typeof value !== "object") return waiting;
  for (const [session, events] of Object.entries(value as Record<string, unknown>))
    if (Array.isArray(events))
      waiting[session] = events.filter(
        (e): e is [string, string] => Array.isArray(e) && typeof e[0] === "string" && typeof e[1] === "string",
      );
  return waiting;
}
