import * as v from "valibot";
import { boundedArray, id, LIMITS } from "../schema/limits.ts";
import { noContent, type Api } from "../http/route-kit.ts";
import { queryInt } from "../schema/query.ts";
import { CreatedWebhook, Webhook } from "../schema/bridges.ts";
import { removeWebhook } from "../services/webhooks.ts";

export const CreateBody = v.object({
  url: v.pipe(v.string(), v.minLength(1), v.maxBytes(LIMITS.urlBytes, `must be at most ${LIMITS.urlBytes} bytes`)),
  chatIDs: v.optional(boundedArray(id)),
});

export const ReplayQuery = v.object({
  since: v.pipe(
    queryInt(0, Number.MAX_SAFE_INTEGER),
    v.description(
      "Deliver again every event after this eventID: at least the oldest kept event minus one, at most the newest.",
    ),
  ),
});

/**
 * /v1/webhooks: register a URL for the event log (the /v1/ws payloads, POSTed and signed, in order), see its cursor,
 * deliveries and dead letters, replay it from an eventID, remove it. The signing secret is shown once, in the
 * answer to the POST.
 */
export function webhookRoutes(api: Api) {
  const tag = "Webhooks";
  api
    .add(
      {
        method: "POST",
        path: "/v1/webhooks",
        operationId: "createWebhook",
        extension: true,
        summary: "Register a webhook",
        tag,
        body: CreateBody,
        response: CreatedWebhook,
        description:
          "Events of the given chats (all by default) logged from now on are POSTed to `url` in order, signed with HMAC-SHA256 over `<timestamp>.<body>` with `secret`. A chat ID that names no chat of this device is a 422 (a localChatID is stored as its chat's ID).",
      },
      ({ rc, body }) => rc.app.webhooks.create(body, (chatID) => rc.app.db.chats.find(chatID)),
    )
    .add(
      {
        method: "GET",
        path: "/v1/webhooks",
        operationId: "listWebhooks",
        extension: true,
        summary: "List webhooks",
        tag,
        response: v.strictObject({ items: v.array(Webhook) }),
      },
      async ({ rc }) => ({ items: await rc.app.webhooks.list() }),
    )
    .add(
      {
        method: "GET",
        path: "/v1/webhooks/:id",
        operationId: "getWebhook",
        extension: true,
        summary: "Retrieve a webhook",
        tag,
        response: Webhook,
      },
      ({ rc, params: { id } }) => rc.app.webhooks.present(id),
    )
    .add(
      {
        method: "POST",
        path: "/v1/webhooks/:id/replay",
        operationId: "replayWebhook",
        extension: true,
        summary: "Deliver a webhook's events again from an eventID",
        tag,
        query: ReplayQuery,
        response: Webhook,
        description:
          "Sets the webhook's cursor to `since`: every event after it (of the webhook's chats) is delivered (again), in order, with the same delivery IDs as the first time; a `since` past the cursor skips the events in between. Answers the webhook.",
        responses: {
          410: {
            description: "`since` is older than the event log keeps (RESYNC_REQUIRED, with `details.oldestEventID`).",
          },
        },
      },
      ({ rc, params: { id }, query }) => rc.app.webhooks.replay(id, query.since),
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/webhooks/:id",
        operationId: "deleteWebhook",
        extension: true,
        summary: "Remove a webhook",
        tag,
        responses: { 204: { description: "Removed." } },
      },
      async ({ rc, params }) => {
        await removeWebhook(rc.app.db.storage, params.id);
        await rc.app.webhooks.refresh(true);
        return noContent();
      },
    );
}
