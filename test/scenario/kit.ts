/**
 * Shared plumbing of the scenario suite: the per-runtime environment, the one HTTP client (test/kit/http.ts) as the
 * suite uses it (every JSON answer checked against the served document, a reset connection retried once), page
 * walkers and small helpers. Nothing here asserts; the scenario modules do.
 */
import { randomBytes } from "node:crypto";
import BeeperDesktop from "@beeper/desktop-api";
import BeeperDesktop4 from "desktop-api-4";
import type { InferOutput } from "valibot";
import type { Account, Chat, ErrorBody as ErrorSchema, Message, Page, User } from "../../src/schema/wire.ts";
import { chatPath, ECHO_ID, enc, waitFor } from "../kit/common.ts";
import { Api, type Answer, type Init } from "../kit/http.ts";
import { nodeFetch } from "../kit/node-http.ts";
import { checkingFetch, type ResponseChecker } from "./openapi-check.ts";

export type ErrorBody = InferOutput<typeof ErrorSchema>;
/** The `details` of a refused input: its issues, each with the path of what it names. */
export type Issues = Extract<NonNullable<ErrorBody["details"]>, { issues: unknown }>;

export interface SuiteOptions {
  /** The Node daemon refuses non-loopback Host headers; the Worker answers any host. */
  checksHost: boolean;
}

export const SEED = { chats: 40, messages: 1500, accounts: 2, seed: 7 };

/** Everything a scenario needs; filled by the suite's beforeAll, read only inside tests. */
export interface Env {
  name: string;
  options: SuiteOptions;
  url: string;
  /** read+write token */
  rw: string;
  /** read-only token */
  ro: string;
  sdk: BeeperDesktop;
  sdkRO: BeeperDesktop;
  sdk4: BeeperDesktop4;
  accounts: Account[];
  /** Checks every JSON answer against GET /v1/spec (set once the server is up; see openapi-check.ts). */
  spec?: ResponseChecker;
}

/**
 * SDK clients run with maxRetries 0 so that every error status reaches the test as it was sent; only a request
 * that died on a reset kept-alive connection is sent once more (see RawInit.noRetry).
 */
export const sdkOptions = { maxRetries: 0, logLevel: "off" as const, fetch: retryingFetch };

export function makeClients(env: Env) {
  const options = { ...sdkOptions, fetch: checkedFetch(env) };
  env.sdk = new BeeperDesktop({ baseURL: env.url, accessToken: env.rw, ...options });
  env.sdkRO = new BeeperDesktop({ baseURL: env.url, accessToken: env.ro, ...options });
  env.sdk4 = new BeeperDesktop4({ baseURL: env.url, accessToken: env.rw, ...options });
}

/** The SDKs' fetch: retried once on a reset connection, and every JSON answer checked against the document. */
const checkedFetch = (env: Env) => checkingFetch(() => env.spec, retryingFetch as typeof fetch);

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP

export interface RawInit extends Init {
  method?: string;
  /**
   * By default a request that dies on a reset connection is sent once more, as the official SDKs do: a server
   * that closes a kept-alive connection should not fail unrelated scenarios. The test about that sets this.
   */
  noRetry?: boolean;
}

const connectionError = (error: unknown) => {
  const code = (error as { cause?: { code?: string } }).cause?.code;
  return error instanceof TypeError && (code === "ECONNRESET" || code === "UND_ERR_SOCKET" || code === "EPIPE");
};

/** fetch, sent once more when the connection was reset under it (bodies here are strings, so re-sendable). */
export async function retryingFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (error) {
    if (!connectionError(error)) throw error;
    return fetch(input, init);
  }
}

/**
 * The one client on `env`'s server with its read+write token, as the suite uses it: every JSON answer checked
 * against the served document, a request that died on a reset connection sent once more unless `noRetry`.
 */
export const client = (env: Env, noRetry = false) =>
  new Api(env.url, env.rw, {
    fetch: noRetry ? fetch : retryingFetch,
    check: (method, url, res) => env.spec?.check(method, url, res.status, res.headers.get("content-type"), res.body),
  });

/** A request; the token is the read+write one unless `init.token` says otherwise. */
export function raw<T = any>(env: Env, path: string, init: RawInit = {}): Promise<Answer<T>> {
  const { method = "GET", noRetry, ...rest } = init;
  return client(env, noRetry).raw<T>(method, path, rest);
}

/** A GET through node:http, which (unlike fetch) lets the test choose the Host header; not checked (no operation). */
export function rawWithHost(env: Env, path: string, host: string, token: string | null = env.rw): Promise<Answer> {
  return client(env).with({ fetch: nodeFetch(), check: undefined }).raw("GET", path, { headers: { host }, token });
}

/** RFC 3986 query string; arrays repeat the key (wire-compat §3). Undefined values are left out. */
export function qs(params: Record<string, string | number | boolean | (string | number)[] | undefined | null>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? value : [value])
      parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? `?${parts.join("&")}` : "";
}

/** Throws with the response shown when the status is not the expected one (for setup steps, not assertions). */
export function ok<T = any>(env: Env, path: string, init: RawInit = {}, status = 200): Promise<T> {
  const { method = "GET", noRetry, ...rest } = init;
  return client(env, noRetry).okWith<T>(method, path, rest, status);
}

