import type { EventLog } from "./log.ts";
import { subscribed, type ConnectionState } from "./protocol.ts";

/** What a resuming client is told when its cursor is older than the log keeps: re-read, then continue from `latestEventID` (a body: no `seq`, no opening brace). */
export function resyncEvent(oldest: number, latest: number): string {
  return `"type":"resync.required","ts":${JSON.stringify(new Date().toISOString())},"chatID":"","ids":[],"oldestEventID":${oldest},"latestEventID":${latest},"message":"the events after your cursor are no longer kept (retention), or your cursor is ahead of this log (restored data); re-read what you show, then go on from latestEventID"}`;
}

/**
 * Replays the log to one connection after its cursor, then hands it to live delivery with no gap and no duplicate
 * at the seam: while `replaying` is set, live delivery leaves logged events to the log (frameFor); once the cursor
 * has caught up with the newest durable event, the flag is cleared in the same tick, so every later commit's events
 * go out live. Stops when the connection's state is replaced (a newer `subscriptions.set` starts its own replay) or
 * the connection closes. `send` may return a promise to slow the replay down to what the socket takes.
 */
export async function replayLog(
  log: EventLog,
  state: ConnectionState,
  current: () => ConnectionState | undefined,
  send: (frame: string, eventID?: number) => void | Promise<void>,
): Promise<void> {
  for (;;) {
    if (current() !== state) return;
    const cursor = state.cursor ?? 0;
    if (cursor === log.durable) {
      state.replaying = false;
      return;
    }
    const page = await log.read(cursor, 256);
    if (current() !== state) return;
    if ("gone" in page) {
      state.cursor = log.durable;
      state.replaying = false;
      await send(`{"seq":${state.seq++},${resyncEvent(page.oldest, log.durable)}`, log.durable);
      return;
    }
    for (const event of page.events) {
      state.cursor = event.id;
      if (subscribed(state, event.chatID)) await send(`{"seq":${state.seq++},${event.body}`, event.id);
      if (current() !== state) return;
    }
  }
}
