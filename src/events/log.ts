import type { Storage } from "unstorage";
import { RawJson, type Kv } from "../store/kv.ts";
import type { DomainEvent } from "../schema/events.ts";

/** How long and how many events the log keeps by default (docs/events-and-webhooks.md). */
export const EVENT_LOG_MAX_AGE_MS = 7 * 24 * 3_600_000;
export const EVENT_LOG_MAX_EVENTS = 1_000_000;

export interface EventLogOptions {
  maxAgeMs?: number;
  maxEvents?: number;
  /** False keeps no log (events get no eventID, resume and replay find nothing): only for measuring what it costs. */
  enabled?: boolean;
  now?: () => number;
}

/** Reads the retention settings from the environment the daemon and the Worker share (docs/events-and-webhooks.md). */
export function eventLogSettings(
  env: Record<string, string | undefined>,
): Pick<EventLogOptions, "maxAgeMs" | "maxEvents" | "enabled"> {
  const number = (name: string, min: number) => {
    const text = env[name];
    if (text === undefined || text === "") return undefined;
    const value = Number(text);
    if (!Number.isInteger(value) || value < min)
      throw new Error(`${name} must be a whole number of at least ${min}, got ${text}`);
    return value;
  };
  const seconds = number("INBOXD_EVENT_LOG_MAX_AGE", 1);
  return {
    maxEvents: number("INBOXD_EVENT_LOG_MAX_EVENTS", 1),
    maxAgeMs: seconds === undefined ? undefined : seconds * 1000,
    enabled: env.INBOXD_EVENT_LOG === "off" ? false : undefined,
  };
}

/**
 * One stored event: its chat (for filters), when it was logged (for retention), and the event itself with its
 * `eventID`, stored as JSON inside the record (not as an escaped string: that costs a second pass over every body).
 */
interface StoredEvent {
  c: string;
  t: number;
  b: Record<string, unknown>;
}

/** Where the log stands: the oldest event kept and the next ID to give. */
interface LogMeta {
  first: number;
  next: number;
}

const META_KEY = "evlog";
/** Zero-padded, so that keys sort in ID order and each new record is an append at the end of SQLite's key index. */
const eventKey = (id: number) => `ev:${String(id).padStart(12, "0")}`;

/** A page read from the log: events after the cursor, or `gone` when the cursor is older than what is kept (or ahead of the log). */
export type LogPage = { events: DomainEvent[] } | { gone: true; oldest: number };

/**
 * The durable event log: every committed change gets a global, monotonically increasing `eventID`, written in the
 * same commit as the change (`append` runs while the commit takes its batch), so a reader resuming from any ID it
 * has seen misses nothing and gets nothing twice. Readers see only events whose commit is durable (`durable`).
 *
 * One record per event (`ev:<id>`, the ID zero-padded to 12 digits) plus a small cursor record (`evlog`): a page after any ID is a direct read of
 * known keys, and retention deletes the oldest keys without listing any. Retention is by age and by count; a
 * cursor older than the oldest kept event gets `gone` (the client must re-read and start over), never a silent gap.
 */
export class EventLog {
  private meta: LogMeta = { first: 1, next: 1 };
  /** The newest event whose commit is durable (0: none yet). */
  private durableID = 0;
  private compacting = false;
  private readonly maxAgeMs: number;
  private readonly maxEvents: number;
  private readonly enabled: boolean;
  private readonly now: () => number;
  private compactedAt: number;

  constructor(
    private readonly kv: Kv,
    options: EventLogOptions = {},
  ) {
    this.maxAgeMs = options.maxAgeMs ?? EVENT_LOG_MAX_AGE_MS;
    this.maxEvents = options.maxEvents ?? EVENT_LOG_MAX_EVENTS;
    this.enabled = options.enabled ?? true;
    this.now = options.now ?? Date.now;
    this.compactedAt = this.now();
  }

  /**
   * Retention as the app runs it, beside the commits and wake-ups: once the log is 1 % (at most 1,000 events) over
   * its count, and hourly for age; not on every wake-up (webhook retries and reminders wake the app often).
   */
  async compactWhenDue(): Promise<void> {
    if (!this.compactionDue && this.now() - this.compactedAt < 3_600_000) return;
    this.compactedAt = this.now();
    await this.compact();
  }

  private get storage(): Storage {
    return this.kv.storage;
  }

  async load(): Promise<void> {
    this.meta = (await this.storage.getItem<LogMeta>(META_KEY)) ?? { first: 1, next: 1 };
    this.durableID = this.meta.next - 1;
  }

