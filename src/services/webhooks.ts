import type { Storage, StorageValue } from "unstorage";
import { badRequest, clip, conflict, notFound, unprocessable } from "../errors.ts";
import { LIMITS } from "../schema/limits.ts";
import { Db } from "../store/db.ts";
import { randomHex } from "../util/encoding.ts";

/**
 * Webhooks as records: registering, listing, presenting and removing them, for the API and for the CLI (another
 * process, with no running app). Delivering them is the event log's work: src/events/webhook-dispatcher.ts, one
 * more sink of the event hub.
 *
 * Records: config `webhook:<id>` (written by the API or the CLI), and, written by the running app only (and at
 * creation), the cursor `whcur:<id>`, delivery counts `whstats:<id>` and dead letters `whdead:<id>`. `whq:` entries
 * are the outbox of earlier versions: each is tried once, then dropped.
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
}

/** A delivery given up on, or a stretch of events retention dropped before they were delivered (`deliveryID` ""). */
export interface DeadLetter {
  deliveryID: string;
  eventID: number;
  type: string;
  at: string;
  attempts: number;
  message: string;
}

/** Where a webhook stands in the log. */
export interface Cursor {
  /** The last eventID dealt with: delivered, dead-lettered, or of a chat the webhook does not follow. */
  after: number;
  /** The next event's failed attempts so far and when the next one is due. */
  retry?: { eventID: number; attempts: number; nextAt: number };
}

/** Dead letters kept per webhook (the newest). */
export const MAX_DEAD_LETTERS = 100;
/** Key prefixes: config, delivery counts, cursor, dead letters, and the outbox of earlier versions. */
export const WEBHOOK_KEYS = {
  config: "webhook:",
  stats: "whstats:",
  cursor: "whcur:",
  dead: "whdead:",
  legacy: "whq:",
};
const WEBHOOK_ID = /^wh_[0-9a-f]{1,64}$/;

/** Finds a chat by its ID or its localChatID (a chat table's `find`). */
export type ChatLookup = (idOrLocal: string) => { id: string } | undefined;

/** The chats as the store has them, for another process (the CLI), which has no running app. */
async function storedChats(storage: Storage): Promise<ChatLookup> {
  const db = await Db.open(storage);
  return (id) => db.chats.find(id);
}

/**
 * The chats a webhook names, as the chat IDs events carry (a localChatID becomes its chat's ID): one that names no
 * chat of this device is refused (422 naming it), rather than accepted for a webhook that could never deliver.
 */
function chatsOf(ids: string[], find: ChatLookup): string[] {
  const chatIDs = ids.map((id, i) => {
    const chat = find(id);
    if (!chat)
      throw unprocessable(
        `unknown chat ${clip(id)}: a webhook's chatIDs must be chats of this device (GET /v1/chats lists them)`,
        ["body", "chatIDs", i],
      );
    return chat.id;
  });
  return [...new Set(chatIDs)];
}

/**
 * Registers a webhook whose cursor starts at `head`: it gets the events from now on, no history. The running app
 * passes the newest durable event and its chat table; the CLI passes the head it read, and the chats are read from the
 * store. Config
 * and cursor are written in one batch.
 */
export async function createWebhook(
  storage: Storage,
  input: { url: string; chatIDs?: string[] },
  at: { head: number; findChat?: ChatLookup },
): Promise<WebhookRecord> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw badRequest("url is not a valid URL", [
      { code: "invalid_url", message: "expected an http(s) URL", path: ["body", "url"] },
    ]);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw badRequest("url must be http or https", [
      { code: "invalid_url", message: "expected an http(s) URL", path: ["body", "url"] },
    ]);
  const requested = input.chatIDs?.length ? [...new Set(input.chatIDs)] : ["*"];
  if (requested.includes("*") && requested.length > 1)
    throw badRequest('"*" cannot be combined with chat IDs', [
      { code: "invalid_value", message: '"*" alone', path: ["body", "chatIDs"] },
    ]);
  if ((await storage.getKeys(WEBHOOK_KEYS.config)).length >= LIMITS.webhooks)
    throw conflict(`a device takes at most ${LIMITS.webhooks} webhooks; remove one first`);
  const chatIDs = requested[0] === "*" ? requested : chatsOf(requested, at.findChat ?? (await storedChats(storage)));
  const record: WebhookRecord = {
    id: `wh_${randomHex(8)}`,
    url: url.toString(),
    chatIDs,
    secret: `whsec_${randomHex(24)}`,
    createdAt: new Date().toISOString(),
  };
  const cursor: Cursor = { after: at.head };
  await storage.setItems<StorageValue>([
    { key: WEBHOOK_KEYS.config + record.id, value: record },
    { key: WEBHOOK_KEYS.cursor + record.id, value: cursor },
  ]);
  return record;
}

