import { INBOX_ID_PATTERN, type InboxLimits } from "../../src/tenancy.ts";
import { isLoopbackHost } from "../../src/util/hosts.ts";
import type { InboxRecord, InboxUsage } from "../workers/inbox-control.ts";
import { printTable } from "./cli-table.ts";
import { UsageError } from "./usage-error.ts";

/** The options of `inboxd inbox` (cli.ts parses them; every value is checked here). */
export interface InboxFlags {
  url?: string;
  json?: boolean;
  name?: string;
  "max-accounts"?: string;
  "max-storage-bytes"?: string;
  "requests-per-second"?: string;
  yes?: boolean;
  off?: boolean;
  limit?: string;
  after?: string;
  /** Accepted by the parser only to be refused with the reason: the token comes from the environment. */
  token?: string;
}

const ACTIONS = ["create", "list", "show", "suspend", "resume", "limits", "sign-in-link", "relay", "delete"] as const;
type Action = (typeof ACTIONS)[number];

const LIMIT_FLAGS = ["max-accounts", "max-storage-bytes", "requests-per-second"] as const;
type LimitFlag = (typeof LIMIT_FLAGS)[number];
const LIMIT_KEYS: Record<LimitFlag, keyof InboxLimits> = {
  "max-accounts": "maxAccounts",
  "max-storage-bytes": "maxStorageBytes",
  "requests-per-second": "requestsPerSecond",
};

/** Which actions take which options (beyond --url and --json, which all take). */
const FLAG_ACTIONS: Record<string, Action[]> = {
  name: ["create"],
  "max-accounts": ["create", "limits"],
  "max-storage-bytes": ["create", "limits"],
  "requests-per-second": ["create", "limits"],
  yes: ["delete"],
  off: ["relay"],
  limit: ["list"],
  after: ["list"],
};

/** How long one request to the Worker may take before the command gives up. */
const TIMEOUT_MS = 60_000;

const BASE = "/admin/v1/inboxes";

type Answer<T> = { body: T; text: string };
type Api = <T>(method: string, path: string, body?: unknown) => Promise<Answer<T>>;
/** The admin API's list answer: one page, in ID order. */
type Page = { items: InboxRecord[]; hasMore: boolean; nextAfter?: string };
/** The most the admin API answers in one page. */
const PAGE_MOST = 1000;
type Link = { url: string; expiresAt: string };

/** The Worker refused, or could not be reached: exit 1 with what happened (never the token). */
class Failure extends Error {}

/**
 * `inboxd inbox …`: the operator's admin API of a Worker holding many inboxes (INBOXD_TENANCY=multi,
 * adapters/workers/registry-object.ts), at --url or INBOXD_OPERATOR_URL, with the token of INBOXD_OPERATOR_TOKEN.
 */
