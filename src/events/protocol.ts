/**
 * The /v1/ws protocol (wire-compat §5), independent of any socket API: a connection is a small serialisable state
 * (so a hibernating Durable Object can keep it as the socket's attachment) plus pure functions over it.
 */
export interface ConnectionState {
  /** Subscribed chat IDs; ["*"] is every chat, [] is paused. */
  chatIDs: string[];
  /** seq of the next event on this connection. */
  seq: number;
}

export const initialState = (): ConnectionState => ({ chatIDs: [], seq: 0 });

export const readyMessage = () => JSON.stringify({ type: "ready", version: 1, chatIDs: [] });

type ErrorCode = "INVALID_COMMAND" | "INVALID_PAYLOAD" | "NOT_SUBSCRIBED" | "INTERNAL_ERROR";

function error(code: ErrorCode, message: string, requestID?: string) {
  return JSON.stringify({ type: "error", ...(requestID !== undefined ? { requestID } : {}), code, message });
}

const MAX_CHAT_IDS = 10_000;

/** Handles one client frame; returns the new state and the frames to answer with. Never throws. */
export function handleClientFrame(state: ConnectionState, frame: string | ArrayBuffer | Uint8Array): { state: ConnectionState; replies: string[] } {
  if (typeof frame !== "string") return { state, replies: [error("INVALID_PAYLOAD", "frames must be JSON text")] };
  let message: unknown;
  try {
    message = JSON.parse(frame);
  } catch {
    return { state, replies: [error("INVALID_PAYLOAD", "frame is not valid JSON")] };
  }
  if (typeof message !== "object" || message === null || Array.isArray(message))
    return { state, replies: [error("INVALID_PAYLOAD", "frame must be a JSON object")] };
  const { type, requestID, chatIDs } = message as Record<string, unknown>;
  const rid = typeof requestID === "string" ? requestID : undefined;
  if (requestID !== undefined && typeof requestID !== "string")
    return { state, replies: [error("INVALID_PAYLOAD", "requestID must be a string")] };
  if (type !== "subscriptions.set")
    return { state, replies: [error("INVALID_COMMAND", `unknown command ${typeof type === "string" ? type : JSON.stringify(type)}; the only command is subscriptions.set`, rid)] };
  if (!Array.isArray(chatIDs) || !chatIDs.every((id) => typeof id === "string" && id.length > 0))
    return { state, replies: [error("INVALID_PAYLOAD", "chatIDs must be an array of chat ID strings", rid)] };
  if (chatIDs.length > MAX_CHAT_IDS) return { state, replies: [error("INVALID_PAYLOAD", `at most ${MAX_CHAT_IDS} chatIDs`, rid)] };
  if (chatIDs.includes("*") && chatIDs.length > 1)
    return { state, replies: [error("INVALID_PAYLOAD", '"*" subscribes to every chat and cannot be combined with chat IDs', rid)] };
  const unique = [...new Set(chatIDs as string[])];
  const next = { ...state, chatIDs: unique };
  return { state: next, replies: [JSON.stringify({ type: "subscriptions.updated", ...(rid !== undefined ? { requestID: rid } : {}), chatIDs: unique })] };
}

/**
 * An event as it is built once for every connection; `seq` is added per connection. The types:
 * - stored changes, built by the hub after each durable commit (also delivered to webhooks): `message.upserted`,
 *   `message.deleted`, `chat.upserted`, `chat.deleted` — `{type, ts, chatID, ids, entries?}`;
 * - live-only events, which change nothing stored and go to the WebSocket connections alone (never to webhooks,
 *   never replayed): `focus` — `{type, ts, chatID, ids: [chatID], focus: {chatID?, messageID?, draftText?,
 *   draftAttachmentPath?}}` (`chatID` "" and `ids` [] when no chat was named: only `["*"]` subscribers get it);
 *   `typing` — `{type, ts, chatID, ids: [chatID], typing: {participantID, state: "typing"|"paused", timeoutMs?}}`,
 *   someone in the chat (as a network reports it) typing, or no longer; `timeoutMs` is how long a `typing` state
 *   holds without a new one.
 */
export interface DomainEvent {
  chatID: string;
  /** The event serialised without `seq`, starting right after its opening brace. */
  body: string;
}

/** Builds an event: `type` first (readers match on the body's start), then `ts`, `chatID`, `ids` and the rest. */
export function domainEvent(type: string, ts: string, chatID: string, ids: string[], fields?: Record<string, unknown>): DomainEvent {
  return { chatID, body: JSON.stringify({ type, ts, chatID, ids, ...fields }).slice(1) };
}

export function subscribed(state: ConnectionState, chatID: string): boolean {
  return state.chatIDs.length > 0 && (state.chatIDs[0] === "*" || state.chatIDs.includes(chatID));
}

/** The frame for one connection, or null when it is not subscribed to the event's chat. Advances seq. */
export function frameFor(state: ConnectionState, event: DomainEvent): string | null {
  if (!subscribed(state, event.chatID)) return null;
  return `{"seq":${state.seq++},${event.body}`;
}