  /** The newest eventID a store holds, read without loading a log (a process beside the daemon: the CLI). */
  static async head(storage: Storage): Promise<number> {
    return ((await storage.getItem<LogMeta>(META_KEY))?.next ?? 1) - 1;
  }

  /** The oldest event ID kept. */
  get oldest(): number {
    return this.meta.first;
  }

  /** How many events more than `maxEvents` the log holds. */
  get overflow(): number {
    return this.meta.next - this.meta.first - this.maxEvents;
  }

  /** Whether the log is far enough over its count to compact now: 1 % of it, at most 1,000 events. */
  get compactionDue(): boolean {
    return this.overflow >= Math.min(1000, Math.max(1, Math.ceil(this.maxEvents / 100)));
  }

  /** The newest durable event ID (0 before the first event). */
  get durable(): number {
    return this.durableID;
  }

  /**
   * Gives each event its ID and writes it into the commit that is taking its batch. Returns the events as they are
   * delivered: their bodies carry `eventID` right after `type`.
   */
  append(events: DomainEvent[]): DomainEvent[] {
    if (!events.length || !this.enabled) return events;
    const t = this.now();
    const logged = events.map((event) => {
      const id = this.meta.next++;
      // `type` stays first (readers match on the body's start); its value holds no comma.
      const comma = event.body.indexOf(",");
      const body = `${event.body.slice(0, comma)},"eventID":${id}${event.body.slice(comma)}`;
      this.kv.putUncached(eventKey(id), new RawJson(`{"c":${JSON.stringify(event.chatID)},"t":${t},"b":{${body}}`));
      return { chatID: event.chatID, body, id };
    });
    this.kv.put(META_KEY, { ...this.meta });
    return logged;
  }

  /** The commit that wrote these events is durable: readers may now see them. */
  markDurable(events: DomainEvent[]): void {
    for (const e of events) if (e.id !== undefined && e.id > this.durableID) this.durableID = e.id;
  }

  /** Up to `limit` durable events after `after`, oldest first. */
  async read(after: number, limit = 500): Promise<LogPage> {
    if (after + 1 < this.meta.first) return { gone: true, oldest: this.meta.first };
    // A cursor ahead of the log: the data was restored from an older copy or lost its tail (a power loss without
    // synchronous commits). Its IDs will be given again to other events, so the reader must start over.
    if (after > this.durableID) return { gone: true, oldest: this.meta.first };
    const from = Math.max(after + 1, this.meta.first);
    const to = Math.min(this.durableID, from + limit - 1);
    if (to < from) return { events: [] };
    const keys = Array.from({ length: to - from + 1 }, (_, i) => eventKey(from + i));
    const rows = await this.storage.getItems<StoredEvent>(keys);
    const byKey = new Map(rows.map((r) => [r.key, r.value as StoredEvent | null]));
    const events: DomainEvent[] = [];
    for (let id = from; id <= to; id++) {
      const stored = byKey.get(eventKey(id));
      // Compacted while this page was read: the reader is now behind the log.
      if (!stored) return { gone: true, oldest: this.meta.first };
      // Serialised again exactly as it was first sent (the same fields in the same order).
      events.push({ chatID: stored.c, body: JSON.stringify(stored.b).slice(1), id });
    }
    return { events };
  }

  /**
   * Drops what retention no longer keeps: beyond `maxEvents`, and older than `maxAgeMs`. The new start is committed
   * first (so no reader is ever handed a half-deleted range), then the records are deleted, a batch at a time.
   */
  async compact(): Promise<number> {
    if (this.compacting) return 0;
    this.compacting = true;
    try {
      const before = this.meta.first;
      let first = Math.max(before, this.meta.next - this.maxEvents);
      const cutoff = this.now() - this.maxAgeMs;
      for (;;) {
        const ids = Array.from({ length: Math.min(500, this.durableID - first + 1) }, (_, i) => first + i);
        if (!ids.length) break;
        const rows = await this.storage.getItems<StoredEvent>(ids.map(eventKey));
        const old = rows.findIndex((r) => !r.value || (r.value as StoredEvent).t >= cutoff);
        if (old === -1) {
          first += ids.length;
          continue;
        }
        first += old;
        break;
      }
      if (first === before) return 0;
      this.meta.first = first;
      this.kv.put(META_KEY, { ...this.meta });
      await this.kv.commit();
      for (let id = before; id < first; id++) await this.storage.removeItem(eventKey(id));
      return first - before;
    } finally {
      this.compacting = false;
    }
  }
}