export async function runInbox(
  positionals: string[],
  values: InboxFlags,
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  const [action, ...args] = positionals;
  if (!isAction(action))
    throw new UsageError(
      action
        ? `unknown inbox action ${action}`
        : "inbox needs an action: create, list, show, suspend, resume, limits, sign-in-link, relay or delete",
    );
  for (const [flag, actions] of Object.entries(FLAG_ACTIONS))
    if (values[flag as keyof InboxFlags] !== undefined && !actions.includes(action))
      throw new UsageError(`--${flag} is for inbox ${actions.join(" and inbox ")}, not inbox ${action}`);
  const takesID = action !== "list" && action !== "create";
  if (takesID && args.length === 0) throw new UsageError(`inbox ${action} needs an inbox ID (from inbox list)`);
  const most = action === "list" ? 0 : 1;
  if (args.length > most)
    throw new UsageError(
      `inbox ${action} takes ${most === 0 ? "no arguments" : "one inbox ID"}, got ${args.map((a) => JSON.stringify(a)).join(" ")}`,
    );
  const id = args[0] as string | undefined;
  if (id !== undefined && !INBOX_ID_PATTERN.test(id))
    throw new UsageError(`an inbox ID is 1–32 lower-case letters, digits or inner hyphens, got ${JSON.stringify(id)}`);
  const limits = parseLimits(values);
  const slice = parseSlice(values);
  const api = connect(values, env);
  const print = (answer: Answer<unknown>, readable: () => void) => {
    if (values.json) console.log(answer.text);
    else readable();
  };
  const path = id === undefined ? BASE : `${BASE}/${encodeURIComponent(id)}`;

  try {
    switch (action) {
      case "create": {
        const body: Record<string, unknown> = {};
        if (id !== undefined) body.id = id;
        if (values.name !== undefined) body.name = values.name;
        // Any limit given replaces the deployment's default set (INBOXD_INBOX_LIMITS) as a whole, as the API does.
        if (Object.keys(limits).length) body.limits = withChanges({}, limits);
        const answer = await api<InboxRecord & { signIn: Link }>("POST", BASE, body);
        const record = answer.body;
        print(answer, () => {
          console.error(`Created inbox ${describe(record)}; limits: ${limitText(record.limits)}.`);
          printLink(record.id, record.signIn);
        });
        return 0;
      }
      case "list": {
        const listed = await listInboxes(api, slice);
        if (values.json) console.log(JSON.stringify(listed));
        else if (listed.items.length === 0) console.log(slice.after ? `no inboxes after ${slice.after}` : "no inboxes");
        else
          printTable(
            ["ID", "NAME", "STATUS", "CREATED", "LIMITS"],
            listed.items.map((r) => [r.id, r.name || "-", r.status, r.createdAt, shortLimits(r.limits)]),
          );
        if (!values.json && listed.nextAfter)
          console.error(`more inboxes follow: inboxd inbox list --after ${listed.nextAfter}`);
        return 0;
      }
      case "show": {
        const answer = await api<InboxRecord & { usage: InboxUsage }>("GET", path);
        print(answer, () => printShown(answer.body));
        return 0;
      }
      case "suspend":
      case "resume": {
        const answer = await api<InboxRecord>("PATCH", path, { status: action === "suspend" ? "suspended" : "active" });
        print(answer, () =>
          console.log(
            action === "suspend"
              ? `suspended inbox ${id}: every request to it is refused (403), its networks and live connections are let go, its data is kept (inboxd inbox resume ${id} serves it again)`
              : `resumed inbox ${id}: it is served again`,
          ),
        );
        return 0;
      }
      case "limits": {
        const current = await api<InboxRecord & { usage: InboxUsage }>("GET", path);
        if (Object.keys(limits).length === 0) {
          print(current, () => console.log(`limits of inbox ${id}: ${limitText(current.body.limits)}`));
          return 0;
        }
        // PATCH replaces the whole set: the ones not given go back as they were.
        const answer = await api<InboxRecord>("PATCH", path, { limits: withChanges(current.body.limits, limits) });
        print(answer, () => console.log(`limits of inbox ${id}: ${limitText(answer.body.limits)}`));
        return 0;
      }
      case "sign-in-link": {
        const answer = await api<Link>("POST", `${path}/sign-in-links`);
        print(answer, () => printLink(id!, answer.body));
        return 0;
      }
      case "relay": {
        if (values.off) {
          const answer = await api<InboxRecord>("DELETE", `${path}/relay`);
          print(answer, () => console.log(`inbox ${id} no longer relays: it serves the data the Worker holds for it`));
          return 0;
        }
        const answer = await api<InboxRecord & { relaySecret: string }>("POST", `${path}/relay`);
        print(answer, () => {
          console.error(
            `Inbox ${id} now relays to its person's daemon. Give them this pairing secret, shown only once (a new one ` +
              `replaces it); on their machine: INBOXD_RELAY_SECRET=<the secret> inboxd serve --relay ${new URL((values.url ?? env.INBOXD_OPERATOR_URL)!).origin}`,
          );
          console.log(answer.body.relaySecret);
        });
        return 0;
      }
      case "delete": {
        if (!values.yes) {
          // Said with what the inbox holds, so the operator sees what --yes would delete.
          const shown = (await api<InboxRecord & { usage: InboxUsage }>("GET", path)).body;
          const u = shown.usage;
          throw new UsageError(
            `inbox delete deletes the inbox's storage and assets, for good: inbox ${describe(shown)}, ` +
              `${count(u.accounts, "account")}, ${count(u.chats, "chat")}, ${count(u.messages, "message")}, ` +
              `${humanBytes(u.storageBytes)} of storage, its tokens and its files; add --yes` +
              (env.npm_lifecycle_event && env.npm_config_yes
                ? " (under npm run, after a --: before it, npm takes --yes for itself)"
                : ""),
            false,
          );
        }
        const answer = await api<{ id: string; deleted: boolean; assetsDeleted: number }>("DELETE", path);
        print(answer, () =>
          console.log(`deleted inbox ${id}: its storage and ${count(answer.body.assetsDeleted, "asset")}`),
        );
        return 0;
      }
    }
  } catch (error) {
    if (error instanceof Failure) {
      console.error(`inboxd: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

const isAction = (name: string | undefined): name is Action => ACTIONS.includes(name as Action);

/**
 * The inboxes after `after` (from the first), at most `limit` of them (all by default), read page by page as the
 * admin API answers them; `nextAfter` says where the rest begins when `limit` stopped short of them.
 */
export async function listInboxes(
  api: Api,
  {
    limit = Number.POSITIVE_INFINITY,
    after,
    pageSize = PAGE_MOST,
  }: { limit?: number; after?: string; pageSize?: number },
): Promise<Page> {
  const items: InboxRecord[] = [];
  let cursor = after;
  for (;;) {
    const want = Math.min(pageSize, limit - items.length);
    const query = new URLSearchParams({ limit: String(want), ...(cursor ? { after: cursor } : {}) });
    const page = (await api<Page>("GET", `${BASE}?${query}`)).body;
    if (typeof page.hasMore !== "boolean" || !Array.isArray(page.items))
      throw new Failure(
        "the Worker answered the list without pages (no hasMore): it runs an older inboxd, so deploy this version to it",
      );
    items.push(...page.items.slice(0, want));
    if (!page.hasMore) return { items, hasMore: false };
    // IDs come in order: a page that does not move past the last one would be read again and again.
    if (!page.nextAfter || (cursor !== undefined && page.nextAfter <= cursor))
      throw new Failure(
        `the Worker's list did not move on after ${cursor ?? "the start"} (nextAfter ${page.nextAfter})`,
      );
    cursor = page.nextAfter;
    if (items.length >= limit) return { items, hasMore: true, nextAfter: cursor };
  }
}

/** `list --limit N --after ID`, checked. */
function parseSlice(values: InboxFlags): { limit?: number; after?: string } {
  const slice: { limit?: number; after?: string } = {};
  if (values.limit !== undefined) {
    if (!/^\d{1,9}$/.test(values.limit) || Number(values.limit) < 1)
      throw new UsageError(
        `--limit is how many inboxes to list, a whole number from 1, got ${JSON.stringify(values.limit)}`,
      );
    slice.limit = Number(values.limit);
  }
  if (values.after !== undefined) {
    if (!INBOX_ID_PATTERN.test(values.after))
      throw new UsageError(
        `--after takes an inbox ID (list from the inbox after it), got ${JSON.stringify(values.after)}`,
      );
    slice.after = values.after;
  }
  return slice;
}

/**
 * Where the Worker is and what proves the operator: --url (or INBOXD_OPERATOR_URL) and INBOXD_OPERATOR_TOKEN. The
 * token is never a flag: it would land in shell history and in the process list.
 */
function connect(values: InboxFlags, env: Record<string, string | undefined>) {
  if (values.token !== undefined)
    throw new UsageError(
      "the operator token is taken from INBOXD_OPERATOR_TOKEN only, never from a flag (it would land in shell history and the process list): export INBOXD_OPERATOR_TOKEN, and remove the command holding it from your history",
      false,
    );
  const raw = values.url ?? env.INBOXD_OPERATOR_URL;
  const where = values.url !== undefined ? "--url" : "INBOXD_OPERATOR_URL";
  if (!raw)
    throw new UsageError(
      "inbox needs the Worker's address: --url https://… or INBOXD_OPERATOR_URL, e.g. https://inboxd.example.net",
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${where} must be a URL such as https://inboxd.example.net, got ${raw}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new UsageError(`${where} must be an https:// URL, got ${raw}`);
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname))
    throw new UsageError(
      `${where} is http:// to ${url.hostname}, which would send the operator token in clear: use https://, or http:// only to a loopback address (wrangler dev)`,
    );
  if (url.pathname !== "/" || url.search || url.hash)
    throw new UsageError(
      `${where} is the Worker's origin alone (the admin API is at its ${BASE}), e.g. ${url.origin}; got ${raw}`,
    );
  const token = env.INBOXD_OPERATOR_TOKEN;
  if (!token)
    throw new UsageError(
      "set INBOXD_OPERATOR_TOKEN to the Worker's operator token (its secret INBOXD_OPERATOR_TOKEN; wrangler secret put INBOXD_OPERATOR_TOKEN sets it there): it is taken from the environment only, never from a flag",
      false,
    );
  const origin = url.origin;
  return async <T>(method: string, path: string, body?: unknown): Promise<Answer<T>> => {
    const asked = `${method} ${path}`;
    let response: Response;
    try {
      response = await fetch(origin + path, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        // A redirect is not followed: the token would go along to wherever it points.
        redirect: "manual",
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      const e = error as Error & { cause?: { code?: string; message?: string } };
      if (e.name === "TimeoutError")
        throw new Failure(
          `no answer from ${origin} to ${asked} within ${TIMEOUT_MS / 1000} s (it may still have been done: inboxd inbox list shows what is there)`,
        );
      throw new Failure(`could not reach ${origin} (${asked}): ${e.cause?.code ?? e.cause?.message ?? e.message}`);
    }
    const text = await response.text();
    if (response.status >= 300 && response.status < 400)
      throw new Failure(
        `${origin} answered ${asked} with a redirect (${response.status}) to ${response.headers.get("location") ?? "nowhere"}: give --url the address it redirects to`,
      );
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    // The single-device inbox's API answers /admin/ like any other path: with its own 401 or 404.
    if (response.headers.has("x-beeper-desktop-version"))
      throw new Failure(
        `${origin} answered ${asked} (${response.status}) as a single inbox, not the admin API: it is there only on a Worker deployed with INBOXD_TENANCY=multi`,
      );
    if (typeof json !== "object" || json === null)
      throw new Failure(
        `${origin} answered ${asked} with ${response.status} and ${response.headers.get("content-type") ?? "no content type"}, not the admin API's JSON: is it an inboxd Worker (INBOXD_TENANCY=multi)?`,
      );
    if (!response.ok) {
      const { code, message } = json as { code?: string; message?: string };
      throw new Failure(
        `${origin} refused ${asked}: ${response.status}${code ? ` ${code}` : ""}: ${message ?? "no message"}`,
      );
    }
    return { body: json as T, text };
  };
}

/** The limit flags given: a number each, or null for `none` (remove that limit). */
function parseLimits(values: InboxFlags): Partial<Record<keyof InboxLimits, number | null>> {
  const out: Partial<Record<keyof InboxLimits, number | null>> = {};
  for (const flag of LIMIT_FLAGS) {
    const raw = values[flag];
    if (raw === undefined) continue;
    const value = raw.trim().toLowerCase();
    out[LIMIT_KEYS[flag]] =
      value === "none"
        ? null
        : flag === "max-storage-bytes"
          ? parseBytes(raw)
          : parseNumber(flag, raw, flag === "max-accounts");
  }
  return out;
}

function parseNumber(flag: LimitFlag, raw: string, integer: boolean): number {
  const n = raw.trim() === "" ? Number.NaN : Number(raw);
  if (!Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n)))
    throw new UsageError(`--${flag} must be ${integer ? "a whole number" : "a number"} ≥ 0, or none, got ${raw}`);
  return n;
}

