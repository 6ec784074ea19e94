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
 * - `commit()` resolves only after the storage call for a batch containing every earlier put has resolved;
 * - a batch whose commit failed is committed again, on its own if no other commit comes (see retrySoon).
 */
export interface KvOptions {
  /** Approximate bytes of clean values kept in memory. */
  cacheBytes?: number;
  /** Runs just before each commit writes; the search index uses it to fold queued postings into segments. */
  beforeCommit?: () => Promise<void>;
  /** Taken at the instant a commit takes its batch (puts made here join it); handed to `afterCommit` once durable. */
  takeBatchNotes?: () => unknown;
  afterCommit?: (notes: unknown) => void;
  /**
   * Resolves when a commit that was asked for may take its batch; without it, at once (the next microtask). The
   * daemon passes one turn of Node's event loop (setImmediate). Why: its SQLite writes synchronously, so a commit
   * that started at once would always carry one request's puts — with 16 concurrent sends, 16 transactions, each
   * rewriting the same index segments. Requests whose bytes arrived in the same turn (Node's poll phase hands them
   * over together) reach commit() first and share the commit; while a turn brings more of them, the commit waits
   * another (Kv.gather). A Durable Object's storage is asynchronous, so there commits queue behind the one in flight
   * and share anyway.
   */
  gatherWrites?: () => Promise<void>;
}

interface Entry {
  value: unknown;
  size: number;
  /** The cache's clock when the entry last moved to the recent end (see touch). */
  moved: number;
}

/** The first retry of a failed commit comes this soon; the wait doubles while storage keeps failing, up to the max. */
const RETRY_FIRST_MS = 10;
/** The most turns a commit waits for more writers (see Kv.gather). */
const GATHER_TURNS = 8;
const RETRY_MAX_MS = 5_000;

export class Kv {
  private readonly cache = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<unknown>>();
  private dirty = new Map<string, unknown>();
  private cachedBytes = 0;
  /** Writers that joined a queued commit (see gather). */
  private joined = 0;
  /** Counts the cache's uses (see touch). */
  private clock = 0;
  private readonly cacheBytes: number;
  /** The batch being written right now: like dirty entries, never evicted. */
  private writing?: Map<string, unknown>;
  private tail: Promise<unknown> = Promise.resolve();
  private queued: Promise<void> | null = null;
  private readonly beforeCommit?: () => Promise<void>;
  private readonly takeBatchNotes?: () => unknown;
  private readonly afterCommit?: (notes: unknown) => void;
  private readonly gatherWrites?: () => Promise<void>;
  /** Notes of commits that failed: their batches were put back, so they are confirmed by the next commit that succeeds. */
  private readonly unconfirmed: unknown[] = [];
  /** The retry of a failed commit (see retrySoon), and the wait before the next one. */
  private retryTimer?: ReturnType<typeof setTimeout>;
  private retryMs = 0;
  private closed = false;

  constructor(
    readonly storage: Storage,
    options: KvOptions = {},
  ) {
    this.cacheBytes = options.cacheBytes ?? 32 * 1024 * 1024;
    this.beforeCommit = options.beforeCommit;
    this.takeBatchNotes = options.takeBatchNotes;
    this.afterCommit = options.afterCommit;
    this.gatherWrites = options.gatherWrites;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const hit = this.cache.get(key);
    if (hit) {
      this.touch(key, hit);
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

  put(key: string, value: unknown): void {
    this.dirty.set(key, value);
    const old = this.cache.get(key);
    if (old) {
      this.cachedBytes -= old.size;
      old.value = value;
      old.size = 0;
      this.touch(key, old);
    } else this.cache.set(key, { value, size: 0, moved: this.clock++ });
  }

  /**
   * Marks an entry as recently used. Map order is insertion order, so that means deleting and re-inserting it; but
   * only once a quarter of the cache's size in uses has passed since it last moved: the hot entries (a common
   * word's segment, a busy chat's chunk) are used many times per commit, and moving each every time was most of
   * the cache's cost. Eviction drops entries from the old end until the cache is down to 80 % of its bytes, so an
   * entry in use, never more than a quarter of the entries from the recent end, is not what it drops, unless one
   * commit overfills the cache by most of its budget at once.
   */
  private touch(key: string, entry: Entry): void {
    if (this.clock++ - entry.moved <= this.cache.size >> 2) return;
    this.cache.delete(key);
    this.cache.set(key, entry);
    entry.moved = this.clock;
  }

  remove(key: string): void {
    this.put(key, null);
  }

  /**
   * Writes a record that is never read back through this cache (the event log: readers go to storage, and only
   * after the commit): it joins the next commit but takes no cache space, so it cannot push out what is read.
   */
  putUncached(key: string, value: unknown): void {
    this.dirty.set(key, value);
  }

  /**
   * Resolves once every put made before this call is durable. Commits run strictly one after another; a caller
   * joins the commit that has not started yet (it will snapshot after the caller's puts) or queues a new one.
   */
  commit(): Promise<void> {
    if (this.closed) return Promise.reject(new Error("the store is closed: nothing more is written"));
    if (this.queued) {
      this.joined++;
      return this.queued;
    }
    let started = 0;
    const run = (this.gatherWrites ? this.tail.then(() => this.gather()) : this.tail).then(() => {
      this.queued = null;
      started = Date.now();
      return this.runCommit();
    });
    this.queued = run;
    this.tail = run.then(
      () => void (this.retryMs = 0),
      () => this.retrySoon(Date.now() - started),
    );
    return run;
  }

  /**
   * Waits turns of the event loop (gatherWrites) while each brings another writer into the commit, up to
   * GATHER_TURNS. A lone write waits one turn, as before; under load, requests handled while the previous commit
   * was written arrive over several turns, and a commit that took only the first turn's left the rest to a commit of
   * their own, which rewrote the same index segments and chunks again. 16 clients sending over 16 chats at 10M
   * messages: 1,236-1,378 sends/s with one turn, 1,887-2,267 with two, 2,285-2,462 with four (alternating rounds).
   * Eight is a cap, not a measured best.
   */
  private async gather(): Promise<void> {
    let seen = -1;
    for (let turn = 0; turn < GATHER_TURNS && this.joined !== seen; turn++) {
      seen = this.joined;
      await this.gatherWrites!();
    }
  }

  /**
   * After a failed commit, commits again on its own while anything is unwritten. Its batch went back into the next
   * one, but a next one may never come: what a network delivered (an inbound message, and its event in the notes)
   * would stay unwritten and unannounced until some other write. The first retry comes at once, then less often while
   * storage keeps failing, and never sooner than the failed attempt took (SQLite waits out another process's lock
   * for seconds, holding the daemon meanwhile: retries must leave it time to answer in between).
   */
  private retrySoon(failedAfterMs: number): void {
    if (this.closed) return;
    if (this.retryTimer !== undefined || (this.dirty.size === 0 && this.unconfirmed.length === 0)) return;
    this.retryMs = Math.min(Math.max(this.retryMs ? this.retryMs * 2 : RETRY_FIRST_MS, failedAfterMs), RETRY_MAX_MS);
    const timer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.commit().catch(() => undefined); // a failure schedules the next retry
    }, this.retryMs);
    // A process that is done (a CLI command whose commit failed) does not wait for the retries.
    (timer as { unref?: () => void }).unref?.();
    this.retryTimer = timer;
  }

