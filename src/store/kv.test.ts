import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createStorage, type Storage } from "unstorage";
import { afterAll, describe, expect, it, vi } from "vitest";
import { defaultBinding } from "../../adapters/node/sqlite-binding.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { Kv } from "./kv.ts";

/** The memory driver's own Map: what is in it has reached storage. */
const driverData = (storage: Storage) => storage.getMount("").driver.getInstance!() as Map<string, unknown>;

/** Counts storage.setItems calls (one per commit) while delegating to the real storage. */
function countBatches(storage: Storage): number[] {
  const sizes: number[] = [];
  const setItems = storage.setItems.bind(storage);
  storage.setItems = (items, options) => {
    sizes.push(items.length);
    return setItems(items, options);
  };
  return sizes;
}

describe("Kv", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("writes a removal in the same batch as the commit's other writes, then deletes the row", async () => {
    const storage = createStorage();
    await storage.setItem("gone", { old: true });
    const batches = countBatches(storage);
    const kv = new Kv(storage);
    kv.put("kept", { v: 1 });
    kv.remove("gone");
    await kv.commit();
    // One atomic batch carries both: a crash cannot keep the new record while the removed one survives.
    expect(batches).toEqual([2]);
    expect(await kv.get("gone")).toBeUndefined();
    expect(await new Kv(storage).get("gone")).toBeUndefined();
    expect(await storage.hasItem("gone")).toBe(false);
    expect(await new Kv(storage).get("kept")).toEqual({ v: 1 });
  });

  it("group-commits concurrent writers, and each acknowledgment means the write reached storage", async () => {
    const storage = createStorage();
    const batches = countBatches(storage);
    const kv = new Kv(storage);
    const data = driverData(storage);
    const writers = Array.from({ length: 1000 }, async (_, i) => {
      for (let y = 0; y < i % 13; y++) await Promise.resolve(); // writers arrive while commits are in flight
      kv.put(`k:${i}`, { i });
      await kv.commit();
      return data.has(`k:${i}`);
    });
    expect(await Promise.all(writers)).toEqual(Array(1000).fill(true));
    expect(batches.reduce((s, n) => s + n, 0)).toBe(1000);
    expect(batches.length, "commits are shared").toBeLessThan(100);
    for (let i = 0; i < 1000; i++) expect(await storage.getItem(`k:${i}`)).toEqual({ i });
  });

  it("waits further turns while each brings another writer, up to eight, and a lone writer waits one", async () => {
    const storage = createStorage();
    const batches = countBatches(storage);
    let turns = 0;
    const turn = () => new Promise<void>((resolve) => setImmediate(() => (turns++, resolve())));
    const kv = new Kv(storage, { gatherWrites: turn });
    const write = (key: string) => {
      kv.put(key, 1);
      return kv.commit();
    };
    // Alone: one turn, one batch.
    await write("alone");
    expect({ turns, batches }).toEqual({ turns: 1, batches: [1] });
    // A writer in each of the next three turns: all four in one batch, after the turn that brought nobody.
    turns = 0;
    const first = write("w0");
    const chain = (i: number) =>
      setImmediate(() => {
        void write(`w${i}`);
        if (i < 3) chain(i + 1);
      });
    chain(1);
    await first;
    expect(batches).toEqual([1, 4]);
    expect(turns).toBe(4);
    // A writer every turn, without end: the commit goes after eight turns all the same.
    turns = 0;
    let more = true;
    const keepWriting = (i: number) =>
      setImmediate(() => {
        if (!more) return;
        void write(`x${i}`);
        keepWriting(i + 1);
      });
    const flood = write("x");
    keepWriting(0);
    await flood;
    more = false;
    expect(batches[2]).toBe(9);
    expect(turns).toBe(8);
    await kv.commit();
  });

  it("acknowledges back-to-back commits of the same writers only once they are durable", async () => {
    const storage = createStorage();
    const kv = new Kv(storage);
    const data = driverData(storage);
    const notYetDurable: string[] = [];
    const writer = async (w: number) => {
      for (let round = 0; round < 20; round++) {
        for (let y = 0; y < (w * 7 + round) % 5; y++) await Promise.resolve();
        kv.put(`${w}:${round}`, round);
        await kv.commit();
        if (!data.has(`${w}:${round}`)) notYetDurable.push(`${w}:${round}`);
      }
    };
    await Promise.all(Array.from({ length: 50 }, (_, w) => writer(w)));
    expect(notYetDurable).toEqual([]);
  });

  it("sees a put before and after it is committed", async () => {
    const kv = new Kv(createStorage());
    kv.put("a", { v: 1 });
    expect(await kv.get("a")).toEqual({ v: 1 });
    await kv.commit();
    expect(await kv.get("a")).toEqual({ v: 1 });
    kv.put("a", { v: 2 });
    expect(await kv.get("a")).toEqual({ v: 2 });
    expect(await kv.get("missing")).toBeUndefined();
  });

  it("reads from storage after dropCache, but keeps uncommitted puts", async () => {
    const storage = createStorage();
    const kv = new Kv(storage);
    kv.put("clean", "cached");
    await kv.commit();
    await storage.setItem("clean", JSON.stringify("from storage"));
    expect(await kv.get("clean")).toBe("cached");
    kv.put("dirty", "pending");
    kv.dropCache();
    expect(await kv.get("clean")).toBe("from storage");
    expect(await kv.get("dirty")).toBe("pending");
    await kv.commit();
    expect(await storage.getItem("dirty")).toBe("pending");
  });

  it("serialises a value when its commit starts: a later change lands in the next commit", async () => {
    const storage = createStorage();
    const kv = new Kv(storage);
    const record = { n: 1 };
    kv.put("r", record);
    const first = kv.commit();
    record.n = 2;
    kv.put("r", record);
    await first;
    await kv.commit();
    expect(await storage.getItem("r")).toEqual({ n: 2 });
  });

  it("removes keys", async () => {
    const storage = createStorage();
    const kv = new Kv(storage);
    kv.put("gone", 1);
    await kv.commit();
    kv.remove("gone");
    expect(await kv.get("gone")).toBeFalsy();
    await kv.commit();
    expect(await storage.hasItem("gone")).toBe(false);
    kv.dropCache();
    expect(await kv.get("gone")).toBeUndefined();
  });

  it("never evicts uncommitted values, even with a tiny cache", async () => {
    const storage = createStorage();
    const kv = new Kv(storage, { cacheBytes: 64 });
    for (let i = 0; i < 200; i++) kv.put(`e:${i}`, { text: "x".repeat(100), i });
    for (let i = 0; i < 200; i++) expect(await kv.get(`e:${i}`)).toEqual({ text: "x".repeat(100), i });
    await kv.commit();
    for (let i = 0; i < 200; i++) expect(await kv.get(`e:${i}`)).toEqual({ text: "x".repeat(100), i });
  });

  it("keeps what it caches however many keys were removed before (a removal's size leaves the budget with it)", async () => {
    const storage = createStorage();
    const kv = new Kv(storage, { cacheBytes: 16 * 2048 });
    for (let i = 0; i < 4; i++) kv.put(`keep:${i}`, { i });
    await kv.commit();
    for (let round = 0; round < 50; round++) {
      kv.put(`gone:${round}`, { round });
      await kv.commit();
      kv.remove(`gone:${round}`);
      await kv.commit();
    }
    const reads = vi.spyOn(storage, "getItem");
    for (let i = 0; i < 4; i++) expect(await kv.get(`keep:${i}`)).toEqual({ i });
    expect(reads, "the kept records still come from the cache").not.toHaveBeenCalled();
  });

  it("retries a failed storage write in the next commit (SQLite locked by another connection)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "inboxd-kv-"));
    dirs.push(dir);
    const path = join(dir, "kv.sqlite3");
    const { storage, close } = await openSqliteStorage(path);
    await storage.setItem("init", 1);
    const other = defaultBinding().open(path);
    try {
      const kv = new Kv(storage);
      kv.put("first", { attempt: 1 });
      other.exec("BEGIN IMMEDIATE"); // holds the write lock: the commit fails after busy_timeout (5 s)
      await expect(kv.commit()).rejects.toThrow(/locked|busy/i);
      other.exec("COMMIT");
      kv.put("second", { attempt: 2 });
      await kv.commit();
      const committed = (key: string) =>
        other.prepare("SELECT value FROM inboxd WHERE key = ?").get(key) as { value: string } | undefined;
      expect(JSON.parse(committed("first")!.value)).toEqual({ attempt: 1 });
      expect(JSON.parse(committed("second")!.value)).toEqual({ attempt: 2 });
    } finally {
      other.close();
      await close();
    }
  }, 30_000);

  it("confirms the notes of a failed commit with the next one that succeeds, in order", async () => {
    const storage = createStorage();
    const confirmed: unknown[] = [];
    let note = 0;
    const kv = new Kv(storage, { takeBatchNotes: () => ++note, afterCommit: (n) => confirmed.push(n) });
    const setItems = storage.setItems.bind(storage);
    let fail = true;
    storage.setItems = (items, options) => {
      if (fail) return Promise.reject(new Error("disk full"));
      return setItems(items, options);
    };
    kv.put("a", 1);
    await expect(kv.commit()).rejects.toThrow("disk full");
    expect(confirmed).toEqual([]);
    fail = false;
    kv.put("b", 2);
    await kv.commit();
    // The first batch was written with the second: both notes are confirmed now, the failed one first.
    expect(confirmed).toEqual([1, 2]);
    expect(await storage.getItem("a")).toBe(1);
  });

  it("commits a failed batch again on its own: what it holds does not wait for another write", async () => {
    const storage = createStorage();
    const confirmed: unknown[] = [];
    const notes = ["an inbound message's event"];
    const kv = new Kv(storage, { takeBatchNotes: () => notes.shift(), afterCommit: (n) => confirmed.push(n) });
    const setItems = storage.setItems.bind(storage);
    let failures = 3;
    storage.setItems = (items, options) =>
      failures-- > 0 ? Promise.reject(new Error("storage unavailable")) : setItems(items, options);
    kv.put("inbound", { text: "nobody writes after me" });
    await expect(kv.commit()).rejects.toThrow("storage unavailable");
    // No put and no commit from here on: the retries (sooner, then later) write the batch and confirm its notes.
    await vi.waitFor(() => expect(confirmed).toEqual(["an inbound message's event"]), { timeout: 10_000 });
    expect(failures).toBe(-1);
    expect(await storage.getItem("inbound")).toEqual({ text: "nobody writes after me" });
  });
});
