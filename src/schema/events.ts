/**
 * An event as it is built once for every connection; `seq` is added per connection. The types:
 * - stored changes, built by the hub as each commit takes its batch and delivered once it is durable (also to
 *   webhooks): `message.upserted`,
 *   `message.deleted`, `chat.upserted`, `chat.deleted` — `{type, ts, chatID, ids, entries?}`;
 * - `focus` — `{type, ts, chatID, ids: [chatID], focus: {chatID?, messageID?, draftText?, draftAttachmentPath?}}`
 *   (`chatID` "" and `ids` [] when no chat was named: only `["*"]` subscribers get it), and `account.upserted` /
 *   `account.deleted` — `{type, ts, chatID: "", ids: [accountID], entries?: [Account]}` when an account is added,
 *   changes status or goes: logged like stored changes, though they change no chat;
 * - every event above carries `eventID`, its place in the durable log (src/events/log.ts);
 * - the live-only event, which goes to the WebSocket connections alone (never logged, never to webhooks):
 *   `typing` — `{type, ts, chatID, ids: [chatID], typing: {participantID, state: "typing"|"paused", timeoutMs?}}`,
 *   someone in the chat (as a network reports it) typing, or no longer; `timeoutMs` is how long a `typing` state
 *   holds without a new one.
 */
export interface DomainEvent {
  chatID: string;
  /** The event serialised without `seq`, starting right after its opening brace. */
  body: string;
  /** Its eventID in the durable log (src/events/log.ts); live-only events (typing) have none. */
  id?: number;
}

/** Builds an event: `type` first (readers match on the body's start), then `ts`, `chatID`, `ids` and the rest. */
export function domainEvent(
  type: string,
  ts: string,
  chatID: string,
  ids: string[],
  fields?: Record<string, unknown>,
): DomainEvent {
  return { chatID, body: JSON.stringify({ type, ts, chatID, ids, ...fields }).slice(1) };
}
