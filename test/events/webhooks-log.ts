/**
 * Webhooks as readers of the durable event log, against any runtime that serves the app (webhooks-node.test.ts,
 * webhooks-workerd.test.ts): no history for a new webhook, delivery IDs made of the webhook and the eventID, in-order
 * delivery behind a failing event, and replay (`POST /v1/webhooks/{id}/replay?since=`) within what the log keeps.
 * Dead letters and retention gaps, which take ten attempts or a compaction, are in src/services/webhooks.test.ts;
 * redelivery after a restart in daemon.test.ts (kill -9) and workerd.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Chat } from "../../src/schema/wire.ts";
import { chatPath, enc, randomToken, waitFor } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { Receiver, type Delivery } from "./kit.ts";
import type { StartResume } from "./resume.ts";

/** The log keeps this many events on the suite's server, so that a replay from the start can be too old. */
const MAX_EVENTS = 20;

export function webhookLogSuite(name: string, start: StartResume) {
  describe(`webhooks read the event log on ${name}`, () => {
    const rw = randomToken("rw");
    const ro = randomToken("ro");
    let server: Awaited<ReturnType<StartResume>>;
    let api: Api;
    let a: Chat, b: Chat;
    const receivers: Receiver[] = [];
    const hooks: string[] = [];

    beforeAll(async () => {
      server = await start({
        seed: { chats: 4, messages: 20, accounts: 1, seed: 21 },
        tokens: [
          { token: rw, scopes: ["read", "write"] },
          { token: ro, scopes: ["read"] },
        ],
        maxEvents: MAX_EVENTS,
      });
      api = new Api(server.url, rw);
      [a, b] = await api.quietChats((await api.get("/v1/accounts"))[0].accountID, 2);
    });
    afterAll(async () => {
      for (const id of hooks) await api.raw("DELETE", `/v1/webhooks/${enc(id)}`);
      for (const r of receivers) await r.stop();
      await server.stop();
    });

    async function receiver() {
      const r = await new Receiver().start();
      receivers.push(r);
      return r;
    }
    async function addHook(url: string, chatIDs?: string[]) {
      const hook = await api.ok("POST", "/v1/webhooks", { url, ...(chatIDs ? { chatIDs } : {}) });
      hooks.push(hook.id);
      return hook as { id: string; cursor: number; secret: string };
    }
    const latest = async () => (await api.get("/v1/events?limit=1")).latestEventID as number;
    const describeChat = (chat: Chat, description: string) => api.ok("PATCH", chatPath(chat.id), { description });
    const descriptionOf = (d: Delivery) => d.json?.entries?.[0]?.description as string | undefined;
    const dlv = (hookID: string, eventID: number) => `dlv_${hookID.replace(/^wh_/, "")}_${eventID}`;

    it("a new webhook starts at the newest event (no history); a delivery ID is the webhook and the eventID", async () => {
      await describeChat(a, `history ${Date.now()}`);
      const head = await latest();
      const r = await receiver();
      const hook = await addHook(r.url, [a.id]);
      expect(hook.cursor).toBe(head);
      const description = `after the webhook ${Date.now()}`;
      await describeChat(a, description);
      const d = await r.waitFor("the new event", (x) => descriptionOf(x) === description);
      expect(r.deliveries).toHaveLength(1);
      expect(d.json.eventID).toBeGreaterThan(head);
      expect(d.headers["x-inboxd-delivery"]).toBe(dlv(hook.id, d.json.eventID));
      expect(d.json).toMatchObject({
        deliveryID: dlv(hook.id, d.json.eventID),
        webhookID: hook.id,
        type: "chat.upserted",
        chatID: a.id,
      });
      const shown = await waitFor("the cursor past it", async () => {
        const s = await api.get(`/v1/webhooks/${enc(hook.id)}`);
        return s.cursor === d.json.eventID && s;
      });
      expect(shown).toMatchObject({ pending: 0, delivered: 1, failed: 0, failures: [] });
    });

    it("delivers in order: while the first event is retried, the later ones wait; then all arrive, each once accepted", async () => {
      const r = await receiver();
      r.answer = ({ n }) => (n < 2 ? 500 : 200);
      const hook = await addHook(r.url, [a.id]);
      const stamp = Date.now();
      const texts = [1, 2, 3].map((i) => `in order ${i} ${stamp}`);
      for (const text of texts) await describeChat(a, text);
      const failing = await waitFor("pending while the first is retried", async () => {
        const s = await api.get(`/v1/webhooks/${enc(hook.id)}`);
        return s.lastError && s;
      });
      expect(failing.pending).toBe(3);
      await r.waitFor("the last event, accepted", (x) => descriptionOf(x) === texts[2] && x.status === 200, 15_000);
      expect(r.deliveries.map((x) => [descriptionOf(x), x.status])).toEqual([
        [texts[0], 500],
        [texts[0], 500],
        [texts[0], 200],
        [texts[1], 200],
        [texts[2], 200],
      ]);
      const eventIDs = r.accepted().map((x) => x.json.eventID as number);
      expect(eventIDs).toEqual([...eventIDs].sort((x, y) => x - y));
      expect(new Set(r.deliveries.slice(0, 3).map((x) => x.headers["x-inboxd-delivery"])).size).toBe(1);
      // Backoff: 1 s, then 2 s (±20 %).
      expect(r.deliveries[1]!.at - r.deliveries[0]!.at).toBeGreaterThanOrEqual(700);
      expect(r.deliveries[2]!.at - r.deliveries[1]!.at).toBeGreaterThanOrEqual(1400);
      await waitFor("delivered", async () => (await api.get(`/v1/webhooks/${enc(hook.id)}`)).delivered === 3);
    });

    it("replay?since delivers the events after it again, in order, with the same delivery IDs", async () => {
      const r = await receiver();
      const hook = await addHook(r.url, [b.id]);
      const stamp = Date.now();
      const texts = [1, 2, 3].map((i) => `replayed ${i} ${stamp}`);
      for (const text of texts) await describeChat(b, text);
      await r.waitFor("the first pass", (x) => descriptionOf(x) === texts[2]);
      const first = r.deliveries.map((x) => [descriptionOf(x), x.headers["x-inboxd-delivery"], x.json.eventID]);
      const since = (first[0]![2] as number) - 1;
      const replayed = await api.raw("POST", `/v1/webhooks/${enc(hook.id)}/replay?since=${since}`);
      expect(replayed.status, replayed.text).toBe(200);
      expect(replayed.body).toMatchObject({ id: hook.id, cursor: since });
      expect(replayed.body.secret).toBeUndefined();
      await waitFor("the second pass", () => r.deliveries.length === 6);
      expect(
        r.deliveries.slice(3).map((x) => [descriptionOf(x), x.headers["x-inboxd-delivery"], x.json.eventID]),
      ).toEqual(first);
      // Byte for byte the same body: only the timestamp and signature differ.
      expect(r.deliveries.slice(3).map((x) => x.body)).toEqual(r.deliveries.slice(0, 3).map((x) => x.body));
      await waitFor("caught up again", async () => (await api.get(`/v1/webhooks/${enc(hook.id)}`)).delivered === 6);
    });

    it("a receiver that refuses connections: lastError says why (the refusal and its address), not fetch's bare 'fetch failed'", async () => {
      const r = await receiver();
      await r.stop(); // nothing listens on its port any more
      const hook = await addHook(r.url, [a.id]);
      await describeChat(a, `refused ${Date.now()}`);
      const failing = await waitFor(
        "a failed attempt",
        async () => (await api.get(`/v1/webhooks/${enc(hook.id)}`)).lastError,
      );
      // Node's fetch keeps the reason in its error's cause; workerd's says only "Network connection lost.".
      if (name === "node") expect(failing.message).toBe(`connect ECONNREFUSED 127.0.0.1:${r.port}`);
      else expect(failing.message).toMatch(/\S/);
    });

    it("a webhook for a chat that does not exist is refused with a 422 naming it, and nothing is registered", async () => {
      const before = (await api.get("/v1/webhooks")).items.length;
      const refused = await api.raw("POST", "/v1/webhooks", {
        json: { url: "http://127.0.0.1:9/nochat", chatIDs: [a.id, "!nosuch:sandbox.invalid"] },
      });
      expect(refused.status, refused.text).toBe(422);
      expect(refused.body).toMatchObject({
        code: "UNPROCESSABLE_ENTITY",
        details: { issues: [{ path: ["body", "chatIDs", 1] }] },
      });
      expect(refused.body.message).toContain("unknown chat !nosuch:sandbox.invalid");
      expect((await api.get("/v1/webhooks")).items).toHaveLength(before);
    });

    it("replay refuses a since outside the log (400 after the newest, 410 before the oldest kept), bad input, a read-only token and unknown webhooks", async () => {
      const hook = await addHook("http://127.0.0.1:9/replay", [b.id]);
      const replay = (query: string, token?: string) =>
        api.raw("POST", `/v1/webhooks/${enc(hook.id)}/replay${query}`, { token });
      // More events than the log keeps: the oldest ones go.
      for (let i = 0; i < MAX_EVENTS / 2 + 2; i++) await api.send(a.id, `filler ${i}`);
      const page = await waitFor("compaction", async () => {
        const p = await api.get("/v1/events?limit=1");
        return p.oldestEventID > 2 && p;
      });
      const tooOld = await replay(`?since=${page.oldestEventID - 2}`);
      expect(tooOld.status).toBe(410);
      expect(tooOld.body).toMatchObject({ code: "RESYNC_REQUIRED", details: { oldestEventID: expect.any(Number) } });
      expect(tooOld.body.message).toMatch(/no longer kept/);
      const tooNew = await replay(`?since=${page.latestEventID + 1000}`);
      expect(tooNew.status).toBe(400);
      expect(tooNew.body.message).toMatch(/after the newest event/);
      for (const query of ["", "?since=", "?since=abc", "?since=-1", "?since=1.5"])
        expect((await replay(query)).status, query).toBe(400);
      expect((await replay("?since=0", ro)).status).toBe(403);
      expect((await api.raw("POST", "/v1/webhooks/wh_doesnotexist/replay?since=0")).status).toBe(404);
      const oldest = await api.get("/v1/events?limit=1");
      const ok = await replay(`?since=${oldest.oldestEventID - 1}`);
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.cursor).toBe(oldest.oldestEventID - 1);
    });
  });
}
