import { ApiError, badRequest, notFound } from "../errors.ts";
import type { DomainEvent } from "../schema/events.ts";
import {
  type ChatLookup,
  createWebhook,
  type Cursor,
  type DeadLetter,
  listWebhookRecords,
  MAX_DEAD_LETTERS,
  presentWebhook,
  stateKeys,
  WEBHOOK_KEYS,
  type WebhookManager,
  type WebhookRecord,
  type WebhookStats,
} from "../services/webhooks.ts";
import type { Kv } from "../store/kv.ts";
import { hmacHex } from "../util/encoding.ts";
import type { EventLog } from "./log.ts";

/**
 * Webhook delivery, a sink of the event hub (src/events/hub.ts): the durable event log (src/events/log.ts) POSTed to registered URLs, signed with HMAC-SHA256, at least
 * once and in order. Each webhook is one more reader of the log with its own persisted cursor: the dispatcher reads
 * a page after the cursor, skips the events of other chats, and delivers the rest one at a time (webhooks do not
 * wait for each other). The cursor moves past an event only once its receiver answered 2xx, or once it was given up
 * on after MAX_ATTEMPTS (into the webhook's dead-letter list); while an event is retried, with exponential backoff,
 * the webhook's later events wait behind it. A delivery's ID is derived from the webhook and the eventID, so every
 * retry, a redelivery after a crash and a replay carry the same one: receivers deduplicate on it.
 * The records it reads and writes are services/webhooks.ts's.
 */

/** An outbox entry of an earlier version. */
interface LegacyEntry {
  deliveryID: string;
  webhookID: string;
  type: string;
  body: string;
}

export const MAX_ATTEMPTS = 10;
/** How long a receiver has to answer a delivery. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Events read from the log at a time, per webhook. */
const PAGE = 100;
/** The same for every attempt at the same event, across restarts and replays: what receivers deduplicate on. */
export const deliveryID = (webhookID: string, eventID: number) => `dlv_${webhookID.replace(/^wh_/, "")}_${eventID}`;

/** `type` is the first field of every logged body (src/schema/events.ts). */
const typeOf = (body: string) => /^"type":"([^"]*)"/.exec(body)?.[1] ?? "";

const follows = (hook: WebhookRecord, chatID: string) => hook.chatIDs[0] === "*" || hook.chatIDs.includes(chatID);

/**
 * Why a delivery failed, in words that say what to fix. fetch rejects with a bare "fetch failed" and puts the reason
 * in `cause` (undici on Node): a refused connection (`connect ECONNREFUSED 127.0.0.1:8080`), a name that does not
 * resolve, a TLS failure, a connection closed before the answer; a timeout is the signal's TimeoutError.
 */
export function deliveryFailure(error: unknown, url: string, timeoutMs: number): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === "TimeoutError") return `no answer within ${timeoutMs / 1000} s`;
  const cause = error.cause instanceof Error ? error.cause : error;
  const code = (cause as { code?: unknown }).code;
  // A connection tried over several addresses fails with an AggregateError, whose own message may be empty.
  let message =
    cause.message ||
    ((cause as Partial<AggregateError>).errors ?? []).map((e: Error) => e.message).join("; ") ||
    error.message;
  if (message === "bad port")
    return `fetch never connects to port ${new URL(url).port} (a "bad port" of the Fetch standard): use another port`;
  // OpenSSL's own text ("…:SSL routines:<function>:<reason>:<file>:<line>:") reduced to its reason.
  message = /SSL routines:[^:]*:([^:]+)/.exec(message)?.[1] ?? message;
  const tls = typeof code === "string" && /^ERR_(SSL|TLS)_|CERT|SIGNATURE|^UNABLE_TO_/.test(code);
  const named = typeof code === "string" && !message.includes(code) ? `${message} (${code})` : message;
  return tls ? `TLS: ${named}` : named;
}

/** One webhook as the running app holds it. */
interface HookState {
  hook: WebhookRecord;
  cursor: Cursor;
  stats: WebhookStats;
  deadLetters: DeadLetter[];
  /** The last eventID read from the log, and how many events of that read for this webhook are not dealt with yet. */
  readTo: number;
  unsent: number;
  /** Bumped by a replay: a delivery that was under way when the cursor moved back must not move it forward again. */
  epoch: number;
  /** Outbox entries of an earlier version, tried once before the log. */
  legacy: string[];
  /** Set while its delivery loop runs; `again` asks it for one more pass. */
  running?: Promise<void>;
  again?: boolean;
  /** After an unexpected error (the store failing): no new pass before this. */
  holdUntil?: number;
  removed?: boolean;
}

