import { createStorage } from "unstorage";
import { describe, expect, it } from "vitest";
import { Db } from "../store/db.ts";
import { EventHub } from "./hub.ts";
import { EventLog } from "./log.ts";
import { domainEvent } from "../schema/events.ts";
import { eventStream } from "./stream.ts";

/** A hub over a real store whose log holds `n` events of about 1 KB each, and a count of the log records read. */
async function hubWithEvents(n: number) {
  const storage = createStorage();
  const read = { keys: 0 };
  const getItems = storage.getItems.bind(storage);
  storage.getItems = (items, options) => {
    read.keys += items.filter((k) => (typeof k === "string" ? k : k.key).startsWith("ev:")).length;
    return getItems(items, options);
  };
  const db = await Db.open(storage);
  const log = new EventLog(db.kv);
  await log.load();
  const hub = new EventHub(db, log);
  db.observeCommits(hub);
  /** Commits 100 events the way focus events are logged (db.noteEvent, then the commit logs and delivers them). */
  const commitBatch = async (tag: string) => {
    for (let j = 0; j < 100; j++)
      db.noteEvent(
        domainEvent("message.upserted", "2026-11-24T00:00:00.000Z", "chat", [`${tag}.${j}`], {
          entries: [{ text: "x".repeat(1000) }],
        }),
      );
    await db.commit();
  };
  for (let i = 0; i < n; i += 100) await commitBatch(`m${i}`);
  return { hub, commitBatch, read };
}

async function readAll(response: Response, until: (text: string) => boolean) {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!until(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

/**
 * Checks `condition` after each timer (never before the first: work already under way on promises has then run)
 * until it holds; the generous deadline is reached only when it never does.
 */
async function until(what: string, condition: () => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  do {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  } while (!condition());
}

describe("eventStream (GET /v1/events as Server-Sent Events)", () => {
  it("replays only as fast as the reader reads: a reader that stops holds a bounded amount", async () => {
    const { hub, read } = await hubWithEvents(2000);
    const controller = new AbortController();
    const response = eventStream(hub, { after: 0 }, { signal: controller.signal });
    // The replay starts on its own; wait for it (the deadline only stops a stream that never starts). The store is in
    // memory, so the replay runs on promises alone: whenever this test runs again after a timer, it has read as far as
    // it is going to without a reader, and a stream that ignored its reader has read the whole log.
    await until("the replay to start reading the log", () => read.keys > 0);
    // 2,000 events of ~1 KB are ~2 MB; the stream stops reading the log a page past its 256 KiB queue.
    expect(read.keys).toBeLessThan(700);
    // Once the reader reads, everything comes, in order, each with its id.
    const text = await readAll(response, (t) => t.includes("id: 2000\n"));
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
    controller.abort();
  });

  it("cuts off a live reader that falls too far behind (it resumes from its Last-Event-ID)", async () => {
    const { hub, commitBatch } = await hubWithEvents(0);
    const response = eventStream(hub, {}, { maxQueuedBytes: 64 * 1024 });
    // Nobody reads; live events pile up past the limit.
    for (let i = 0; i < 5; i++) await commitBatch(`live${i}`);
    const text = await readAll(response, () => false);
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    // A gapless prefix, then the end of the stream.
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.length).toBeLessThan(500);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
  });
});
