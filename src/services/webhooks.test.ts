import { createStorage } from "unstorage";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../http/limits.ts";
import { ApiError } from "../http/errors.ts";
import { Kv } from "../store/kv.ts";
import { createWebhook, WebhookDispatcher } from "./webhooks.ts";

// Port 9 (discard) on loopback: nothing listens, so every delivery fails at once, as to a receiver that is down.
const DOWN = "http://127.0.0.1:9/hook";

describe("webhook bounds", () => {
  it(`takes at most ${LIMITS.webhooks} webhooks per device (409 after)`, async () => {
    const storage = createStorage();
    for (let i = 0; i < LIMITS.webhooks; i++) await createWebhook(storage, { url: `${DOWN}/${i}` });
    const refused = await createWebhook(storage, { url: DOWN }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(409);
  });

  it(`keeps at most ${LIMITS.webhookPending} deliveries pending for a receiver that is down, counting the dropped ones failed`, async () => {
    const storage = createStorage();
    const hook = await createWebhook(storage, { url: DOWN });
    const kv = new Kv(storage);
    const dispatcher = new WebhookDispatcher(kv);
    await dispatcher.load();
    const extra = 25;
    for (let i = 0; i < LIMITS.webhookPending + extra; i++) dispatcher.enqueue([{ chatID: "c", body: `"type":"chat.upserted","n":${i}}` }]);
    await kv.commit();
    expect(dispatcher.pending(hook.id)).toBe(LIMITS.webhookPending);
    expect((await storage.getKeys("whq:")).length).toBe(LIMITS.webhookPending);
    await dispatcher.run();
    const stats = await dispatcher.stats(hook.id);
    expect(stats?.failed).toBe(extra);
  });
});