export interface DispatcherOptions {
  fetch?: typeof fetch;
  now?: () => number;
  /** Called when a delivery loop stops, with the earliest time one is due again (the runtime's wake-up). */
  onIdleUntil?: (at: number | undefined) => void;
  /** The delay before retry `attempts` (1, 2, …), before jitter: default 1 s doubling, at most 1 h. */
  backoffMs?: (attempts: number) => number;
  /** How long a receiver has to answer (default DELIVERY_TIMEOUT_MS). */
  timeoutMs?: number;
}

const defaultBackoff = (attempts: number) => Math.min(3_600_000, 1000 * 2 ** (attempts - 1));

export class WebhookDispatcher implements WebhookManager {
  private readonly states = new Map<string, HookState>();
  private log!: EventLog;
  private lastRefresh = 0;

  constructor(
    private readonly kv: Kv,
    private readonly options: DispatcherOptions = {},
  ) {}

  private get now() {
    return this.options.now ?? Date.now;
  }

  /** Reads every webhook's state (and the outbox an earlier version left); deliveries then follow `log`. */
  async load(log: EventLog): Promise<void> {
    this.log = log;
    await this.refresh(true);
    for (const key of await this.kv.storage.getKeys(WEBHOOK_KEYS.legacy)) {
      const entry = await this.kv.get<LegacyEntry>(key);
      const state = entry && this.states.get(entry.webhookID);
      if (state) state.legacy.push(key);
      else this.kv.remove(key);
    }
  }

  /** Re-reads webhook config (another process — the CLI — may have changed it); at most every 2 s unless forced. */
  async refresh(force = false): Promise<void> {
    if (!force && this.now() - this.lastRefresh < 2000) return;
    this.lastRefresh = this.now();
    const records = await listWebhookRecords(this.kv.storage);
    const ids = new Set(records.map((r) => r.id));
    for (const [id, state] of this.states) {
      if (ids.has(id)) continue;
      state.removed = true;
      this.states.delete(id);
      // A delivery under way when it was removed may have written these again.
      for (const key of stateKeys(id)) this.kv.remove(key);
    }
    for (const hook of records) {
      if (this.states.has(hook.id)) continue;
      const [cursor, stats, deadLetters] = await Promise.all([
        this.kv.get<Cursor>(WEBHOOK_KEYS.cursor + hook.id),
        this.kv.get<WebhookStats>(WEBHOOK_KEYS.stats + hook.id),
        this.kv.get<DeadLetter[]>(WEBHOOK_KEYS.dead + hook.id),
      ]);
      if (this.states.has(hook.id)) continue; // a concurrent refresh was first
      const state: HookState = {
        hook,
        // A webhook of an earlier version has no cursor: it starts at the head (its outbox holds what came before).
        cursor: cursor ?? { after: this.log.durable },
        stats: {
          delivered: stats?.delivered ?? 0,
          failed: stats?.failed ?? 0,
          lastSuccessAt: stats?.lastSuccessAt,
          lastError: stats?.lastError,
        },
        deadLetters: deadLetters ?? [],
        readTo: 0,
        unsent: 0,
        epoch: 0,
        legacy: [],
      };
      if (state.cursor.after > this.log.durable) this.aheadOfLog(state);
      state.readTo = state.cursor.after;
      if (!cursor || state.cursor !== cursor) this.kv.put(WEBHOOK_KEYS.cursor + hook.id, state.cursor);
      this.states.set(hook.id, state);
    }
  }

  /**
   * Registers a webhook (API) for chats `findChat` knows: its cursor starts at the newest durable event. Answers it
   * with its secret, shown this once.
   */
  async create(input: { url: string; chatIDs?: string[] }, findChat: ChatLookup) {
    const record = await createWebhook(this.kv.storage, input, { head: this.log.durable, findChat });
    return { ...(await this.present(record.id)), secret: record.secret };
  }

  /** The webhook as the API shows it (after a refresh, so one the CLI just added is there too). */
  async present(id: string) {
    await this.refresh(true);
    const state = this.states.get(id);
    if (!state) throw notFound(`webhook ${id}`);
    return this.presentState(state);
  }

  /** Every webhook as the API shows it, oldest first. */
  async list() {
    await this.refresh(true);
    return [...this.states.values()]
      .sort((a, b) => a.hook.createdAt.localeCompare(b.hook.createdAt))
      .map((state) => this.presentState(state));
  }

  private presentState(state: HookState) {
    const pending = state.unsent + Math.max(0, this.log.durable - state.readTo);
    return presentWebhook(state.hook, {
      stats: state.stats,
      cursor: state.cursor.after,
      pending,
      deadLetters: state.deadLetters,
    });
  }

