import { hmacHex, randomHex } from "./encoding.ts";
import { badRequest, conflict, notFound } from "../http/errors.ts";
import { LIMITS } from "../http/limits.ts";
import type { DomainEvent } from "../events/protocol.ts";
import type { Storage } from "unstorage";
import type { Kv } from "../store/kv.ts";

/**
 * Webhooks: every domain event (the same payloads as /v1/ws) POSTed to registered URLs, signed with HMAC-SHA256,
 * at least once. Deliveries are written to a durable outbox in the same commit as the change that caused them, so
 * none is lost to a crash; a failed delivery is retried with exponential backoff and, after MAX_ATTEMPTS, recorded
 * as failed on its webhook.
 *
 * Config (`webhook:<id>`) is written by the API or the CLI; delivery stats (`whstats:<id>`) only by the running
 * app; the outbox is `whq:<id>`.
 */
export interface WebhookRecord {
  id: string;
  url: string;
  /** Chat IDs to deliver for; ["*"] is every chat. */
  chatIDs: string[];
  /** The HMAC key. A signing key has to be readable to sign with, so it is kept (in the data store only). */
  secret: string;
  createdAt: string;
}

export interface WebhookStats {
  delivered: number;
  failed: number;
  lastSuccessAt?: string;
  lastError?: { at: string; deliveryID: string; message: string; attempts: number };
  /** The latest deliveries given up on (at most 20). */
  failures: { deliveryID: string; at: string; message: string; type: string }[];
}

interface OutboxEntry {
  deliveryID: string;
  webhookID: string;
  type: string;
  body: string;
  attempts: number;
  nextAt: number;
}
/** What the dispatcher keeps in memory of a pending delivery: all but the body, which stays in the store. */
type Pending = Omit<OutboxEntry, "body">;

export const MAX_ATTEMPTS = 10;
const PREFIX = { config: "webhook:", stats: "whstats:", outbox: "whq:" };
const WEBHOOK_ID = /^wh_[0-9a-f]{1,64}$/;

export async function createWebhook(storage: Storage, input: { url: string; chatIDs?: string[] }): Promise<WebhookRecord> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw badRequest("url is not a valid URL", [{ code: "invalid_url", message: "expected an http(s) URL", path: ["body", "url"] }]);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw badRequest("url must be http or https", [{ code: "invalid_url", message: "expected an http(s) URL", path: ["body", "url"] }]);
  const chatIDs = input.chatIDs?.length ? [...new Set(input.chatIDs)] : ["*"];
  if (chatIDs.includes("*") && chatIDs.length > 1)
    throw badRequest('"*" cannot be combined with chat IDs', [{ code: "invalid_value", message: '"*" alone', path: ["body", "chatIDs"] }]);
  if ((await storage.getKeys(PREFIX.config)).length >= LIMITS.webhooks)
    throw conflict(`a device takes at most ${LIMITS.webhooks} webhooks; remove one first`);
  const record: WebhookRecord = { id: `wh_${randomHex(8)}`, url: url.toString(), chatIDs, secret: `whsec_${randomHex(24)}`, createdAt: new Date().toISOString() };
  await storage.setItem(PREFIX.config + record.id, record);
  return record;
}