const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** Bytes, alone or with a unit: 500000, 500kB, 1.5GB, 2GiB. */
function parseBytes(raw: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw);
  const unit = UNITS[(match?.[2] || "b").toLowerCase()];
  const n = match && unit ? Math.round(Number(match[1]) * unit) : Number.NaN;
  if (!Number.isSafeInteger(n))
    throw new UsageError(
      `--max-storage-bytes must be bytes (a whole number, or with a unit: 500MB, 2GiB), or none, got ${raw}`,
    );
  return n;
}

/** `current` with the given limits set, and those given as null (none) removed. */
function withChanges(current: InboxLimits, changes: Partial<Record<keyof InboxLimits, number | null>>): InboxLimits {
  const next: Record<string, number> = { ...current };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next as InboxLimits;
}

/** `alice ("Alice")`, or the ID alone. */
const describe = (record: InboxRecord) => (record.name ? `${record.id} (${JSON.stringify(record.name)})` : record.id);

function limitText(limits: InboxLimits): string {
  const parts: string[] = [];
  if (limits.maxAccounts !== undefined) parts.push(`at most ${count(limits.maxAccounts, "account")}`);
  if (limits.maxStorageBytes !== undefined) parts.push(`at most ${humanBytes(limits.maxStorageBytes)} of storage`);
  if (limits.requestsPerSecond !== undefined)
    parts.push(
      limits.requestsPerSecond === 0
        ? "no rate limit"
        : `${limits.requestsPerSecond} requests/s per token (bursts of ${limits.requestsPerSecond * 4})`,
    );
  return parts.length ? parts.join(", ") : "none (the deployment's rate limit applies)";
}