  /**
   * Moves a webhook's cursor back to `since`, so every event after it (for its chats) is delivered again, with the
   * same delivery IDs. `since` must be within the log: from the oldest event kept (minus one) to the newest.
   */
  async replay(id: string, since: number) {
    await this.refresh(true);
    const state = this.states.get(id);
    if (!state) throw notFound(`webhook ${id}`);
    const head = this.log.durable;
    if (since > head)
      throw badRequest(`since ${since} is after the newest event (${head})`, [
        { code: "invalid_value", message: `at most ${head}`, path: ["query", "since"] },
      ]);
    const oldest = this.log.oldest - 1;
    if (since < oldest)
      throw new ApiError(
        410,
        "RESYNC_REQUIRED",
        `the events after ${since} are no longer kept: the oldest kept is ${oldest + 1}, so since must be at least ${oldest}`,
        {
          oldestEventID: oldest + 1,
          latestEventID: head,
        },
      );
    state.epoch++;
    state.cursor = { after: since };
    state.readTo = since;
    state.unsent = 0;
    state.holdUntil = undefined;
    await this.save(state);
    void this.run().catch(() => undefined);
    return this.presentState(state);
  }

  /** False while there is no webhook: the hub then skips this sink. */
  wants(): boolean {
    return this.states.size > 0;
  }

  /** The hub's sink: a commit that logged events is durable, so there is something to read. */
  deliver(events: DomainEvent[]): void {
    if (events.some((e) => e.id !== undefined)) void this.run().catch(() => undefined);
  }

  /** The earliest time a webhook has something due (a retry, or events no delivery loop is reading), for the runtime's wake-up. */
  nextAt(): number | undefined {
    let next: number | undefined;
    for (const state of this.states.values()) {
      if (state.running) continue;
      const due =
        state.cursor.retry?.nextAt ?? (state.legacy.length || state.cursor.after < this.log.durable ? 0 : undefined);
      if (due === undefined) continue;
      const at = Math.max(due, state.holdUntil ?? 0);
      if (next === undefined || at < next) next = at;
    }
    return next;
  }

  /** Starts (or asks for one more pass of) every webhook's delivery loop, and resolves once they have all stopped. */
  async run(): Promise<void> {
    await this.refresh();
    await Promise.all(
      [...this.states.values()].map((state) => {
        if (state.running) state.again = true;
        else state.running = this.loop(state);
        return state.running;
      }),
    );
  }

  private async loop(state: HookState): Promise<void> {
    try {
      do {
        state.again = false;
        await this.drain(state);
      } while (state.again && !state.removed);
    } catch {
      // The store failed (a read or a commit): try again in a while rather than at once.
      state.holdUntil = this.now() + 10_000;
    } finally {
      state.running = undefined;
      this.options.onIdleUntil?.(this.nextAt());
    }
  }

  /** Delivers what is due for one webhook, in log order, until it is caught up or waits for a retry. */
  private async drain(state: HookState): Promise<void> {
    if (state.holdUntil !== undefined && state.holdUntil > this.now()) return;
    state.holdUntil = undefined;
    while (state.legacy.length && !state.removed) await this.deliverLegacy(state, state.legacy.shift()!);
    for (;;) {
      const retry = state.cursor.retry;
      if (state.removed || (retry && retry.nextAt > this.now())) return;
      const { epoch } = state;
      const after = state.cursor.after;
      if (after >= this.log.durable) return;
      const page = await this.log.read(after, PAGE);
      if (state.epoch !== epoch || state.removed) continue;
      if ("gone" in page) {
        this.retentionGap(state, after, page.oldest - 1);
        await this.save(state);
        continue;
      }
      if (!page.events.length) return;
      state.readTo = page.events.at(-1)!.id!;
      state.unsent = page.events.filter((e) => follows(state.hook, e.chatID)).length;
      for (const event of page.events) {
        if (!follows(state.hook, event.chatID)) {
          state.cursor.after = event.id!;
          continue;
        }
        const moved = await this.attempt(state, event, epoch);
        if (state.epoch !== epoch || state.removed) break;
        await this.save(state);
        if (!moved) return;
        if (state.epoch !== epoch) break;
        state.unsent--;
      }
      // Events of chats the webhook does not follow move its cursor in memory only: it is stored with the next
      // delivery (a commit per skipped page would double the writes of every change). After a crash they are
      // skipped again.
    }
  }

