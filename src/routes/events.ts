import * as v from "valibot";
import { ApiError, badRequest } from "../errors.ts";
import type { Api } from "../http/route-kit.ts";
import { queryArray, queryInt } from "../schema/query.ts";
import type { EventHub } from "../events/hub.ts";
import { eventPage, eventStream } from "../events/stream.ts";

const eventID = v.pipe(
  v.string(),
  v.regex(/^\d{1,15}$/, "expected an eventID (a non-negative integer)"),
  v.transform(Number),
);

export const EventsQuery = v.object({
  after: v.optional(
    v.pipe(
      eventID,
      v.description("Continue after this eventID (SSE: or the Last-Event-ID header); omitted: from now."),
    ),
  ),
  chatIDs: v.optional(v.pipe(queryArray, v.description("Only these chats' events; omitted: every event."))),
  limit: v.optional(v.pipe(queryInt(1, 1000), v.description("JSON: at most this many events (default 100).")), "100"),
  wait: v.optional(
    v.pipe(queryInt(0, 60), v.description("JSON: seconds to wait for an event when there is none yet (default 0).")),
    "0",
  ),
});

const Page = v.strictObject({
  items: v.pipe(
    v.array(v.record(v.string(), v.unknown())),
    v.description("Events as /v1/ws sends them (without `seq`), oldest first, each with its `eventID`."),
  ),
  nextAfter: v.pipe(
    v.number(),
    v.description(
      "Pass as `after` to continue: past every event this page read, including those the chat filter left out.",
    ),
  ),
  latestEventID: v.number(),
  oldestEventID: v.pipe(
    v.number(),
    v.description(
      "The oldest event still kept; an `after` below `oldestEventID − 1`, or beyond the newest event, answers 410 RESYNC_REQUIRED.",
    ),
  ),
  hasMore: v.boolean(),
});

/**
 * GET /v1/ws: the live event stream is a WebSocket (the runtimes' adapters take the upgrade before the app sees the
 * request, src/app.ts `checkUpgrade`); a plain GET learns that it must upgrade.
 */
export function eventRoutes(api: Api, hub: EventHub) {
  api.add(
    {
      method: "GET",
      path: "/v1/events",
      operationId: "listEvents",
      extension: true,
      summary: "Events after a cursor (Server-Sent Events or a long-poll page)",
      tag: "Events",
      query: EventsQuery,
      response: Page,
      description:
        "The durable event log: every event /v1/ws sends except `typing`, each with its `eventID`. With `Accept: text/event-stream`, " +
        "a Server-Sent Events stream (`id:` is the eventID; `Last-Event-ID` resumes; comment lines every 15 s); otherwise one JSON page, " +
        "waiting up to `wait` seconds for an event. At least once, in order, with no gap while within retention; an older cursor answers " +
        "410 `RESYNC_REQUIRED` (the stream: a `resync.required` event).",
      responses: {
        410: {
          description:
            "The cursor is older than the log keeps, or ahead of its newest event (restored or reset data): RESYNC_REQUIRED.",
        },
      },
    },
    async ({ req, query }) => {
      const request = req as unknown as Request;
      const lastEventID = request.headers.get("last-event-id");
      if (lastEventID !== null && !/^\d{1,15}$/.test(lastEventID))
        throw badRequest("Last-Event-ID must be an eventID", [
          { code: "invalid_format", message: "expected a non-negative integer", path: ["header", "last-event-id"] },
        ]);
      // /v1/ws and webhook replay say `since`; here it would be ignored, and the stream would start from now
      // without a word, so the name that works is given instead.
      if (new URL(request.url).searchParams.has("since"))
        throw badRequest("GET /v1/events continues after an eventID with `after` (or Last-Event-ID), not `since`", [
          { code: "unrecognized_keys", message: "use after=<eventID>", path: ["query", "since"] },
        ]);
      const after = lastEventID !== null ? Number(lastEventID) : query.after;
      if (request.headers.get("accept")?.includes("text/event-stream"))
        return eventStream(hub, { after, chatIDs: query.chatIDs }, { signal: request.signal });
      return eventPage(hub, {
        after,
        chatIDs: query.chatIDs,
        limit: Number(query.limit),
        waitMs: Number(query.wait) * 1000,
      });
    },
  );
  api.add(
    {
      method: "GET",
      path: "/v1/ws",
      operationId: "connectEvents",
      extension: true,
      summary: "Live events (WebSocket)",
      tag: "Events",
      description:
        "Upgrade to a WebSocket for live events: `subscriptions.set` with chat IDs (or `*`) and, to resume, `since` " +
        "(an eventID: what was missed after it is replayed first, then live events, with no gap and no duplicate). The " +
        "server sends `ready`, `subscriptions.updated`, logged events with their `eventID` (`message.upserted`, " +
        "`chat.upserted`, `focus`, `account.upserted`, …; `resync.required` when `since` is older than the log keeps) " +
        "and the live-only `typing`. Browsers authenticate with the subprotocols `bearer.<token>` and `inboxd.v1`. " +
        "A plain GET answers 426.",
      responses: {
        101: { description: "Switching protocols: the WebSocket is open." },
        426: { description: "Not a WebSocket upgrade." },
      },
    },
    () => {
      throw new ApiError(
        426,
        "UPGRADE_REQUIRED",
        "/v1/ws is a WebSocket endpoint: connect with a WebSocket client",
        undefined,
        { upgrade: "websocket" },
      );
    },
  );
}