export async function listWebhookRecords(storage: Storage): Promise<WebhookRecord[]> {
  const keys = await storage.getKeys(PREFIX.config);
  const records = (await Promise.all(keys.map((k) => storage.getItem<WebhookRecord>(k)))).filter((r): r is WebhookRecord => !!r);
  return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

export async function removeWebhook(storage: Storage, id: string): Promise<void> {
  // The running app drops its cached stats on its next refresh (the webhook is then gone from its list).
  // IDs are ours (wh_ and hex); anything else names no webhook, and must not reach the store as a key.
  if (!WEBHOOK_ID.test(id) || !(await storage.hasItem(PREFIX.config + id))) throw notFound(`webhook ${id}`);
  await storage.removeItem(PREFIX.config + id);
  await storage.removeItem(PREFIX.stats + id);
}

/** The webhook as the API shows it: config without the secret, plus delivery stats and pending count. */
export function presentWebhook(record: WebhookRecord, stats: WebhookStats | undefined, pending: number) {
  const { secret: _secret, ...config } = record;
  return { ...config, pending, delivered: stats?.delivered ?? 0, failed: stats?.failed ?? 0, lastSuccessAt: stats?.lastSuccessAt, lastError: stats?.lastError, failures: stats?.failures ?? [] };
}

export class WebhookDispatcher {
  private hooks: WebhookRecord[] = [];
  private readonly outbox = new Map<string, Pending>();
  /** Outbox keys per webhook, oldest first: a webhook keeps at most LIMITS.webhookPending deliveries pending. */
  private readonly pendingKeys = new Map<string, Set<string>>();
  /** Deliveries dropped for that bound since the last run, per webhook (counted as failed by the next run). */
  private readonly dropped = new Map<string, number>();
  private running = false;
  private counter = 0;
  private lastRefresh = 0;
  private readonly statsCache = new Map<string, WebhookStats>();

  constructor(
    private readonly kv: Kv,
    private readonly options: { fetch?: typeof fetch; now?: () => number; onIdleUntil?: (at: number | undefined) => void } = {},
  ) {}

  private get now() {
    return this.options.now ?? Date.now;
  }

  /** Loads config and the outbox left by an earlier run. */
  async load(): Promise<void> {
    await this.refresh(true);
    for (const key of await this.kv.storage.getKeys(PREFIX.outbox)) {
      const entry = await this.kv.storage.getItem<OutboxEntry>(key);
      if (entry) this.track(key, withoutBody(entry));
    }
  }

  /** Re-reads webhook config (another process — the CLI — may have changed it); at most every 2 s unless forced. */
  async refresh(force = false): Promise<void> {
    if (!force && this.now() - this.lastRefresh < 2000) return;
    this.lastRefresh = this.now();
    this.hooks = await listWebhookRecords(this.kv.storage);
  }

  pending(webhookID: string): number {
    return this.pendingKeys.get(webhookID)?.size ?? 0;
  }

  private track(key: string, entry: Pending): void {
    this.outbox.set(key, entry);
    let keys = this.pendingKeys.get(entry.webhookID);
    if (!keys) this.pendingKeys.set(entry.webhookID, (keys = new Set()));
    keys.add(key);
    if (keys.size <= LIMITS.webhookPending) return;
    // A receiver that has been down for long: its oldest delivery gives way, so memory stays bounded.
    const oldest = keys.values().next().value!;
    this.untrack(oldest);
    this.kv.remove(oldest);
    this.dropped.set(entry.webhookID, (this.dropped.get(entry.webhookID) ?? 0) + 1);
  }

  private untrack(key: string): void {
    const entry = this.outbox.get(key);
    if (!entry) return;
    this.outbox.delete(key);
    this.pendingKeys.get(entry.webhookID)?.delete(key);
  }

  wants(): boolean {
    return this.hooks.length > 0;
  }

  /** Called synchronously while a commit takes its batch: the outbox entries join that very commit. */
  enqueue(events: DomainEvent[]): void {
    if (this.hooks.length === 0) return;
    for (const event of events)
      for (const hook of this.hooks) {
        if (hook.chatIDs[0] !== "*" && !hook.chatIDs.includes(event.chatID)) continue;
        const deliveryID = `dlv_${this.now().toString(36)}_${(this.counter++).toString(36)}_${randomHex(4)}`;
        const key = `${PREFIX.outbox}${deliveryID}`;
        const body = `{"deliveryID":${JSON.stringify(deliveryID)},"webhookID":${JSON.stringify(hook.id)},${event.body}`;
        const entry: OutboxEntry = { deliveryID, webhookID: hook.id, type: JSON.parse(`{${event.body}`).type, body, attempts: 0, nextAt: 0 };
        this.kv.put(key, entry);
        this.track(key, withoutBody(entry));
      }
  }

  /** The earliest retry, for the runtime's wake-up. */
  nextAt(): number | undefined {
    let next: number | undefined;
    for (const e of this.outbox.values()) if (next === undefined || e.nextAt < next) next = e.nextAt;
    return next;
  }

  /** Delivers everything due; one run at a time. */
  async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.refresh();
      for (const [webhookID, count] of this.dropped) {
        this.dropped.delete(webhookID);
        const stats = await this.statsFor(webhookID);
        const message = `${count} deliveries dropped: more than ${LIMITS.webhookPending} were pending`;
        stats.failed += count;
        stats.lastError = { at: new Date(this.now()).toISOString(), deliveryID: "", message, attempts: 0 };
        this.kv.put(PREFIX.stats + webhookID, stats);
      }
      for (;;) {
        const now = this.now();
        const due = [...this.outbox].filter(([, e]) => e.nextAt <= now).slice(0, 16);
        if (due.length === 0) break;
        await Promise.all(due.map(([key, entry]) => this.attempt(key, entry)));
        await this.kv.commit();
      }
    } finally {
      this.running = false;
      this.options.onIdleUntil?.(this.nextAt());
    }
  }

  private async attempt(key: string, entry: Pending): Promise<void> {
    const hook = this.hooks.find((h) => h.id === entry.webhookID);
    const body = (await this.kv.get<OutboxEntry>(key))?.body;
    if (!hook || body === undefined) {
      this.untrack(key);
      this.kv.remove(key);
      return;
    }
    const stats = await this.statsFor(hook.id);
    let failure: string | undefined;
    try {
      const timestamp = Math.floor(this.now() / 1000).toString();
      const response = await (this.options.fetch ?? fetch)(hook.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "inboxd-webhooks",
          "x-inboxd-event": entry.type,
          "x-inboxd-delivery": entry.deliveryID,
          "x-inboxd-timestamp": timestamp,
          "x-inboxd-signature": `sha256=${await hmacHex(hook.secret, `${timestamp}.${body}`)}`,
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      await response.body?.cancel();
      if (!response.ok) failure = `HTTP ${response.status}`;
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
    }
    const at = new Date(this.now()).toISOString();
    if (failure === undefined) {
      stats.delivered++;
      stats.lastSuccessAt = at;
      this.untrack(key);
      this.kv.remove(key);
    } else {
      entry.attempts++;
      stats.lastError = { at, deliveryID: entry.deliveryID, message: failure, attempts: entry.attempts };
      if (entry.attempts >= MAX_ATTEMPTS) {
        stats.failed++;
        stats.failures = [{ deliveryID: entry.deliveryID, at, message: failure, type: entry.type }, ...stats.failures].slice(0, 20);
        this.untrack(key);
        this.kv.remove(key);
      } else {
        // 1 s, 2 s, 4 s … capped at 1 h, with jitter so a recovering receiver is not hit all at once.
        // Whole milliseconds: a Durable Object alarm fires on the millisecond, and a fraction past it would never
        // be due when it does.
        entry.nextAt = Math.ceil(this.now() + Math.min(3_600_000, 1000 * 2 ** (entry.attempts - 1)) * (0.8 + Math.random() * 0.4));
        this.kv.put(key, { ...entry, body });
      }
    }
    this.kv.put(PREFIX.stats + hook.id, stats);
  }

  async stats(id: string): Promise<WebhookStats | undefined> {
    return this.statsCache.get(id) ?? this.kv.get<WebhookStats>(PREFIX.stats + id);
  }

  /** One stats object per webhook, shared by concurrent attempts so none of their counts is lost. */
  private async statsFor(id: string): Promise<WebhookStats> {
    const cached = this.statsCache.get(id);
    if (cached) return cached;
    const loaded = (await this.kv.get<WebhookStats>(PREFIX.stats + id)) ?? { delivered: 0, failed: 0, failures: [] };
    const raced = this.statsCache.get(id);
    if (raced) return raced;
    this.statsCache.set(id, loaded);
    return loaded;
  }
}

function withoutBody({ body: _body, ...pending }: OutboxEntry): Pending {
  return pending;
}