// ---------------------------------------------------------------------------------------------------------------
// Page walking over raw HTTP

export interface Walk<T> {
  pages: Page<T>[];
  items: T[];
}

/**
 * Walks a list endpoint. `before` (default) follows oldestCursor; `after` follows newestCursor and collects every
 * page's items reversed, so the result of an `after` walk is oldest → newest. Stops on hasMore=false, an empty
 * page or a null cursor; refuses to loop forever.
 */
export async function walk<T>(
  env: Env,
  path: string,
  params: Record<string, any> = {},
  options: { direction?: "before" | "after"; cursor?: string; maxPages?: number } = {},
): Promise<Walk<T>> {
  const dir = options.direction ?? "before";
  const pages: Page<T>[] = [];
  const items: T[] = [];
  let cursor = options.cursor;
  for (let n = 0; ; n++) {
    if (n >= (options.maxPages ?? 500)) throw new Error(`walk of ${path} did not end after ${n} pages`);
    const query = { ...params, ...(cursor ? { cursor, ...(options.direction ? { direction: dir } : {}) } : {}) };
    const page = await ok<Page<T>>(env, path + qs(query));
    pages.push(page);
    items.push(...(dir === "after" ? [...page.items].reverse() : page.items));
    const next = dir === "after" ? page.newestCursor : page.oldestCursor;
    if (!page.hasMore || page.items.length === 0 || !next) break;
    cursor = next;
  }
  return { pages, items };
}

export async function allChats(env: Env): Promise<Chat[]> {
  return (await walk<Chat>(env, "/v1/chats")).items;
}

export async function allMessages(env: Env, chatID: string): Promise<Message[]> {
  return (await walk<Message>(env, `${chatPath(chatID)}/messages`)).items;
}

// ---------------------------------------------------------------------------------------------------------------
// Fixtures made through the API itself

/** Contacts of an account (the whole list), excluding Echo. */
export async function contactsOf(env: Env, accountID: string): Promise<User[]> {
  const list = await walk<User>(env, `/v1/accounts/${enc(accountID)}/contacts/list`, { limit: 200 });
  return list.items.filter((u) => u.id !== ECHO_ID);
}

/** The Echo direct chat of an account, found through chat search as a client would. */
export async function echoChat(env: Env, accountID: string): Promise<Chat> {
  const page = await ok<Page<Chat>>(
    env,
    `/v1/chats/search${qs({ query: "echo", accountIDs: accountID, type: "single", limit: 200 })}`,
  );
  const chat = page.items.find((c) => c.participants.items.some((p) => p.id === ECHO_ID));
  if (!chat) throw new Error(`no Echo chat for ${accountID}`);
  return chat;
}

/** A chat with more than one page of messages (a seeded one: chats made by the suite are small). */
export async function chatWithHistory(env: Env, type?: "single" | "group"): Promise<Chat> {
  for (const chat of await allChats(env)) {
    if (type && chat.type !== type) continue;
    if (chat.participants.items.some((p) => p.id === ECHO_ID)) continue;
    const page = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
    if (page.hasMore) return chat;
  }
  throw new Error("no chat with more than one page of messages");
}

let groupCounter = 0;

/** A new group chat of the given account with `size` of its contacts, created through POST /v1/chats. */
export async function newGroup(
  env: Env,
  accountID = env.accounts[0].accountID,
  size = 2,
  title?: string,
): Promise<Chat & { chatID: string }> {
  const contacts = await contactsOf(env, accountID);
  const start = (groupCounter++ * 3) % Math.max(1, contacts.length - size);
  const participantIDs = contacts.slice(start, start + size).map((u) => u.id);
  return ok(env, "/v1/chats", {
    method: "POST",
    json: {
      accountID,
      type: "group",
      participantIDs,
      title: title ?? `Scenario group ${groupCounter} ${randomBytes(3).toString("hex")}`,
    },
  });
}

/** Sends a text and waits for it to settle; returns the stored message. */
export async function sendSettled(env: Env, chatID: string, text: string): Promise<Message> {
  const sent = await ok<{ chatID: string; pendingMessageID: string }>(env, `${chatPath(chatID)}/messages`, {
    method: "POST",
    json: { text },
  });
  return client(env).settled(chatID, sent.pendingMessageID);
}

/** Waits for the Echo reply to a message in an Echo chat. */
export async function echoReply(env: Env, chatID: string, messageID: string): Promise<Message> {
  return waitFor(
    `Echo reply to ${messageID}`,
    async () => {
      const page = await ok<Page<Message>>(env, `${chatPath(chatID)}/messages`);
      return page.items.find((m) => m.linkedMessageID === messageID && m.senderID === ECHO_ID);
    },
    3000,
  );
}

/** Lower-cased words as the spec's literal word search sees them. */
export const words = (text: string | undefined): string[] => (text ?? "").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

export const ids = <T extends { id: string }>(xs: T[]) => xs.map((x) => x.id);

export function duplicates(values: string[]): string[] {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const v of values) (seen.has(v) ? dup : seen).add(v);
  return [...dup];
}

export const ms = (iso: string | undefined) => (iso ? Date.parse(iso) : NaN);
