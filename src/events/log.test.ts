import { createStorage } from "unstorage";
import { describe, expect, it } from "vitest";
import { Kv } from "../store/kv.ts";
import { EventLog, eventLogSettings } from "./log.ts";
import { frameFor, type ConnectionState } from "./protocol.ts";
import { domainEvent, type DomainEvent } from "../schema/events.ts";
import { replayLog } from "./replay.ts";

const event = (n: number, chatID = "chat-a") =>
  domainEvent("message.upserted", "2026-11-24T00:00:00.000Z", chatID, [`m${n}`], { entries: [{ n }] });

/** What a commit does with the log: append while the batch is taken, mark durable once it is written. */
async function commit(kv: Kv, log: EventLog, events: DomainEvent[]): Promise<DomainEvent[]> {
  const logged = log.append(events);
  await kv.commit();
  log.markDurable(logged);
  return logged;
}

function setup(options: ConstructorParameters<typeof EventLog>[1] = {}) {
  const storage = createStorage();
  const kv = new Kv(storage);
  return { storage, kv, log: new EventLog(kv, options) };
}

const ids = (page: Awaited<ReturnType<EventLog["read"]>>) => ("events" in page ? page.events.map((e) => e.id) : page);

describe("EventLog", () => {
  it("numbers events from 1 in commit order and puts eventID right after type", async () => {
    const { kv, log } = setup();
    await log.load();
    const first = await commit(kv, log, [event(1), event(2)]);
    const second = await commit(kv, log, [event(3)]);
    expect([...first, ...second].map((e) => e.id)).toEqual([1, 2, 3]);
    expect(first[0]!.body.startsWith('"type":"message.upserted","eventID":1,"ts":')).toBe(true);
    expect(JSON.parse(`{${second[0]!.body}`)).toMatchObject({
      type: "message.upserted",
      eventID: 3,
      chatID: "chat-a",
      ids: ["m3"],
      entries: [{ n: 3 }],
    });
    expect(ids(await log.read(0))).toEqual([1, 2, 3]);
    expect(ids(await log.read(1, 1))).toEqual([2]);
    expect(ids(await log.read(3))).toEqual([]);
    // Ahead of the log (restored data): the reader must start over, not wait for IDs that will mean other events.
    expect(await log.read(4)).toEqual({ gone: true, oldest: 1 });
  });

  it("shows readers only events whose commit is durable", async () => {
    const { kv, log } = setup();
    await log.load();
    const logged = log.append([event(1)]);
    expect(ids(await log.read(0))).toEqual([]);
    expect(log.durable).toBe(0);
    await kv.commit();
    log.markDurable(logged);
    expect(ids(await log.read(0))).toEqual([1]);
  });

  it("continues after a restart on the same storage, with what was committed", async () => {
    const { storage, kv, log } = setup();
    await log.load();
    await commit(kv, log, [event(1), event(2)]);
    log.append([event(3)]); // appended but its commit never ran: lost with the process
    const again = new EventLog(new Kv(storage));
    await again.load();
    expect(again.durable).toBe(2);
    const next = again.append([event(4)]);
    expect(next[0]!.id).toBe(3);
  });

  it("keeps at most maxEvents: an older cursor is told it is gone, never handed a gap", async () => {
    const { storage, kv, log } = setup({ maxEvents: 5 });
    await log.load();
    for (let i = 1; i <= 12; i++) await commit(kv, log, [event(i)]);
    expect(log.overflow).toBe(7);
    expect(await log.compact()).toBe(7);
    expect(log.oldest).toBe(8);
    expect(await log.read(2)).toEqual({ gone: true, oldest: 8 });
    expect(await log.read(6)).toEqual({ gone: true, oldest: 8 });
    expect(ids(await log.read(7))).toEqual([8, 9, 10, 11, 12]);
    expect(await storage.hasItem("ev:000000000007")).toBe(false);
    expect(await storage.hasItem("ev:000000000008")).toBe(true);
    // The new start is durable: a restart agrees.
    const again = new EventLog(new Kv(storage), { maxEvents: 5 });
    await again.load();
    expect(again.oldest).toBe(8);
  });

  it("drops events older than maxAgeMs", async () => {
    let now = 1_000_000;
    const { kv, log } = setup({ maxAgeMs: 10_000, now: () => now });
    await log.load();
    await commit(kv, log, [event(1), event(2)]);
    now += 6_000;
    await commit(kv, log, [event(3)]);
    now += 6_000; // 1 and 2 are 12 s old, 3 is 6 s old
    expect(await log.compact()).toBe(2);
    expect(log.oldest).toBe(3);
    expect(ids(await log.read(2))).toEqual([3]);
  });

  it("logs nothing when disabled (only for measuring its cost)", async () => {
    const { kv, log } = setup({ enabled: false });
    await log.load();
    const logged = await commit(kv, log, [event(1)]);
    expect(logged[0]!.id).toBeUndefined();
    expect(ids(await log.read(0))).toEqual([]);
  });

  it("reads its settings from the environment, refusing nonsense", () => {
    expect(eventLogSettings({ INBOXD_EVENT_LOG_MAX_AGE: "60", INBOXD_EVENT_LOG_MAX_EVENTS: "500" })).toEqual({
      maxAgeMs: 60_000,
      maxEvents: 500,
      enabled: undefined,
    });
    expect(eventLogSettings({ INBOXD_EVENT_LOG: "off" }).enabled).toBe(false);
    expect(() => eventLogSettings({ INBOXD_EVENT_LOG_MAX_EVENTS: "many" })).toThrow(
      /INBOXD_EVENT_LOG_MAX_EVENTS must be a whole number/,
    );
  });
});