/** The limits in a table cell: `accounts ≤ 3, storage ≤ 50.0 MB, 10 req/s`, or `-`. */
function shortLimits(limits: InboxLimits): string {
  const parts: string[] = [];
  if (limits.maxAccounts !== undefined) parts.push(`accounts ≤ ${limits.maxAccounts}`);
  if (limits.maxStorageBytes !== undefined) parts.push(`storage ≤ ${humanBytes(limits.maxStorageBytes)}`);
  if (limits.requestsPerSecond !== undefined)
    parts.push(limits.requestsPerSecond === 0 ? "no rate limit" : `${limits.requestsPerSecond} req/s`);
  return parts.length ? parts.join(", ") : "-";
}

function printLink(id: string, link: Link) {
  const minutes = Math.max(0, Math.round((Date.parse(link.expiresAt) - Date.now()) / 60_000));
  console.error(
    `Send this sign-in link to the person inbox ${id} is for: it signs their browser in as the inbox's owner.\n` +
      `It works once, until ${link.expiresAt} (in ${count(minutes, "minute")}); inboxd inbox sign-in-link ${id} makes another:`,
  );
  console.log(link.url);
}

function printShown(shown: InboxRecord & { usage: InboxUsage }) {
  const { usage: u, limits } = shown;
  const of = (limit: number | undefined, text: (n: number) => string, used: number) =>
    limit === undefined ? "" : ` of ${text(limit)} (${limit === 0 ? "full" : `${Math.floor((100 * used) / limit)} %`})`;
  const rows: [string, string][] = [
    ["ID", shown.id],
    ["Name", shown.name || "-"],
    ["Status", shown.status],
    ["Created", shown.createdAt],
    ...(shown.adopted ? [["Adopted", "yes: the single-device deployment's inbox"] as [string, string]] : []),
    ...(shown.relay
      ? [["Relay", `fronts the person's own daemon, paired ${shown.relay.since}`] as [string, string]]
      : []),
    ["Limits", limitText(limits)],
    ["Accounts", `${u.accounts}${of(limits.maxAccounts, String, u.accounts)}`],
    ["Chats", `${u.chats}`],
    ["Messages", `${u.messages}`],
    [
      "Storage",
      `${humanBytes(u.storageBytes)} (${u.storageBytes} bytes)${of(limits.maxStorageBytes, humanBytes, u.storageBytes)}`,
    ],
    ["Requests", `${u.requests} since it was created`],
  ];
  const width = Math.max(...rows.map(([key]) => key.length));
  for (const [key, value] of rows) console.log(`${`${key}:`.padEnd(width + 1)}  ${value}`);
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** Bytes in decimal units, to one decimal: 812 bytes, 1.2 MB, 3.0 GB. */
export function humanBytes(bytes: number): string {
  if (bytes < 1000) return count(bytes, "byte");
  const units = ["kB", "MB", "GB", "TB", "PB", "EB"];
  let value = bytes;
  let unit = -1;
  while (value >= 999.95 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
