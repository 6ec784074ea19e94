import type { DurableObjectStorage } from "@cloudflare/workers-types/index.ts";
import { defineDriver } from "unstorage";

/** The runtime's limit of keys per `get([...])`, `put({...})` and `delete([...])`. */
const BATCH = 128;
/** Keys per `list()` page in getKeys/clear: list returns values too, so bound the memory it takes. */
const PAGE = 1000;

/**
 * unstorage driver over a Durable Object's `state.storage`.
 *
 * Why a Durable Object: its storage is transactional and strongly consistent, and the object is single-threaded
 * with input/output gates around storage I/O, so one device = one object gives the core the single-writer store it
 * assumes (as the SQLite file does on the daemon). The core commits with `setItems`; every `put()` there is issued
 * without an intervening `await`, so the runtime coalesces them into one atomic write, and the output gate holds
 * the response until it is durable.
 *
 * Values are the JSON strings unstorage hands us; the runtime stores them as-is.
 *
 * @example
 * const storage = createStorage({ driver: durableObjectDriver(state.storage) });
 */
export const durableObjectDriver = defineDriver((storage: DurableObjectStorage) => {
  async function listKeys(base: string | undefined): Promise<string[]> {
    // unstorage passes "a:b:" (or nothing, for all keys); keys are "a:b:c", so list by the colon-terminated prefix.
    const prefix = base && !base.endsWith(":") ? `${base}:` : base;
    const out: string[] = [];
    let startAfter: string | undefined;
    for (;;) {
      const page = await storage.list({ prefix: prefix || undefined, startAfter, limit: PAGE });
      out.push(...page.keys());
      if (page.size < PAGE) return out;
      startAfter = out[out.length - 1];
    }
  }

  return {
    name: "durable-object",
    options: storage,
    getInstance: () => storage,
    async hasItem(key) {
      return (await storage.get(key)) !== undefined;
    },
    async getItem(key) {
      return (await storage.get<string>(key)) ?? null;
    },
    async getItems(items) {
      const keys = items.map((i) => i.key);
      const found = new Map<string, string>();
      const reads: Promise<Map<string, string>>[] = [];
      for (let i = 0; i < keys.length; i += BATCH) reads.push(storage.get<string>(keys.slice(i, i + BATCH)));
      for (const page of await Promise.all(reads)) for (const [k, v] of page) found.set(k, v);
      return keys.map((key) => ({ key, value: found.get(key) ?? null }));
    },
    async setItem(key, value) {
      await storage.put(key, value);
    },
    async setItems(items) {
      // No await between the puts: the runtime coalesces them into one atomic write (whole commit, not per batch).
      const writes: Promise<void>[] = [];
      for (let i = 0; i < items.length; i += BATCH) {
        const entries: Record<string, string> = {};
        for (const { key, value } of items.slice(i, i + BATCH)) entries[key] = value;
        writes.push(storage.put(entries));
      }
      await Promise.all(writes);
    },
    async removeItem(key) {
      await storage.delete(key);
    },
    getKeys(base) {
      return listKeys(base);
    },
    async clear(base) {
      if (!base) return storage.deleteAll();
      const keys = await listKeys(base);
      const deletes: Promise<number>[] = [];
      for (let i = 0; i < keys.length; i += BATCH) deletes.push(storage.delete(keys.slice(i, i + BATCH)));
      await Promise.all(deletes);
    },
  };
});