export async function listWebhookRecords(storage: Storage): Promise<WebhookRecord[]> {
  const keys = await storage.getKeys(WEBHOOK_KEYS.config);
  const records = (await Promise.all(keys.map((k) => storage.getItem<WebhookRecord>(k)))).filter(
    (r): r is WebhookRecord => !!r,
  );
  return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

export const stateKeys = (id: string) => [WEBHOOK_KEYS.stats + id, WEBHOOK_KEYS.cursor + id, WEBHOOK_KEYS.dead + id];

export async function removeWebhook(storage: Storage, id: string): Promise<void> {
  // The running app forgets the webhook on its next refresh (it is then gone from its list).
  // IDs are ours (wh_ and hex); anything else names no webhook, and must not reach the store as a key.
  if (!WEBHOOK_ID.test(id) || !(await storage.hasItem(WEBHOOK_KEYS.config + id))) throw notFound(`webhook ${id}`);
  await storage.removeItem(WEBHOOK_KEYS.config + id);
  for (const key of stateKeys(id)) await storage.removeItem(key);
}

/** What the API shows of a webhook besides its config. */
export interface WebhookView {
  stats?: WebhookStats;
  cursor: number;
  /** Events after the cursor still to deliver: exact once the dispatcher has read up to the log's head, else at most this many. */
  pending: number;
  deadLetters: DeadLetter[];
}

/** The webhook as the API shows it: config without the secret, its cursor, delivery counts and dead letters. */
export function presentWebhook(record: WebhookRecord, view: WebhookView) {
  const { secret: _secret, ...config } = record;
  const { stats, cursor, pending, deadLetters } = view;
  return {
    ...config,
    cursor,
    pending,
    delivered: stats?.delivered ?? 0,
    failed: stats?.failed ?? 0,
    lastSuccessAt: stats?.lastSuccessAt,
    lastError: stats?.lastError,
    failures: deadLetters,
  };
}

/**
 * Every webhook as the store has it, for another process (the CLI): `pending` is at most the events after the
 * cursor (telling which of them are for the webhook's chats would mean reading them).
 */
export async function storedWebhooks(storage: Storage, head: number) {
  return Promise.all(
    (await listWebhookRecords(storage)).map(async (record) => {
      const cursor = (await storage.getItem<Cursor>(WEBHOOK_KEYS.cursor + record.id))?.after ?? head;
      const stats = (await storage.getItem<WebhookStats>(WEBHOOK_KEYS.stats + record.id)) ?? undefined;
      const deadLetters = (await storage.getItem<DeadLetter[]>(WEBHOOK_KEYS.dead + record.id)) ?? [];
      return presentWebhook(record, { stats, cursor, pending: Math.max(0, head - cursor), deadLetters });
    }),
  );
}

/** What the API asks of the running webhooks (the dispatcher answers, as it alone knows what is pending). */
export interface WebhookManager {
  create(
    input: { url: string; chatIDs?: string[] },
    findChat: ChatLookup,
  ): Promise<ReturnType<typeof presentWebhook> & { secret: string }>;
  present(id: string): Promise<ReturnType<typeof presentWebhook>>;
  list(): Promise<ReturnType<typeof presentWebhook>[]>;
  replay(id: string, since: number): Promise<ReturnType<typeof presentWebhook>>;
  /** Re-reads the config (after a change by the API, or by the CLI); at most every 2 s unless forced. */
  refresh(force?: boolean): Promise<void>;
  /** When a delivery is next due (a retry, or events not yet read), for the wake-up (services/wake.ts). */
  nextAt(): number | undefined;
  /** Delivers what is due, and resolves once every webhook is caught up or waiting for a retry. */
  run(): Promise<void>;
}
