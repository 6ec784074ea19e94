import * as v from "valibot";
import { boundedArray, id, LIMITS } from "../http/limits.ts";
import { noContent, type Api } from "../http/route-kit.ts";
import { notFound } from "../http/errors.ts";
import { CreatedWebhook, Webhook } from "../schema/bridges.ts";
import { createWebhook, listWebhookRecords, presentWebhook, removeWebhook } from "../services/webhooks.ts";

export const CreateBody = v.object({
  url: v.pipe(v.string(), v.minLength(1), v.maxBytes(LIMITS.urlBytes, `must be at most ${LIMITS.urlBytes} bytes`)),
  chatIDs: v.optional(boundedArray(id)),
});

/**
 * /v1/webhooks: register a URL for the event stream (the /v1/ws payloads, POSTed and signed), see deliveries and
 * failures, remove it. The signing secret is shown once, in the answer to the POST.
 */
export function webhookRoutes(api: Api) {
  const tag = "Webhooks";
  api
    .add({ method: "POST", path: "/v1/webhooks", operationId: "createWebhook", extension: true, summary: "Register a webhook", tag, body: CreateBody, response: CreatedWebhook,
      description: "Events of the given chats (all by default) are POSTed to `url`, signed with HMAC-SHA256 over the body with `secret`." },
      async ({ rc, body }) => {
        const record = await createWebhook(rc.app.db.storage, body);
        await rc.app.webhooks.refresh(true);
        return { ...presentWebhook(record, undefined, 0), secret: record.secret };
      })
    .add({ method: "GET", path: "/v1/webhooks", operationId: "listWebhooks", extension: true, summary: "List webhooks", tag, response: v.strictObject({ items: v.array(Webhook) }) },
      async ({ rc }) => {
        await rc.app.webhooks.refresh(true);
        const records = await listWebhookRecords(rc.app.db.storage);
        return { items: await Promise.all(records.map(async (r) => presentWebhook(r, await rc.app.webhooks.stats(r.id), rc.app.webhooks.pending(r.id)))) };
      })
    .add({ method: "GET", path: "/v1/webhooks/:id", operationId: "getWebhook", extension: true, summary: "Retrieve a webhook", tag, response: Webhook },
      async ({ rc, params: { id } }) => {
        const record = (await listWebhookRecords(rc.app.db.storage)).find((r) => r.id === id);
        if (!record) throw notFound(`webhook ${id}`);
        return presentWebhook(record, await rc.app.webhooks.stats(id), rc.app.webhooks.pending(id));
      })
    .add({ method: "DELETE", path: "/v1/webhooks/:id", operationId: "deleteWebhook", extension: true, summary: "Remove a webhook", tag, responses: { 204: { description: "Removed." } } },
      async ({ rc, params }) => {
        await removeWebhook(rc.app.db.storage, params.id);
        await rc.app.webhooks.refresh(true);
        return noContent();
      });
}
