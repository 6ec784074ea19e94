import type { Storage } from "unstorage";

/**
 * A write-back cache with group commit over an unstorage `Storage`.
 *
 * Why: an acknowledged write must be durable, yet one send touches several records (message chunk, chat, index
 * segments). Writers `put()` into the cache and then `await commit()`; every put made before a commit starts is
 * written in that commit, in one `setItems` call (one SQLite transaction on the daemon, one atomic `put()` batch
 * in a Durable Object). Concurrent requests share commits, which is what makes ≥1,000 durable sends/s possible.
 *
 * Invariants:
 * - a dirty entry is never evicted, so a `get()` always sees the newest `put()`;
 * - values are serialised when their commit starts, so a later mutation of the same object lands in the next one;
 * - `commit()` resolves only after the storage call for a batch containing every earlier put has resolved.
 */
export interface KvOptions {
  /** Approximate bytes of clean values kept in memory. */
  cacheBytes?: number;
  /** Runs just before each commit writes; the search index uses it to fold queued postings into segments. */
  beforeCommit?: () => Promise<void>;
}

interface Entry {
  value: unknown;
  size: number;
}

export class Kv {
  private readonly cache = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<unknown>>();
  private dirty = new Map<string, unknown>();
  private cachedBytes = 0;
  private readonly cacheBytes: number;
  private running: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  beforeCommit?: () => Promise<void>;

  constructor(readonly storage: Storage, options: KvOptions = {}) {
    this.cacheBytes = options.cacheBytes ?? 64 * 1024 * 1024;
    this.beforeCommit = options.beforeCommit;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const hit = this.cache.get(key);
    if (hit) {
      // Map order is insertion order: re-insert to mark as recently used.
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit.value as T;
    }
    const inflight = this.loading.get(key);
    if (inflight) return (await inflight) as T;
    const load = this.load(key);
    this.loading.set(key, load);
    try {
      return (await load) as T;
    } finally {
      this.loading.delete(key);
    }
  }

  private async load(key: string): Promise<unknown> {
    const raw = await this.storage.getItem<unknown>(key);
    // A put may have raced with the load; the cache then already holds the newer value.
    const raced = this.cache.get(key);
    if (raced) return raced.value;
    if (raw === null || raw === undefined) return undefined;
    this.remember(key, raw, estimateSize(raw));
    return raw;
  }

  /** Reads several keys; missing ones are undefined. */
  getMany<T>(keys: string[]): Promise<(T | undefined)[]> {
    return Promise.all(keys.map((k) => this.get<T>(k)));
  }

  put(key: string, value: unknown): void {
    this.dirty.set(key, value);
    const old = this.cache.get(key);
    if (old) this.cachedBytes -= old.size;
    this.cache.delete(key);
    this.cache.set(key, { value, size: 0 });
  }

  remove(key: string): void {
    this.put(key, null);
  }

  /** Resolves once every put made before this call is durable. */
  commit(): Promise<void> {
    if (!this.running) {
      this.running = this.runCommit();
      return this.running;
    }
    // A commit is in flight and may have snapshotted before our put: wait for the one after it.
    if (!this.next) {
      this.next = this.running.then(
        () => undefined,
        () => undefined,
      ).then(() => {
        this.next = null;
        this.running = this.runCommit();
        return this.running;
      });
    }
    return this.next;
  }

  private async runCommit(): Promise<void> {
    try {
      if (this.beforeCommit) await this.beforeCommit();
      if (this.dirty.size === 0) return;
      const batch = this.dirty;
      this.dirty = new Map();
      const items: { key: string; value: string | null }[] = [];
      for (const [key, value] of batch) {
        const text = value === null ? null : JSON.stringify(value);
        items.push({ key, value: text });
        const entry = this.cache.get(key);
        if (entry && entry.value === value && !this.dirty.has(key)) {
          entry.size = text?.length ?? 0;
          this.cachedBytes += entry.size;
        }
      }
      const sets = items.filter((i) => i.value !== null) as { key: string; value: string }[];
      const removals = items.filter((i) => i.value === null);
      try {
        if (sets.length) await this.storage.setItems(sets);
        for (const r of removals) await this.storage.removeItem(r.key);
      } catch (error) {
        // Put the batch back so nothing acknowledged later is lost; newer puts win.
        for (const [key, value] of batch) if (!this.dirty.has(key)) this.dirty.set(key, value);
        throw error;
      }
      for (const r of removals) this.cache.delete(r.key);
      this.evict();
    } finally {
      this.running = null;
    }
  }

  private remember(key: string, value: unknown, size: number) {
    this.cache.set(key, { value, size });
    this.cachedBytes += size;
    this.evict();
  }

  private evict() {
    if (this.cachedBytes <= this.cacheBytes) return;
    for (const [key, entry] of this.cache) {
      if (this.cachedBytes <= this.cacheBytes * 0.8) break;
      if (this.dirty.has(key) || entry.size === 0) continue;
      this.cache.delete(key);
      this.cachedBytes -= entry.size;
    }
  }

  /** Drops every clean cached value (tests use it to prove reads come from storage). */
  dropCache() {
    for (const key of [...this.cache.keys()]) if (!this.dirty.has(key)) this.cache.delete(key);
    this.cachedBytes = 0;
  }
}

function estimateSize(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value)) return 64 + value.length * (typeof value[0] === "number" ? 9 : 400);
  return 512;
}
