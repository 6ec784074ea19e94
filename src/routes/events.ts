import { ApiError } from "../http/errors.ts";
import type { Api } from "../http/route-kit.ts";

/**
 * GET /v1/ws: the live event stream is a WebSocket (the runtimes' adapters take the upgrade before the app sees the
 * request, src/app.ts `checkUpgrade`); a plain GET learns that it must upgrade.
 */
export function eventRoutes(api: Api) {
  api.add(
    {
      method: "GET",
      path: "/v1/ws",
      operationId: "connectEvents", extension: true,
      summary: "Live events (WebSocket)",
      tag: "Events",
      description:
        "Upgrade to a WebSocket for live events: `subscriptions.set` with chat IDs (or `*`), then `ready`, " +
        "`subscriptions.updated` and domain events (`message.upserted`, `chat.upserted`, …) and live-only ones " +
        "(`focus`, `typing`: never stored, never sent to webhooks). Browsers " +
        "authenticate with the subprotocols `bearer.<token>` and `inboxd.v1`. A plain GET answers 426.",
      responses: {
        101: { description: "Switching protocols: the WebSocket is open." },
        426: { description: "Not a WebSocket upgrade." },
      },
    },
    () => {
      throw new ApiError(426, "UPGRADE_REQUIRED", "/v1/ws is a WebSocket endpoint: connect with a WebSocket client", undefined, { upgrade: "websocket" });
    },
  );
}