  /**
   * One attempt at one event. Answers whether the cursor moved past it: delivered, or given up on after
   * MAX_ATTEMPTS (a dead letter). Otherwise its retry is scheduled and the webhook's later events wait.
   */
  private async attempt(state: HookState, event: DomainEvent, epoch: number): Promise<boolean> {
    const { hook } = state;
    const eventID = event.id!;
    const id = deliveryID(hook.id, eventID);
    const type = typeOf(event.body);
    const failure = await this.post(
      hook,
      id,
      type,
      `{"deliveryID":${JSON.stringify(id)},"webhookID":${JSON.stringify(hook.id)},${event.body}`,
    );
    const at = new Date(this.now()).toISOString();
    if (failure === undefined) {
      state.stats.delivered++;
      state.stats.lastSuccessAt = at;
      if (state.epoch === epoch) state.cursor = { after: eventID };
      return true;
    }
    const attempts = (state.cursor.retry?.eventID === eventID ? state.cursor.retry.attempts : 0) + 1;
    state.stats.lastError = { at, deliveryID: id, message: failure, attempts };
    if (state.epoch !== epoch) return false;
    if (attempts < MAX_ATTEMPTS) {
      // With jitter, so a recovering receiver is not hit by every webhook at once. Whole milliseconds: a Durable
      // Object alarm fires on the millisecond, and a fraction past it would never be due when it does.
      const delay = (this.options.backoffMs ?? defaultBackoff)(attempts) * (0.8 + Math.random() * 0.4);
      state.cursor.retry = { eventID, attempts, nextAt: Math.ceil(this.now() + delay) };
      return false;
    }
    state.stats.failed++;
    this.deadLetter(state, { deliveryID: id, eventID, type, at, attempts, message: failure });
    state.cursor = { after: eventID };
    return true;
  }

  /** POSTs one signed delivery; answers the failure, or undefined when the receiver took it (2xx). */
  private async post(hook: WebhookRecord, id: string, type: string, body: string): Promise<string | undefined> {
    const timeoutMs = this.options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    try {
      const timestamp = Math.floor(this.now() / 1000).toString();
      const response = await (this.options.fetch ?? fetch)(hook.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "inboxd-webhooks",
          "x-inboxd-event": type,
          "x-inboxd-delivery": id,
          "x-inboxd-timestamp": timestamp,
          "x-inboxd-signature": `sha256=${await hmacHex(hook.secret, `${timestamp}.${body}`)}`,
        },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      return response.ok ? undefined : `HTTP ${response.status}`;
    } catch (error) {
      return deliveryFailure(error, hook.url, timeoutMs);
    }
  }

  /** Retention dropped events after the cursor before they were delivered: said in lastError and the dead letters, never silently. */
  private retentionGap(state: HookState, after: number, last: number) {
    const at = new Date(this.now()).toISOString();
    const count = last - after;
    const message = `${count} event${count === 1 ? " was" : "s were"} dropped by retention before delivery (eventIDs ${after + 1}–${last})`;
    state.stats.lastError = { at, deliveryID: "", message, attempts: 0 };
    this.deadLetter(state, { deliveryID: "", eventID: last, type: "", at, attempts: 0, message });
    state.cursor = { after: last };
    state.readTo = last;
  }

  /**
   * The cursor is past the newest event: the store lost the log's newest events (restored from an older copy, or a
   * power loss without synchronous commits), and their IDs will be given again. Start over from the head, and say so.
   */
  private aheadOfLog(state: HookState) {
    const head = this.log.durable;
    const message = `the cursor (eventID ${state.cursor.after}) was ahead of the event log (newest ${head}): the store lost its newest events; delivery goes on from ${head}`;
    state.stats.lastError = { at: new Date(this.now()).toISOString(), deliveryID: "", message, attempts: 0 };
    state.cursor = { after: head };
  }

  private deadLetter(state: HookState, letter: DeadLetter) {
    state.deadLetters = [letter, ...state.deadLetters].slice(0, MAX_DEAD_LETTERS);
    this.kv.put(WEBHOOK_KEYS.dead + state.hook.id, state.deadLetters);
  }

  /** An outbox entry of an earlier version: one attempt, counted, then dropped. */
  private async deliverLegacy(state: HookState, key: string) {
    const entry = await this.kv.get<LegacyEntry>(key);
    if (entry) {
      const failure = await this.post(state.hook, entry.deliveryID, entry.type, entry.body);
      const at = new Date(this.now()).toISOString();
      if (failure === undefined) {
        state.stats.delivered++;
        state.stats.lastSuccessAt = at;
      } else {
        state.stats.failed++;
        const message = `${failure} (queued by an earlier version; not retried)`;
        state.stats.lastError = { at, deliveryID: entry.deliveryID, message, attempts: 1 };
        this.deadLetter(state, {
          deliveryID: entry.deliveryID,
          eventID: 0,
          type: entry.type,
          at,
          attempts: 1,
          message,
        });
      }
    }
    this.kv.remove(key);
    await this.save(state);
  }

  /** Cursor and counts, durable before the next delivery: a crash redelivers at most the event under way. */
  private async save(state: HookState) {
    if (state.removed) return;
    this.kv.put(WEBHOOK_KEYS.cursor + state.hook.id, state.cursor);
    this.kv.put(WEBHOOK_KEYS.stats + state.hook.id, state.stats);
    await this.kv.commit();
  }
}
