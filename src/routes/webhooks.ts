import * as v from "valibot";
import { boundedArray, id, LIMITS } from "../http/limits.ts";
import { noContent, type ApiRouter } from "../http/route-kit.ts";
import { notFound } from "../http/errors.ts";
import { pathParam, validateBody } from "../http/validate.ts";
import { createWebhook, listWebhookRecords, presentWebhook, removeWebhook } from "../services/webhooks.ts";

export const CreateBody = v.object({
  url: v.pipe(v.string(), v.minLength(1), v.maxBytes(LIMITS.urlBytes, `must be at most ${LIMITS.urlBytes} bytes`)),
  chatIDs: v.optional(boundedArray(id)),
});

/**
 * /v1/webhooks: register a URL for the event stream (the /v1/ws payloads, POSTed and signed), see deliveries and
 * failures, remove it. The signing secret is shown once, in the answer to the POST.
 */
export function webhookRoutes(router: ApiRouter) {
  router
    .post("/v1/webhooks", async (req, rc) => {
      const record = await createWebhook(rc.app.db.storage, await validateBody(req, CreateBody));
      await rc.app.webhooks.refresh(true);
      return { ...presentWebhook(record, undefined, 0), secret: record.secret };
    })
    .get("/v1/webhooks", async (_req, rc) => {
      await rc.app.webhooks.refresh(true);
      const records = await listWebhookRecords(rc.app.db.storage);
      return { items: await Promise.all(records.map(async (r) => presentWebhook(r, await rc.app.webhooks.stats(r.id), rc.app.webhooks.pending(r.id)))) };
    })
    .get("/v1/webhooks/:id", async (req, rc) => {
      const id = pathParam(req.params, "id");
      const record = (await listWebhookRecords(rc.app.db.storage)).find((r) => r.id === id);
      if (!record) throw notFound(`webhook ${id}`);
      return presentWebhook(record, await rc.app.webhooks.stats(id), rc.app.webhooks.pending(id));
    })
    .delete("/v1/webhooks/:id", async (req, rc) => {
      await removeWebhook(rc.app.db.storage, pathParam(req.params, "id"));
      await rc.app.webhooks.refresh(true);
      return noContent();
    });
}
