/**
 * The /v1/ws protocol (wire-compat §5), independent of any socket API: a connection is a small serialisable state
 * (so a hibernating Durable Object can keep it as the socket's attachment) plus pure functions over it.
 */
import type { DomainEvent } from "../schema/events.ts";

export interface ConnectionState {
  /** Subscribed chat IDs; ["*"] is every chat, [] is paused. */
  chatIDs: string[];
  /** seq of the next event on this connection. */
  seq: number;
  /**
   * The newest logged event this connection has been sent (or skipped as not subscribed): what a resume continues
   * after, and what keeps the seam between replay and live free of duplicates.
   */
  cursor?: number;
  /** Set while the log is replayed to this connection: logged events wait in the log, live-only ones go out. */
  replaying?: boolean;
}

export const initialState = (): ConnectionState => ({ chatIDs: [], seq: 0 });

export const readyMessage = () => JSON.stringify({ type: "ready", version: 1, chatIDs: [] });

type ErrorCode = "INVALID_COMMAND" | "INVALID_PAYLOAD" | "NOT_SUBSCRIBED" | "INTERNAL_ERROR";

function error(code: ErrorCode, message: string, requestID?: string) {
  return JSON.stringify({ type: "error", ...(requestID !== undefined ? { requestID } : {}), code, message });
}

const MAX_CHAT_IDS = 10_000;

/** Handles one client frame; returns the new state and the frames to answer with. Never throws. */
export function handleClientFrame(
  state: ConnectionState,
  frame: string | ArrayBuffer | Uint8Array,
): { state: ConnectionState; replies: string[]; replayFrom?: number } {
  if (typeof frame !== "string") return { state, replies: [error("INVALID_PAYLOAD", "frames must be JSON text")] };
  let message: unknown;
  try {
    message = JSON.parse(frame);
  } catch {
    return { state, replies: [error("INVALID_PAYLOAD", "frame is not valid JSON")] };
  }
  if (typeof message !== "object" || message === null || Array.isArray(message))
    return { state, replies: [error("INVALID_PAYLOAD", "frame must be a JSON object")] };
  const { type, requestID, chatIDs, since } = message as Record<string, unknown>;
  const rid = typeof requestID === "string" ? requestID : undefined;
  if (requestID !== undefined && typeof requestID !== "string")
    return { state, replies: [error("INVALID_PAYLOAD", "requestID must be a string")] };
  if (type !== "subscriptions.set")
    return {
      state,
      replies: [
        error(
          "INVALID_COMMAND",
          `unknown command ${typeof type === "string" ? type : JSON.stringify(type)}; the only command is subscriptions.set`,
          rid,
        ),
      ],
    };
  if (!Array.isArray(chatIDs) || !chatIDs.every((id) => typeof id === "string" && id.length > 0))
    return { state, replies: [error("INVALID_PAYLOAD", "chatIDs must be an array of chat ID strings", rid)] };
  if (chatIDs.length > MAX_CHAT_IDS)
    return { state, replies: [error("INVALID_PAYLOAD", `at most ${MAX_CHAT_IDS} chatIDs`, rid)] };
  if (chatIDs.includes("*") && chatIDs.length > 1)
    return {
      state,
      replies: [error("INVALID_PAYLOAD", '"*" subscribes to every chat and cannot be combined with chat IDs', rid)],
    };
  if (
    since !== undefined &&
    !(typeof since === "number" && Number.isSafeInteger(since) && since >= 0) &&
    !(typeof since === "string" && /^\d{1,15}$/.test(since))
  )
    return {
      state,
      replies: [
        error("INVALID_PAYLOAD", "since must be an eventID (a non-negative integer) from an earlier event", rid),
      ],
    };
  const unique = [...new Set(chatIDs as string[])];
  const next: ConnectionState = { ...state, chatIDs: unique };
  // A change of subscriptions during a replay carries on replaying from where it is, for the new chats.
  const resume = since === undefined ? (state.replaying ? state.cursor : undefined) : Number(since);
  if (resume !== undefined) {
    next.cursor = resume;
    next.replaying = true;
  }
  const updated = JSON.stringify({
    type: "subscriptions.updated",
    ...(rid !== undefined ? { requestID: rid } : {}),
    chatIDs: unique,
    ...(since !== undefined ? { since: resume } : {}),
  });
  return { state: next, replies: [updated], ...(resume !== undefined ? { replayFrom: resume } : {}) };
}

export function subscribed(state: ConnectionState, chatID: string): boolean {
  return state.chatIDs.length > 0 && (state.chatIDs[0] === "*" || state.chatIDs.includes(chatID));
}

/**
 * The frame for one connection, or null when it is not subscribed to the event's chat, is being replayed the log
 * (the event will come from there), or already had the event. Advances seq and the cursor.
 */
export function frameFor(state: ConnectionState, event: DomainEvent): string | null {
  if (event.id !== undefined) {
    if (state.replaying || (state.cursor !== undefined && event.id <= state.cursor)) return null;
    state.cursor = event.id;
  }
  if (!subscribed(state, event.chatID)) return null;
  return `{"seq":${state.seq++},${event.body}`;
}
