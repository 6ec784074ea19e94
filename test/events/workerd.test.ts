/**
 * The shared event suite on the Worker (workerd through Miniflare), plus what only the Worker has: hibernatable
 * WebSockets whose protocol state lives in the socket attachment, and alarms that survive a restart.
 *
 * Not tested here: the Origin check. The Worker runs with allowedHosts "*" (remote access is its normal mode), so a
 * foreign Origin is accepted there; the token is still required.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorkerd, type WorkerdServer } from "../harness/workerd.ts";
import type { Chat } from "../../src/schema/wire.ts";
import { chatPath, enc, randomToken, sleep, waitFor } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { connect, Receiver, type Conn } from "./kit.ts";
import { eventSuite } from "./suite.ts";
import { resumeSuite } from "./resume.ts";

eventSuite("workerd", (options) => startWorkerd(options));
resumeSuite("workerd", ({ maxEvents, ...options }) =>
  startWorkerd({ ...options, vars: maxEvents ? { INBOXD_EVENT_LOG_MAX_EVENTS: String(maxEvents) } : undefined }),
);

describe("workerd only: restarts and hibernation", () => {
  let server: WorkerdServer;
  let api: Api;
  let chats: Chat[];
  const rw = randomToken("rw");
  const conns: Conn[] = [];
  const conn = async (chatIDs: string[]) => {
    const c = await connect(server.url, rw, chatIDs);
    conns.push(c);
    return c;
  };

  beforeAll(async () => {
    server = await startWorkerd({
      seed: { chats: 8, messages: 80, accounts: 1, seed: 4 },
      tokens: [{ token: rw, scopes: ["read", "write"] }],
    });
    api = new Api(server.url, rw);
    chats = await api.quietChats((await api.get("/v1/accounts"))[0].accountID, 3);
  });
  afterAll(async () => {
    for (const c of conns) c.close();
    await server.stop();
  });

  it("a connection idle long enough for the object to hibernate still gets events, seq continuing", async () => {
    const c = await conn([chats[0].id]);
    await api.ok("PATCH", chatPath(chats[0].id), { description: "before the nap" });
    const before = await c.event("chat.upserted", chats[0].id);
    // workerd evicts an object whose only open sockets are hibernatable after ~10 s without events.
    await sleep(15_000);
    const from = c.mark();
    await api.ok("PATCH", chatPath(chats[0].id), { description: "after the nap" });
    const after = await c.event("chat.upserted", chats[0].id, { from });
    expect(after.entries![0].description).toBe("after the nap");
    expect(after.seq).toBe(before.seq + 1);
    // Its subscriptions survived too: another chat's events still do not reach it.
    await api.ok("PATCH", chatPath(chats[1].id), { description: "not subscribed" });
    await api.ok("PATCH", chatPath(chats[0].id), { description: "barrier" });
    await c.event("chat.upserted", chats[0].id, { from, where: (e) => e.entries?.[0]?.description === "barrier" });
    expect(c.events(from).map((e) => e.chatID)).toEqual([chats[0].id, chats[0].id]);
    // And it still answers commands.
    expect(await c.request({ type: "subscriptions.set", chatIDs: ["*"] })).toMatchObject({
      type: "subscriptions.updated",
      chatIDs: ["*"],
    });
  }, 40_000);

  it("after a restart (storage kept) a new connection gets events; a reminder set before it fires after it", async () => {
    const old = await conn(["*"]);
    // Lead time for the reminder: long enough for a restart on a loaded CI machine (three runtimes in parallel),
    // since the "not fired yet" check below must happen before it is due.
    const at = Date.now() + 8000;
    await api.ok("POST", `${chatPath(chats[2].id)}/reminders`, { reminder: { remindAtMs: at } });
    await old.event("chat.upserted", chats[2].id);
    await server.restart();
    const checkedAt = Date.now();
    expect(checkedAt, "the restart took longer than the reminder's lead time").toBeLessThan(at - 500);
    expect((await api.chat(chats[2].id)).reminder).toMatchObject({ remindAtMs: at, isFired: false });
    // Connect before the reminder is due, so the new connection sees it fire.
    const fresh = await conn(["*"]);
    await api.ok("PATCH", chatPath(chats[1].id), { description: "after the restart" });
    const e = await fresh.event("chat.upserted", chats[1].id);
    expect(e.seq).toBe(0);
    expect(e.entries![0].description).toBe("after the restart");
    // The alarm was stored with the object: the reminder fires in the new process.
    const fired = await fresh.event("chat.upserted", chats[2].id, {
      timeoutMs: 10_000,
      where: (x) => x.entries?.[0]?.reminder?.isFired === true,
    });
    expect(Date.parse(fired.entries![0].reminder.firedAt)).toBeGreaterThanOrEqual(at);
    expect((await api.chat(chats[2].id)).reminder).toMatchObject({ isFired: true });
    // The old socket belonged to the old process (best effort: it should learn so).
    await old.waitClosed(10_000).catch(() => undefined);
    expect(old.closed, "the pre-restart connection was never closed").toBeDefined();
  }, 40_000);

  it("webhook deliveries made before a restart are retried after it", async () => {
    const receiver = await new Receiver().start();
    try {
      receiver.answer = () => 500;
      const hook = await api.ok("POST", "/v1/webhooks", { url: receiver.url });
      await api.ok("PATCH", chatPath(chats[0].id), { description: `webhook restart ${Date.now()}` });
      const first = await receiver.waitFor("the first (failed) attempt", () => true);
      receiver.answer = () => 200;
      await server.restart();
      const retried = await receiver.waitFor("the retry after the restart", (d) => d.status === 200, 15_000);
      expect(retried.headers["x-inboxd-delivery"]).toBe(first.headers["x-inboxd-delivery"]);
      await waitFor("delivered", async () => (await api.get(`/v1/webhooks/${enc(hook.id)}`)).delivered === 1);
      await api.ok("DELETE", `/v1/webhooks/${enc(hook.id)}`);
    } finally {
      await receiver.stop();
    }
  }, 40_000);
});