describe("replayLog", () => {
  const eventIDs = (frames: string[]) => frames.map((f) => JSON.parse(f).eventID as number);

  it("replays after the cursor, then hands over to live delivery with no gap and no duplicate at the seam", async () => {
    const { kv, log } = setup();
    await log.load();
    for (let i = 1; i <= 10; i++) await commit(kv, log, [event(i)]);
    const state: ConnectionState = { chatIDs: ["*"], seq: 0, cursor: 4, replaying: true };
    const frames: string[] = [];
    const live = async (events: DomainEvent[]) => {
      const logged = await commit(kv, log, events);
      // What the runtime does with a durable commit: every connection gets frameFor.
      for (const e of logged) {
        const frame = frameFor(state, e);
        if (frame !== null) frames.push(frame);
      }
    };
    // Commits land while the replay is sending: their events must come out once, in order.
    await replayLog(
      log,
      state,
      () => state,
      async (frame) => {
        frames.push(frame);
        if (frames.length === 2) await live([event(11), event(12)]);
      },
    );
    expect(state.replaying).toBe(false);
    await live([event(13)]);
    expect(eventIDs(frames)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(frames.map((f) => JSON.parse(f).seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("sends only the subscribed chats' events but moves the cursor past the others", async () => {
    const { kv, log } = setup();
    await log.load();
    await commit(kv, log, [event(1, "a"), event(2, "b"), event(3, "a")]);
    const state: ConnectionState = { chatIDs: ["a"], seq: 0, cursor: 0, replaying: true };
    const frames: string[] = [];
    await replayLog(
      log,
      state,
      () => state,
      (frame) => void frames.push(frame),
    );
    expect(eventIDs(frames)).toEqual([1, 3]);
    expect(state.cursor).toBe(3);
  });

  it("tells a cursor older than the log to resync, then goes live from the head", async () => {
    const { kv, log } = setup({ maxEvents: 2 });
    await log.load();
    for (let i = 1; i <= 6; i++) await commit(kv, log, [event(i)]);
    await log.compact();
    const state: ConnectionState = { chatIDs: ["*"], seq: 0, cursor: 1, replaying: true };
    const frames: string[] = [];
    await replayLog(
      log,
      state,
      () => state,
      (frame) => void frames.push(frame),
    );
    expect(frames.map((f) => JSON.parse(f))).toEqual([
      expect.objectContaining({ seq: 0, type: "resync.required", oldestEventID: 5, latestEventID: 6 }),
    ]);
    expect(state).toMatchObject({ cursor: 6, replaying: false });
  });

  it("stops when the connection's state is replaced by a newer subscriptions.set", async () => {
    const { kv, log } = setup();
    await log.load();
    for (let i = 1; i <= 5; i++) await commit(kv, log, [event(i)]);
    const state: ConnectionState = { chatIDs: ["*"], seq: 0, cursor: 0, replaying: true };
    let current: ConnectionState = state;
    const frames: string[] = [];
    await replayLog(
      log,
      state,
      () => current,
      (frame) => {
        frames.push(frame);
        current = { ...state };
      },
    );
    expect(frames).toHaveLength(1);
  });
});
