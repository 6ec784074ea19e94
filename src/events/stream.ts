import { ApiError } from "../errors.ts";
import type { EventHub } from "./hub.ts";
import { frameFor, subscribed, type ConnectionState } from "./protocol.ts";
import { replayLog } from "./replay.ts";

/** How often an idle event stream sends a comment line, so proxies and clients see it alive. */
export const HEARTBEAT_MS = 15_000;
/** Bytes of live events a stream may have queued for a reader that does not read, before it is cut off. */
export const MAX_QUEUED_BYTES = 4 * 1024 * 1024;

export interface StreamRequest {
  /** Continue after this eventID; undefined: from now. */
  after?: number;
  /** Only these chats' events (and, with none given, every event). */
  chatIDs?: string[];
}

const chatsOf = (chatIDs?: string[]) => (chatIDs?.length ? chatIDs : ["*"]);

/**
 * GET /v1/events as Server-Sent Events: the log after `after` (or Last-Event-ID), then live, through the same
 * seam as a resuming WebSocket (replayLog + frameFor), each event with `id: <eventID>` so a reconnecting
 * EventSource resumes on its own. Live-only events (typing) have no id. Comment lines keep an idle stream alive.
 */
export function eventStream(
  hub: EventHub,
  request: StreamRequest,
  options: { heartbeatMs?: number; signal?: AbortSignal; maxQueuedBytes?: number } = {},
): Response {
  const encoder = new TextEncoder();
  const state: ConnectionState = {
    chatIDs: chatsOf(request.chatIDs),
    seq: 0,
    cursor: request.after ?? hub.log.durable,
    replaying: request.after !== undefined,
  };
  const maxQueued = options.maxQueuedBytes ?? MAX_QUEUED_BYTES;
  let detach = () => {};
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let open = true;
  /** Replay steps waiting for the reader to take what is queued (resolved by pull). */
  const waiting: (() => void)[] = [];
  const stop = () => {
    open = false;
    detach();
    if (heartbeat) clearInterval(heartbeat);
    for (const resume of waiting.splice(0)) resume();
  };
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const push = (text: string): boolean => {
    if (!open) return false;
    try {
      controller.enqueue(encoder.encode(text));
      return true;
    } catch {
      stop();
      return false;
    }
  };
  const eventText = (frame: string, eventID?: number) =>
    `${eventID !== undefined ? `id: ${eventID}\n` : ""}data: ${frame}\n\n`;
  // Replayed events go out only as fast as the reader takes them: the log is read page by page, never piled up.
  const replaySend = (frame: string, eventID?: number): Promise<void> | undefined => {
    if (!push(eventText(frame, eventID)) || (controller.desiredSize ?? 0) > 0) return;
    return new Promise<void>((resolve) => waiting.push(resolve));
  };
  // Live events are queued; a reader more than maxQueued behind is cut off, and resumes from its Last-Event-ID.
  const liveSend = (frame: string, eventID?: number) => {
    if (!push(eventText(frame, eventID)) || (controller.desiredSize ?? 0) >= -maxQueued) return;
    stop();
    controller.close();
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        // Tells the client how long to wait before reconnecting, and that the stream is open.
        push(`retry: 2000\n: inboxd events after ${state.cursor}\n\n`);
        detach = hub.add({
          deliver(events) {
            for (const event of events) {
              const frame = frameFor(state, event);
              if (frame !== null) liveSend(frame, event.id);
            }
          },
        });
        heartbeat = setInterval(() => push(": keep-alive\n\n"), options.heartbeatMs ?? HEARTBEAT_MS);
        options.signal?.addEventListener("abort", () => {
          stop();
          try {
            c.close();
          } catch {
            // already closed
          }
        });
        if (state.replaying)
          void replayLog(hub.log, state, () => (open ? state : undefined), replaySend).catch(() => stop());
      },
      pull() {
        for (const resume of waiting.splice(0)) resume();
      },
      cancel: stop,
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 256 * 1024 }),
  );
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}

/**
 * GET /v1/events as a JSON page (long-poll): the events after `after`, waiting up to `waitMs` for one when there
 * are none yet. `nextAfter` is where the next call continues (it passes events a chat filter left out, too).
 */
export async function eventPage(hub: EventHub, request: StreamRequest & { limit: number; waitMs: number }) {
  const chatIDs = chatsOf(request.chatIDs);
  const filter: ConnectionState = { chatIDs, seq: 0 };
  const deadline = Date.now() + request.waitMs;
  let cursor = request.after ?? hub.log.durable;
  for (;;) {
    const page = await hub.log.read(cursor, Math.max(request.limit, 100));
    if ("gone" in page)
      throw new ApiError(
        410,
        "RESYNC_REQUIRED",
        cursor > hub.log.durable
          ? `eventID ${cursor} is ahead of this log (its newest is ${hub.log.durable}; the data was restored or reset): re-read what you show, then continue after ${hub.log.durable}`
          : `events after ${cursor} are no longer kept (the oldest is ${page.oldest}): re-read what you show, then continue after ${hub.log.durable}`,
        {
          oldestEventID: page.oldest,
          latestEventID: hub.log.durable,
        },
      );
    const items: unknown[] = [];
    for (const event of page.events) {
      if (items.length >= request.limit) break;
      cursor = event.id!;
      if (subscribed(filter, event.chatID)) items.push(JSON.parse(`{${event.body}`));
    }
    const remaining = deadline - Date.now();
    if (items.length || cursor < hub.log.durable || remaining <= 0)
      return {
        items,
        nextAfter: cursor,
        latestEventID: hub.log.durable,
        oldestEventID: hub.log.oldest,
        hasMore: cursor < hub.log.durable,
      };
    await hub.nextCommit(remaining);
  }
}