  private async runCommit(): Promise<void> {
    if (this.beforeCommit) await this.beforeCommit();
    // Notes are taken right before the batch, synchronously: what they derive matches the batch exactly, and
    // puts they make (the event log's records) are part of it.
    const notes = this.takeBatchNotes?.();
    if (this.dirty.size === 0) return;
    const batch = this.dirty;
    this.dirty = new Map();
    this.writing = batch;
    const sets: { key: string; value: string }[] = [];
    const removals: string[] = [];
    for (const [key, value] of batch) {
      // A removal is written as a JSON null in the same atomic batch (reads treat null as absent); the row itself
      // is deleted afterwards, best effort, so a crash in between leaves only a harmless null.
      if (value === null) removals.push(key);
      sets.push({ key, value: value instanceof RawJson ? value.text : JSON.stringify(value) });
      const entry = this.cache.get(key);
      if (entry && entry.value === value && entry.size === 0) {
        entry.size = estimateSize(value);
        this.cachedBytes += entry.size;
      }
    }
    try {
      if (sets.length) await this.storage.setItems(sets);
    } catch (error) {
      // Put the batch back so the next commit retries it; newer puts win. Its notes wait for that commit too.
      for (const [key, value] of batch) if (!this.dirty.has(key)) this.dirty.set(key, value);
      if (notes !== undefined) this.unconfirmed.push(notes);
      throw error;
    } finally {
      this.writing = undefined;
    }
    for (const key of removals) {
      const entry = this.cache.get(key);
      if (!entry || this.dirty.has(key)) continue;
      this.cachedBytes -= entry.size;
      this.cache.delete(key);
    }
    this.evict();
    for (const earlier of this.unconfirmed.splice(0)) this.afterCommit?.(earlier);
    if (notes !== undefined) this.afterCommit?.(notes);
    for (const key of removals) if (!this.dirty.has(key)) await this.storage.removeItem(key).catch(() => undefined);
  }

  /**
   * Called after the last commit, before the storage is closed: a commit asked for later (a network's sync still
   * finishing as the daemon stops) fails with an error that says so instead of reaching a closed database, and a
   * pending retry is dropped.
   */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private remember(key: string, value: unknown, size: number) {
    this.cache.set(key, { value, size, moved: this.clock++ });
    this.cachedBytes += size;
    this.evict();
  }

  private evict() {
    if (this.cachedBytes <= this.cacheBytes) return;
    for (const [key, entry] of this.cache) {
      if (this.cachedBytes <= this.cacheBytes * 0.8) break;
      if (entry.size === 0 || this.dirty.has(key) || this.writing?.has(key)) continue;
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

/**
 * Rough heap bytes of a decoded value, for the cache budget. Measured on the daemon's records: a message object
 * with its strings costs about 250 bytes of heap, a posting number 8 bytes; anything else is counted as a small record.
 */
function estimateSize(value: unknown): number {
  if (typeof value === "string") return 2 * value.length;
  if (Array.isArray(value)) return 64 + value.length * (typeof value[0] === "number" ? 8 : 300);
  return 2048;
}

/** A value already serialised as JSON: written as it is, so a JSON text inside it is not escaped a second time. */
export class RawJson {
  constructor(readonly text: string) {}
}
