/** A room event as it comes from /sync or /messages, after `parseEvent` checked its shape. */
export interface MatrixEvent {
  type: string;
  event_id: string;
  sender: string;
  origin_server_ts: number;
  content: Record<string, unknown>;
  state_key?: string;
  room_id?: string;
  redacts?: string;
  unsigned?: Record<string, unknown>;
}

/**
 * Checks the shape of an event from the server; undefined for anything malformed, or for an event that names a
 * different room than the one it was delivered in (a forged event).
 */
export function parseEvent(raw: unknown, roomID: string): MatrixEvent | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const e = raw as Record<string, unknown>;
  if (typeof e.type !== "string" || typeof e.sender !== "string" || !e.sender.startsWith("@")) return undefined;
  if (e.room_id !== undefined && e.room_id !== roomID) return undefined;
  const content =
    e.content && typeof e.content === "object" && !Array.isArray(e.content)
      ? (e.content as Record<string, unknown>)
      : {};
  return {
    type: e.type,
    event_id: typeof e.event_id === "string" ? e.event_id : "",
    sender: e.sender,
    origin_server_ts:
      typeof e.origin_server_ts === "number" && Number.isFinite(e.origin_server_ts) ? e.origin_server_ts : Date.now(),
    content,
    ...(typeof e.state_key === "string" ? { state_key: e.state_key } : {}),
    ...(typeof e.redacts === "string" ? { redacts: e.redacts } : {}),
    ...(e.unsigned && typeof e.unsigned === "object" ? { unsigned: e.unsigned as Record<string, unknown> } : {}),
  };
}
