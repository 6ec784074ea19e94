/**
 * The webhook dispatcher (and the records of services/webhooks.ts it delivers for) over a real event log and real HTTP receivers on loopback (test/events/kit.ts): the parts
 * that take too long against a whole server (dead letters after 10 attempts, retention) run here with a short
 * backoff; the scenario suites (test/events/webhooks-log.ts) run the rest against both runtimes.
 */
import { createStorage, type Storage } from "unstorage";
import { afterEach, describe, expect, it } from "vitest";
import { Receiver, type Delivery } from "../../test/events/kit.ts";
import { waitFor } from "../../test/kit/common.ts";
import { EventLog } from "./log.ts";
import { domainEvent } from "../schema/events.ts";
import { ApiError } from "../errors.ts";
import { LIMITS } from "../schema/limits.ts";
import { Kv } from "../store/kv.ts";
import { createWebhook, MAX_DEAD_LETTERS, storedWebhooks } from "../services/webhooks.ts";
import { deliveryFailure, deliveryID, MAX_ATTEMPTS, WebhookDispatcher } from "./webhook-dispatcher.ts";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Db } from "../store/db.ts";
import { seedDataset } from "../seed/dataset.ts";

/** What the CLI passes: the log's head as the store has it (the chats are read from the store). */
const asTheCli = async (storage: Storage) => ({ head: await EventLog.head(storage) });

// Port 9 (discard) on loopback: nothing listens, so every delivery fails at once, as to a receiver that is down.
const DOWN = "http://127.0.0.1:9/hook";

const receivers: Receiver[] = [];
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  for (const r of receivers.splice(0)) await r.stop();
});

async function receiver() {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
}

/**
 * A device as the app wires it, without the rest of the app: the log, the dispatcher as one of its sinks, and a
 * timer for the runtime's wake-up. `emit` commits events the way the hub does (logged in the commit, handed to the
 * sinks once durable). A second `device` over the same storage is the app after a restart.
 */
async function device(
  storage: Storage = createStorage(),
  options: { backoffMs?: number; maxEvents?: number; timeoutMs?: number } = {},
) {
  const kv = new Kv(storage);
  const log = new EventLog(kv, { maxEvents: options.maxEvents });
  await log.load();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const dispatcher: WebhookDispatcher = new WebhookDispatcher(kv, {
    backoffMs: () => options.backoffMs ?? 20,
    timeoutMs: options.timeoutMs,
    onIdleUntil: (at) => {
      clearTimeout(timer);
      if (at !== undefined && !stopped) timer = setTimeout(() => void dispatcher.run(), Math.max(0, at - Date.now()));
    },
  });
  await dispatcher.load(log);
  stops.push(() => {
    stopped = true;
    clearTimeout(timer);
  });
  return {
    storage,
    log,
    dispatcher,
    async emit(chatID: string, ...texts: string[]) {
      const events = log.append(
        texts.map((text) =>
          domainEvent("message.upserted", new Date().toISOString(), chatID, [text], { entries: [{ text }] }),
        ),
      );
      await kv.commit();
      log.markDurable(events);
      dispatcher.deliver(events);
      return events.map((e) => e.id!);
    },
    // Every chat ID names a chat here: the events are made up, there is no chat table.
    hook: async (url: string, chatIDs?: string[]) =>
      (await dispatcher.create({ url, chatIDs }, (id) => ({ id }))) as { id: string; secret: string; cursor: number },
  };
}

const textOf = (d: Delivery) => d.json?.entries?.[0]?.text as string;
const idOf = (d: Delivery) => d.headers["x-inboxd-delivery"] as string;

describe("webhook bounds", () => {
  it(`takes at most ${LIMITS.webhooks} webhooks per device (409 after)`, async () => {
    const storage = createStorage();
    for (let i = 0; i < LIMITS.webhooks; i++)
      await createWebhook(storage, { url: `${DOWN}/${i}` }, await asTheCli(storage));
    const refused = await createWebhook(storage, { url: DOWN }, await asTheCli(storage)).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(409);
  });
});

describe("webhook chats", () => {
  it("a chat ID that names no chat is refused with a 422 naming it, also without a running app (the CLI's way); a localChatID is stored as its chat's ID", async () => {
    const storage = createStorage();
    const db = await Db.open(storage);
    await seedDataset(db, { chats: 3, messages: 0, seed: 3 });
    const [chat] = db.chats.all();
    const refused = await createWebhook(
      storage,
      { url: DOWN, chatIDs: [chat!.id, "!nosuch:sandbox.invalid"] },
      await asTheCli(storage),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({
      status: 422,
      message: expect.stringContaining("unknown chat !nosuch:sandbox.invalid"),
      details: { issues: [{ path: ["body", "chatIDs", 1] }] },
    });
    expect(await storedWebhooks(storage, await EventLog.head(storage))).toEqual([]);
    const hook = await createWebhook(
      storage,
      { url: DOWN, chatIDs: [String(chat!.no), chat!.id] },
      await asTheCli(storage),
    );
    expect(hook.chatIDs).toEqual([chat!.id]);
  });
});

describe("why a delivery failed", () => {
  const lastError = async (d: Awaited<ReturnType<typeof device>>, id: string) =>
    (await waitFor("a failed attempt", async () => (await d.dispatcher.present(id)).lastError, 5000)).message;

  it("a receiver that refuses connections: the refusal and the address, not fetch's bare 'fetch failed'", async () => {
    const d = await device(createStorage(), { backoffMs: 60_000 });
    const r = await receiver();
    await r.stop(); // nothing listens on its port any more
    const hook = await d.hook(r.url);
    await d.emit("c", "refused");
    expect(await lastError(d, hook.id)).toBe(`connect ECONNREFUSED 127.0.0.1:${r.port}`);
  });

  it("a receiver that does not answer in time: how long it was given", async () => {
    const silent: Server = createServer(() => undefined); // takes the request, never answers
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    stops.push(() => {
      silent.closeAllConnections();
      silent.close();
    });
    const d = await device(createStorage(), { backoffMs: 60_000, timeoutMs: 300 });
    const hook = await d.hook(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`);
    await d.emit("c", "unanswered");
    expect(await lastError(d, hook.id)).toBe("no answer within 0.3 s");
  });

  it("TLS failures, unknown names, several refused addresses and fetch's bad ports, each in words", async () => {
    const failed = (cause: Error) => new TypeError("fetch failed", { cause });
    const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
    const url = "https://hooks.example/in";
    expect(deliveryFailure(failed(coded("self-signed certificate", "DEPTH_ZERO_SELF_SIGNED_CERT")), url, 10_000)).toBe(
      "TLS: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)",
    );
    const openssl =
      "809C8CB09E7F0000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/openssl/ssl/record/ssl3_record.c:350:\n";
    expect(deliveryFailure(failed(coded(openssl, "ERR_SSL_WRONG_VERSION_NUMBER")), url, 10_000)).toBe(
      "TLS: wrong version number (ERR_SSL_WRONG_VERSION_NUMBER)",
    );
    expect(deliveryFailure(failed(coded("getaddrinfo ENOTFOUND hooks.example", "ENOTFOUND")), url, 10_000)).toBe(
      "getaddrinfo ENOTFOUND hooks.example",
    );
    const both = Object.assign(
      new AggregateError(
        [new Error("connect ECONNREFUSED ::1:8080"), new Error("connect ECONNREFUSED 127.0.0.1:8080")],
        "",
      ),
      { code: "ECONNREFUSED" },
    );
    expect(deliveryFailure(failed(both), url, 10_000)).toBe(
      "connect ECONNREFUSED ::1:8080; connect ECONNREFUSED 127.0.0.1:8080",
    );
    expect(deliveryFailure(failed(coded("other side closed", "UND_ERR_SOCKET")), url, 10_000)).toBe(
      "other side closed (UND_ERR_SOCKET)",
    );
    // A real fetch to a port the Fetch standard blocks (DOWN's port 9).
    const blocked = await fetch(DOWN, { method: "POST" }).catch((error: unknown) => error);
    expect(deliveryFailure(blocked, DOWN, 10_000)).toBe(
      'fetch never connects to port 9 (a "bad port" of the Fetch standard): use another port',
    );
  });
});

describe("webhooks read the event log", () => {
  it("a webhook created now gets no history: its cursor starts at the newest event", async () => {
    const d = await device();
    await d.emit("c", "old 1", "old 2");
    const r = await receiver();
    const hook = await d.hook(r.url);
    expect(hook.cursor).toBe(2);
    const [id] = await d.emit("c", "new");
    await r.waitFor("the new event", (x) => textOf(x) === "new");
    await d.dispatcher.run();
    expect(r.deliveries.map(textOf)).toEqual(["new"]);
    expect(r.deliveries[0]!.json).toMatchObject({
      deliveryID: deliveryID(hook.id, id!),
      webhookID: hook.id,
      type: "message.upserted",
      eventID: id,
    });
  });

  it("delivers in order per webhook: a receiver failing its first attempts holds the later events back; other webhooks do not wait", async () => {
    const d = await device(createStorage(), { backoffMs: 100 });
    const slow = await receiver();
    slow.answer = ({ n }) => (n < 3 ? 500 : 200);
    const fast = await receiver();
    const slowHook = await d.hook(slow.url);
    await d.hook(fast.url);
    const ids = [...(await d.emit("c", "one")), ...(await d.emit("c", "two")), ...(await d.emit("c", "three"))];
    // The healthy webhook has everything while the failing one is still on its first event.
    await fast.waitFor("all three", (x) => textOf(x) === "three");
    expect(slow.accepted()).toEqual([]);
    await slow.waitFor("the third event, accepted", (x) => textOf(x) === "three" && x.status === 200);
    expect(slow.deliveries.map((x) => [textOf(x), x.status])).toEqual([
      ["one", 500],
      ["one", 500],
      ["one", 500],
      ["one", 200],
      ["two", 200],
      ["three", 200],
    ]);
    // Every attempt at an event carries the same delivery ID: the webhook and the eventID.
    expect(slow.deliveries.map(idOf)).toEqual(
      [ids[0], ids[0], ids[0], ids[0], ids[1], ids[2]].map((id) => deliveryID(slowHook.id, id!)),
    );
    await d.dispatcher.run(); // the loop that delivered it has saved its cursor
    const view = await d.dispatcher.present(slowHook.id);
    expect(view).toMatchObject({
      cursor: ids[2],
      pending: 0,
      delivered: 3,
      failed: 0,
      failures: [],
      lastError: { deliveryID: deliveryID(slowHook.id, ids[0]!), message: "HTTP 500", attempts: 3 },
    });
  });

  it(`dead-letters a delivery after ${MAX_ATTEMPTS} attempts, then moves on to the next event`, async () => {
    const d = await device();
    const r = await receiver();
    r.answer = ({ body }) => (body.includes("poison") ? 500 : 200);
    const hook = await d.hook(r.url);
    const [poison] = await d.emit("c", "poison");
    await d.emit("c", "fine");
    await r.waitFor("the event after the dead letter", (x) => textOf(x) === "fine", 10_000);
    const attempts = r.deliveries.filter((x) => textOf(x) === "poison");
    expect(attempts).toHaveLength(MAX_ATTEMPTS);
    expect(new Set(attempts.map(idOf))).toEqual(new Set([deliveryID(hook.id, poison!)]));
    await d.dispatcher.run(); // the loop that delivered it has saved its cursor
    const view = await d.dispatcher.present(hook.id);
    expect(view).toMatchObject({ delivered: 1, failed: 1, pending: 0, cursor: poison! + 1 });
    expect(view.failures).toEqual([
      {
        deliveryID: deliveryID(hook.id, poison!),
        eventID: poison,
        type: "message.upserted",
        at: expect.any(String),
        attempts: MAX_ATTEMPTS,
        message: "HTTP 500",
      },
    ]);
    // Kept: another process (the CLI) reads the same.
    const [stored] = await storedWebhooks(d.storage, await EventLog.head(d.storage));
    expect(stored).toMatchObject({ delivered: 1, failed: 1, cursor: poison! + 1, failures: view.failures });
  });

  it(`keeps the newest ${MAX_DEAD_LETTERS} dead letters`, async () => {
    const d = await device(createStorage(), { backoffMs: 0 });
    const hook = await d.hook(DOWN);
    const ids = await d.emit("c", ...Array.from({ length: MAX_DEAD_LETTERS + 5 }, (_, i) => `doomed ${i}`));
    const view = await waitFor(
      "every event given up on",
      async () => {
        const v = await d.dispatcher.present(hook.id);
        return v.failed === ids.length && v;
      },
      20_000,
    );
    expect(view.failures).toHaveLength(MAX_DEAD_LETTERS);
    expect(view.failures[0]!.eventID).toBe(ids.at(-1));
    expect(view.failures.at(-1)!.eventID).toBe(ids[5]);
    expect(view.cursor).toBe(ids.at(-1));
  });

  it("filters by chat: the cursor passes other chats' events, pending counts only the webhook's", async () => {
    const d = await device();
    const r = await receiver();
    const hook = await d.hook(r.url, ["mine"]);
    await d.emit("other", "x1", "x2");
    const [id] = await d.emit("mine", "for me");
    await d.emit("other", "x3");
    await r.waitFor("the event of its chat", (x) => textOf(x) === "for me");
    await d.dispatcher.run();
    expect(r.deliveries.map(textOf)).toEqual(["for me"]);
    expect(await d.dispatcher.present(hook.id)).toMatchObject({ cursor: id! + 1, pending: 0, delivered: 1 });
  });

  it("redelivers after a crash and restart on the same storage with the same delivery ID, and nothing it had delivered", async () => {
    const storage = createStorage();
    const first = await device(storage);
    const r = await receiver();
    const hook = await first.hook(r.url);
    const [done] = await first.emit("c", "before");
    await r.waitFor("the first event", (x) => textOf(x) === "before");
    r.answer = () => 500;
    const [failing] = await first.emit("c", "while failing");
    await r.waitFor("a failed attempt", (x) => x.status === 500);
    // The crash: the process is gone, with whatever it had not committed (its last attempt is let finish, failing).
    stops.splice(0).forEach((stop) => stop());
    await first.dispatcher.run();
    r.answer = () => 200;
    const count = r.deliveries.length;
    const second = await device(storage);
    await second.dispatcher.run(); // as the runtimes do at start
    await r.waitFor("the redelivery", (x) => x.status === 200 && textOf(x) === "while failing");
    const after = r.deliveries.slice(count);
    expect(after.map(textOf)).toEqual(["while failing"]);
    expect(idOf(after[0]!)).toBe(deliveryID(hook.id, failing!));
    expect(idOf(r.deliveries[0]!)).toBe(deliveryID(hook.id, done!));
    await waitFor("the cursor past it", async () => (await second.dispatcher.present(hook.id)).cursor === failing);
    expect(await second.dispatcher.present(hook.id)).toMatchObject({ delivered: 2, pending: 0 });
  });

  it("replay delivers the events after `since` again, in order, with the same delivery IDs; refuses a since outside the log", async () => {
    const d = await device();
    const r = await receiver();
    const hook = await d.hook(r.url);
    const ids = await d.emit("c", "a", "b", "c");
    await r.waitFor("the first pass", (x) => textOf(x) === "c");
    const firstPass = r.deliveries.map(idOf);
    const replayed = await d.dispatcher.replay(hook.id, ids[0]!);
    expect(replayed.cursor).toBe(ids[0]);
    await waitFor("the replay", () => r.deliveries.length === 5);
    expect(r.deliveries.slice(3).map(idOf)).toEqual(firstPass.slice(1));
    expect(r.deliveries.slice(3).map(textOf)).toEqual(["b", "c"]);
    const tooNew = await d.dispatcher.replay(hook.id, ids[2]! + 1).catch((e: unknown) => e);
    expect(tooNew).toMatchObject({ status: 400, message: expect.stringContaining("after the newest event") });
    await expect(d.dispatcher.replay("wh_0000", 0)).rejects.toMatchObject({ status: 404 });
  });

  it("replay of a webhook waiting for a retry starts over at once, from since", async () => {
    const d = await device(createStorage(), { backoffMs: 60_000 });
    const r = await receiver();
    let failed = false;
    r.answer = ({ body }) => (body.includes('"text":"c"') && !failed ? ((failed = true), 500) : 200);
    const hook = await d.hook(r.url);
    const ids = await d.emit("c", "a", "b", "c");
    await r.waitFor("the failed attempt", (x) => x.status === 500);
    expect((await d.dispatcher.present(hook.id)).pending).toBe(1);
    await d.dispatcher.replay(hook.id, ids[0]! - 1);
    await r.waitFor("the replay, through c", (x) => x.status === 200 && textOf(x) === "c");
    expect(r.deliveries.map((x) => [textOf(x), x.status])).toEqual([
      ["a", 200],
      ["b", 200],
      ["c", 500],
      ["a", 200],
      ["b", 200],
      ["c", 200],
    ]);
    await d.dispatcher.run();
    expect(await d.dispatcher.present(hook.id)).toMatchObject({ cursor: ids[2], pending: 0, delivered: 5 });
  });

  it("replay from before what the log keeps is refused with 410; a cursor retention passed is reported, never skipped silently", async () => {
    const d = await device(createStorage(), { maxEvents: 3, backoffMs: 300 });
    const r = await receiver();
    r.answer = () => 500;
    const hook = await d.hook(r.url);
    const ids = await d.emit("c", "e1", "e2", "e3", "e4", "e5", "e6");
    await r.waitFor("a failed attempt", () => true);
    await d.log.compact();
    expect(d.log.oldest).toBe(4);
    const gone = await d.dispatcher.replay(hook.id, 2).catch((e: unknown) => e);
    expect(gone).toMatchObject({ status: 410, code: "RESYNC_REQUIRED", details: { oldestEventID: 4 } });
    r.answer = () => 200;
    await r.waitFor("the events still kept", (x) => textOf(x) === "e6" && x.status === 200, 5000);
    expect(r.accepted().map(textOf)).toEqual(["e4", "e5", "e6"]);
    await d.dispatcher.run(); // the loop that delivered it has saved its cursor
    const view = await d.dispatcher.present(hook.id);
    expect(view.lastError).toMatchObject({
      deliveryID: "",
      message: "3 events were dropped by retention before delivery (eventIDs 1–3)",
    });
    expect(view.failures[0]).toMatchObject({ deliveryID: "", eventID: 3, message: view.lastError!.message });
    expect(view).toMatchObject({ cursor: ids[5], delivered: 3 });
    // The oldest kept minus one is a valid since.
    expect((await d.dispatcher.replay(hook.id, 3)).cursor).toBe(3);
  });

  it("a cursor ahead of the log (the store lost its newest events) starts over at the head, and says so", async () => {
    const storage = createStorage();
    const first = await device(storage);
    await first.emit("c", "kept");
    const r = await receiver();
    const hook = await first.hook(r.url);
    stops.splice(0).forEach((stop) => stop());
    await storage.setItem(`whcur:${hook.id}`, { after: 40 }); // as if events 2–40 had been delivered, then lost
    const after = await device(storage);
    const view = await after.dispatcher.present(hook.id);
    expect(view.cursor).toBe(1);
    expect(view.lastError?.message).toMatch(/ahead of the event log/);
    await after.emit("c", "reused ID");
    await r.waitFor("the event with a reused ID", (x) => textOf(x) === "reused ID");
  });

  it("tries each outbox entry of an earlier version once, then drops it", async () => {
    const storage = createStorage();
    const before = await device(storage);
    await before.emit("c", "history");
    stops.splice(0).forEach((stop) => stop());
    const r = await receiver();
    const { id } = await createWebhook(storage, { url: r.url }, await asTheCli(storage));
    await storage.removeItem(`whcur:${id}`); // an earlier version kept no cursor
    const body = `{"deliveryID":"dlv_legacy","webhookID":"${id}","type":"chat.upserted","chatID":"c"}`;
    await storage.setItem("whq:dlv_legacy", {
      deliveryID: "dlv_legacy",
      webhookID: id,
      type: "chat.upserted",
      body,
      attempts: 3,
      nextAt: 0,
    });
    await storage.setItem("whq:dlv_orphan", {
      deliveryID: "dlv_orphan",
      webhookID: "wh_gone",
      type: "chat.upserted",
      body: "{}",
      attempts: 0,
      nextAt: 0,
    });
    const after = await device(storage);
    await after.dispatcher.run();
    expect(r.deliveries.map((x) => [idOf(x), x.body])).toEqual([["dlv_legacy", body]]);
    expect(await storage.getKeys("whq:")).toEqual([]);
    // The log's history is not delivered: the outbox held what was pending.
    expect(await after.dispatcher.present(id)).toMatchObject({ cursor: 1, delivered: 1 });
  });
});
