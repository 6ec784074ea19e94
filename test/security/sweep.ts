/**
 * The auth sweep (issue 12 §3): a security suite that cannot forget a route. The list of what is swept is not
 * written here: it is `app.operations`, the route table the app itself registers (src/http/route-kit.ts), read from
 * an app built in memory the way test/fuzz/routes.ts does — so a route added later is swept without anyone
 * remembering it. Every operation (/v1, /v0, MCP, assets, /v1/spec, bridges, webhooks, and whatever comes next) is
 * sent, against a real running server holding a seeded dataset:
 *
 * - no token → 401 with `WWW-Authenticate: Bearer…`; public operations (scope "public") answer without one (not 401)
 *   and are listed in the output;
 * - garbage, wrong-scheme, over-long and well-formed-but-unknown tokens, the read+write token in the query string
 *   instead of the header, and expired and revoked tokens, minted as the runtime issues them (the daemon: in its
 *   store, as `inboxd token create` does; the Worker: through OAuth, as an app gets them) → 401;
 * - the read-only token: every write operation → 403 FORBIDDEN, every read operation → neither 401 nor 403;
 * - cross-site: `Host: evil.example` (DNS rebinding; the daemon only — the Worker answers any host by design),
 *   `Origin: https://evil.example` (the daemon only, for the same reason), `Origin: null` and
 *   `Sec-Fetch-Site: cross-site` (both) → 403, public operations included;
 * - no 401/403 answer (body or headers), and no answer of a public operation to a caller without a valid token,
 *   contains any of the device's data: distinctive strings (account and user IDs, names, chat titles, message
 *   texts, an uploaded file's bytes, a webhook secret, an authorized app's name, token IDs) collected through
 *   authorized requests first.
 *
 * Path parameters are real IDs of the seeded data (so an auth bug cannot hide behind a 404: read operations must
 * find them) and, for every route that has any, also IDs that do not exist: a refusal must not depend on the
 * lookup. Write operations get a body that their own schema accepts (checked here), so a 400 cannot stand in for a
 * missing refusal, and the device must read the same after the sweep as before it (a 403 sent after the work was
 * done shows there). Beside the route table: the `/v1/ws` upgrade, and every MCP tool that writes, called with the
 * read-only token (the MCP endpoints take any token; each tool checks the scope).
 *
 * It cannot pass vacuously: fewer than MIN_OPERATIONS operations fail it (a broken import), the leak check must find
 * the device's data in an authorized answer, and read operations must return it. The counts of operations and
 * checks are printed at the end. sweep-node.test.ts and sweep-workerd.test.ts run it against their runtime.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { createStorage } from "unstorage";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import type { Operation } from "../../src/http/route-kit.ts";
import { parseQuery, validate } from "../../src/http/validate.ts";
import { enc, randomToken, sleep } from "../kit/common.ts";
import { connect, refusal, type ConnectOptions } from "../events/kit.ts";
import { approvedApp, Browser } from "../oauth/kit.ts";

/** Fewer operations than this means the route table was not read (a broken import), not that the app shrank. */
export const MIN_OPERATIONS = 70;
/** Requests in flight at once (the agent's socket pool). */
const CONCURRENCY = 8;
/** Client addresses the sweep's requests are spread over (see ClientAddress). */
const CLIENT_ADDRESSES = 128;
/** The token verifier remembers an answer for up to a second (src/services/tokens.ts). */
const TOKEN_CACHE_MS = 1000;
/**
 * Operations whose method changes state but whose declared scope is `read`: the MCP transports, where each tool
 * checks the token's scopes itself (swept below: "every MCP tool that writes…"). Another entry here is a decision
 * a reviewer must see, so the sweep fails until it is added.
 */
const READ_SCOPED_WRITES = ["POST /v0/mcp", "DELETE /v0/mcp", "POST /v0/sse/messages"];

export const SEED = { chats: 12, messages: 150, accounts: 2, seed: 12 };

type Scope = "read" | "write" | "public";
export interface SweptOperation {
  op: Operation;
  /** `METHOD /path` as registered. */
  name: string;
  scope: Scope;
  params: string[];
}

/** Every operation of an app built in memory (the daemon and the Worker build the same table). */
export async function sweptOperations(): Promise<SweptOperation[]> {
  const app = await createApp({ storage: createStorage() });
  await app.close();
  // HEAD is answered wherever GET is (RFC 9110), so it is swept as an operation of its own, with GET's scope.
  const names = new Set(app.operations.map((op) => `${op.method} ${op.path}`));
  const heads = app.operations
    .filter((op) => op.method === "GET" && !names.has(`HEAD ${op.path}`))
    .map((op): Operation => ({ ...op, method: "HEAD" }));
  return [...app.operations, ...heads].map((op) => ({
    op,
    name: `${op.method} ${op.path}`,
    // The rule of route-kit.ts, stated again here on purpose: the sweep must not take its expectation from the code it checks.
    scope: op.scope ?? (op.method === "GET" || op.method === "HEAD" ? "read" : "write"),
    params: [...op.path.matchAll(/:(\w+)/g)].map((m) => m[1]),
  }));
}

// ---------------------------------------------------------------------------------------------------------------
// The runtimes

/** How long the sweep's expiring tokens work (the Worker's INBOXD_TOKEN_TTL for the OAuth tokens it issues). */
export const EXPIRING_TOKEN_SECONDS = 3;

/** A read+write token minted for the sweep, and its ID as GET /v1/tokens lists it. */
export interface Minted {
  token: string;
  id: string;
}

/**
 * Tokens that stop working, minted the way the runtime issues tokens: the daemon in its SQLite file (opened beside
 * the running server, as `inboxd token create|revoke` do), the Worker through OAuth.
 */
export interface TokenStore {
  /** A token that works longer than the sweep runs unless it is revoked: minted before the sweep's setup. */
  lasting: Minted;
  /** Mints a token that stops working at `expiresAt` (ms since 1970), EXPIRING_TOKEN_SECONDS after it is minted. */
  expiring(name: string): Promise<Minted & { expiresAt: number }>;
  /** Revokes a token as its owner would; throws unless exactly that token was revoked. */
  revoke(id: string): Promise<void>;
}

export interface SweepServer {
  url: string;
  stop(): Promise<void>;
  tokens: TokenStore;
}

/**
 * Where a request comes from, as the server's failed-authentication throttle sees it (src/http/rate-limit.ts: 30
 * failures a minute per client address). The sweep makes hundreds of failed attempts on purpose, so it spreads them
 * over many client addresses — the daemon's TCP peer (a loopback source address), the Worker's CF-Connecting-IP
 * (which Miniflare, unlike Cloudflare's edge, takes from the client) — and the 401s under test stay 401s instead of
 * 429s, with the limiter as it is configured in production. The per-token budget (bursts of 200) is not spread:
 * the read-only token makes about a hundred authorized requests.
 */
export interface ClientAddress {
  localAddress?: string;
  headers?: Record<string, string>;
}

export interface Runtime {
  name: string;
  /** The n-th client address (see ClientAddress). */
  from(n: number): ClientAddress;
  start(options: {
    seed: typeof SEED;
    tokens: { token: string; scopes: ("read" | "write")[] }[];
  }): Promise<SweepServer>;
  /** The daemon answers loopback host names only; the Worker any (allowedHosts "*"), so foreign Host/Origin pass there. */
  loopbackOnly: boolean;
  /**
   * Whether the OAuth discovery documents are readable cross-origin (remote access: the Worker, which is reached
   * remotely by nature; the daemon only with --remote-access). Those two are then swept for CORS instead.
   */
  discoveryCrossOrigin: boolean;
}

const DISCOVERY = ["/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource"];

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP (node:http: it sends the Host header it is given, and an event stream can be dropped after its headers)

export interface Sent {
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  body?: string;
}
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export function send(agent: Agent, base: string, req: Sent, from: ClientAddress = {}): Promise<Answer> {
  const url = new URL(base + req.path);
  const headers = {
    ...from.headers,
    ...req.headers,
    ...(req.body !== undefined ? { "content-length": String(Buffer.byteLength(req.body)) } : {}),
  };
  return new Promise((resolve, reject) => {
    const r = httpRequest(
      {
        agent,
        host: url.hostname,
        port: url.port,
        localAddress: from.localAddress,
        path: url.pathname + url.search,
        method: req.method,
        headers,
      },
      (res) => {
        const answer = { status: res.statusCode ?? 0, headers: res.headers, text: "" };
        // An event stream (GET /v0/sse) never ends: its status and headers are the answer.
        if (String(res.headers["content-type"]).includes("text/event-stream")) {
          res.destroy();
          return resolve(answer);
        }
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          answer.text += chunk;
          if (answer.text.length > 8 * 1024 * 1024) res.destroy();
        });
        res.on("end", () => resolve(answer));
        res.on("close", () => resolve(answer));
        res.on("error", () => resolve(answer));
      },
    );
    r.setTimeout(15_000, () => r.destroy(new Error(`no answer to ${req.method} ${req.path} within 15 s`)));
    r.on("error", reject);
    r.end(req.body);
  });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const shown = (req: Sent, a: Answer) =>
  `${req.method} ${req.path} ${JSON.stringify(req.headers).slice(0, 160)} → ${a.status} ${a.text.slice(0, 200)}`;
const codeOf = (a: Answer): string | undefined => {
  try {
    return (JSON.parse(a.text) as { code?: string }).code;
  } catch {
    return undefined;
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Inputs: real IDs, and values the operations' own schemas accept

/** Real IDs of the seeded device, by path/query/body parameter name. */
type Ids = Record<string, string>;

type Node = {
  type: string;
  entries?: Record<string, Node>;
  wrapped?: Node;
  options?: unknown[];
  item?: Node;
  literal?: unknown;
};
const OPTIONAL = ["optional", "nullish", "exact_optional"];
const WRAPPERS = [...OPTIONAL, "nullable", "non_optional", "non_nullable", "non_nullish"];
const accepts = (schema: unknown, value: unknown) => v.safeParse(schema as v.GenericSchema, value).success;

/** The real ID for a field name (`chatID`, `chatIDs`, `participantIDs`…), if the device has one of that kind. */
function idFor(key: string, ids: Ids): string | undefined {
  if (ids[key] !== undefined) return ids[key];
  const singular = key.replace(/s$/, "");
  if (ids[singular] !== undefined) return ids[singular];
  if (/participant|user/i.test(key)) return ids.userID;
  if (/url$/i.test(key)) return ids.url;
  return undefined;
}

/**
 * A small value the schema accepts: required fields only (optional ones added one by one while the object is still
 * refused), the first option of a choice that works, real IDs where the field names one, otherwise the first of a
 * few plain candidates the schema takes. Whether it is accepted is checked by the caller.
 */
function plausible(schema: unknown, ids: Ids, key = ""): unknown {
  const s = schema as Node;
  if (WRAPPERS.includes(s.type) && s.wrapped) return plausible(s.wrapped, ids, key);
  switch (s.type) {
    case "object":
    case "strict_object":
    case "loose_object": {
      const out: Record<string, unknown> = {};
      const optional: [string, Node][] = [];
      for (const [k, child] of Object.entries(s.entries ?? {})) {
        if (OPTIONAL.includes(child.type)) optional.push([k, child]);
        else out[k] = plausible(child, ids, k);
      }
      for (const [k, child] of optional) {
        if (accepts(s, out)) break;
        out[k] = plausible(child, ids, k);
      }
      return out;
    }
    case "variant":
    case "union": {
      const tries = (s.options as Node[]).map((o) => plausible(o, ids, key));
      return tries.find((t, i) => accepts((s.options as Node[])[i], t)) ?? tries[0];
    }
    case "picklist":
    case "enum":
      return s.options?.[0];
    case "literal":
      return s.literal;
    case "array": {
      const one = [plausible(s.item, ids, key)];
      return accepts(s, []) ? [] : one;
    }
    case "boolean":
      return false;
    case "record":
    case "unknown":
    case "any":
      return {};
  }
  const candidates = [
    idFor(key, ids),
    "sweep",
    "1",
    new Date(Date.now() + 3_600_000).toISOString(),
    "text/plain",
    "c3dlZXA=",
    Date.now() + 3_600_000,
    1,
    0,
  ];
  return candidates.find((c) => c !== undefined && accepts(s, c)) ?? "sweep";
}

/** The query string of a value (arrays repeat the key, as the SDKs send them). */
function queryString(value: Record<string, unknown>): string {
  const parts = Object.entries(value).flatMap(([k, x]) =>
    (Array.isArray(x) ? x : [x]).map((item) => `${enc(k)}=${enc(String(item))}`),
  );
  return parts.length ? `?${parts.join("&")}` : "";
}

const MULTIPART_BOUNDARY = "sweepb0undary";
const multipart = (text: string) =>
  `--${MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="sweep.txt"\r\nContent-Type: text/plain\r\n\r\n${text}\r\n--${MULTIPART_BOUNDARY}--\r\n`;

/** One request per operation, with real or missing IDs; `problem` says why its input would not validate. */
export interface Planned {
  path: string;
  /** Same, with every path parameter an ID that does not exist (undefined: the route has no parameter). */
  missingPath?: string;
  headers: Record<string, string>;
  body?: string;
  problem?: string;
}

export function plan(s: SweptOperation, ids: Ids): Planned {
  const { op } = s;
  const fill = (values: (name: string) => string) => op.path.replace(/:(\w+)/g, (_, name: string) => enc(values(name)));
  const headers: Record<string, string> = { accept: "application/json" };
  let query = "";
  let body: string | undefined;
  const problems: string[] = [];
  if (op.query) {
    const value = plausible(op.query, ids) as Record<string, unknown>;
    query = queryString(value);
    try {
      validate("query", op.query, parseQuery(new URL(`http://x/${query}`)));
    } catch (error) {
      problems.push(`query ${query}: ${(error as Error).message}`);
    }
  }
  if (op.body) {
    const value = plausible(op.body, ids);
    const result = v.safeParse(op.body, value);
    if (!result.success)
      problems.push(`body ${JSON.stringify(value)}: ${result.issues.map((i) => i.message).join("; ")}`);
    body = JSON.stringify(value);
    headers["content-type"] = "application/json";
  } else if (op.requestBody?.content["multipart/form-data"] !== undefined) {
    body = multipart("sweep upload");
    headers["content-type"] = `multipart/form-data; boundary=${MULTIPART_BOUNDARY}`;
  } else if (op.requestBody?.content["application/json"] !== undefined) {
    body = "{}";
    headers["content-type"] = "application/json";
  }
  const unknownParams = s.params.filter((p) => ids[p] === undefined);
  if (unknownParams.length)
    problems.push(`no real ID for the path parameter(s) ${unknownParams.join(", ")}: add them to the sweep's setup`);
  return {
    path: fill((name) => ids[name] ?? `sweep-${name}`) + query,
    missingPath: s.params.length ? fill((name) => `sweep-missing-${name}`) + query : undefined,
    headers,
    body,
    problem: problems.length ? problems.join(" | ") : undefined,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The device's data, to look for in refusals

export interface Device {
  ids: Ids;
  /** Distinctive strings of the device's data. */
  needles: string[];
  /** How many of each kind, to show that there is data to leak. */
  kinds: Record<string, number>;
}

/** The device's data in `text`, leaving out what the request itself carried (an ID in its path is not a leak). */
export function leaked(device: Device, req: Sent, a: Answer): string[] {
  const asked = `${decodeURIComponent(req.path)} ${req.body ?? ""} ${JSON.stringify(req.headers)}`;
  const answered = `${a.text}\n${JSON.stringify(a.headers)}`;
  return device.needles.filter((n) => answered.includes(n) && !asked.includes(n));
}

/**
 * An OAuth app the owner approved, through the real consent page (the owner signs in with the read+write token
 * `rw`): its client ID and the read+write access token it was given. What the token and authorized-app operations
 * are swept with, and how the Worker's expiring and revoked tokens are minted.
 */
export async function authorizeApp(
  url: string,
  rw: string,
  name: string,
): Promise<{ clientID: string; token: string }> {
  const { clientID, token } = await approvedApp(new Browser(url), name, "read write", {
    signIn: rw,
    redirectURI: "http://127.0.0.1:9/sweep-callback",
  });
  return { clientID, token };
}

/**
 * Seeds what the seed has not (an upload, a label, a login session, a reaction, a webhook, an authorized OAuth app)
 * and collects the data.
 */
export async function collect(
  ask: (req: Sent) => Promise<Answer>,
  rw: string,
  url: string,
  /** How an app gets approved (default: the owner signs in with `rw`; an inbox of many signs in by its link). */
  approveApp: (name: string) => Promise<{ clientID: string }> = (name) => authorizeApp(url, rw, name),
): Promise<Device> {
  const call = async <T = any>(method: string, path: string, json?: unknown): Promise<T> => {
    const req: Sent = {
      method,
      path,
      headers: {
        ...bearer(rw),
        accept: "application/json",
        ...(json !== undefined ? { "content-type": "application/json" } : {}),
      },
      body: json === undefined ? undefined : JSON.stringify(json),
    };
    const a = await ask(req);
    if (a.status !== 200) throw new Error(`setup: ${shown(req, a)}`);
    return JSON.parse(a.text) as T;
  };
  const kinds: Record<string, string[]> = { account: [], user: [], title: [], text: [], secret: [], app: [] };
  const accounts = await call<
    { accountID: string; loginID: string; bridge: { id: string }; user: { id: string; fullName?: string } }[]
  >("GET", "/v1/accounts");
  for (const a of accounts) {
    kinds.account.push(a.accountID, a.loginID);
    kinds.user.push(a.user.id, a.user.fullName ?? "");
  }
  const chats = (
    await call<{
      items: {
        id: string;
        title: string;
        participants: { items: { id: string; fullName?: string; isSelf?: boolean }[] };
      }[];
    }>("GET", "/v1/chats")
  ).items;
  for (const c of chats) {
    kinds.title.push(c.title);
    for (const p of c.participants.items) kinds.user.push(p.id, p.fullName ?? "");
  }
  let chatID = "";
  let messageID = "";
  for (const c of chats.slice(0, 8)) {
    const messages = (await call<{ items: { id: string; text?: string }[] }>("GET", `/v1/chats/${enc(c.id)}/messages`))
      .items;
    for (const m of messages) kinds.text.push(m.text ?? "");
    if (!messageID && messages.length && c.participants.items.some((p) => !p.isSelf && !p.id.startsWith("@echo")))
      [chatID, messageID] = [c.id, messages[0].id];
  }
  const chat = chats.find((c) => c.id === chatID)!;
  const userID = chat.participants.items.find((p) => !p.isSelf)!.id;
  const secretBytes = `sweep-secret-file-${randomToken("f")}`;
  kinds.secret.push(secretBytes);
  const upload = await call<{ uploadID: string; srcURL: string }>("POST", "/v1/assets/upload/base64", {
    content: Buffer.from(secretBytes).toString("base64"),
    fileName: "sweep.txt",
  });
  const label = await call<{ id: string; name: string }>("POST", "/v1/labels", {
    name: `sweep label ${randomToken("l")}`,
  });
  kinds.title.push(label.name);
  const bridgeID = accounts[0].bridge.id;
  const session = await call<{ loginSessionID: string; currentStep: { stepID: string } }>(
    "POST",
    `/v1/bridges/${enc(bridgeID)}/login-sessions`,
    {},
  );
  const reactionKey = "👍";
  await call("POST", `/v1/chats/${enc(chatID)}/messages/${enc(messageID)}/reactions`, { reactionKey });
  const appName = `sweep app ${randomToken("a")}`;
  const { clientID } = await approveApp(appName);
  const tokens = (await call<{ items: { id: string; current: boolean }[] }>("GET", "/v1/tokens")).items;
  kinds.app.push(appName, ...tokens.map((t) => t.id));
  // The web inbox's page names its assets (content-hashed, so only the page knows them).
  const page = await ask({ method: "GET", path: "/", headers: { accept: "text/html" } });
  const file = /"\/web\/([^"/?]+)"/.exec(page.text)?.[1];
  // Last, so that no event of the setup is queued for it (its URL is a closed port).
  const webhook = await call<{ id: string; secret: string }>("POST", "/v1/webhooks", {
    url: "http://127.0.0.1:9/sweep",
  });
  kinds.secret.push(webhook.secret);
  const ids: Ids = {
    accountID: accounts[0].accountID,
    chatID,
    messageID,
    userID,
    reactionKey,
    bridgeID,
    loginID: accounts[0].loginID,
    sessionID: session.loginSessionID,
    stepID: session.currentStep.stepID,
    id: webhook.id,
    labelID: label.id,
    url: upload.srcURL,
    uploadID: upload.uploadID,
    // The sweep's own read+write token: a refused revocation of it would show at once.
    tokenID: tokens.find((t) => t.current)!.id,
    clientID,
    ...(file ? { file } : {}),
  };
  // Short or common strings ("Echo", "hi") are not evidence of anything; these are.
  const distinctive = (s: string) => s.length >= 8;
  const needles = [...new Set(Object.values(kinds).flat().filter(distinctive))];
  return {
    ids,
    needles,
    kinds: Object.fromEntries(Object.entries(kinds).map(([k, list]) => [k, new Set(list.filter(distinctive)).size])),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The suite

/** One request of the sweep and what its answer must be; a returned string is a failure. */
interface Check {
  what: string;
  req: Sent;
  judge(a: Answer): string | undefined;
  /** Whether the answer must hold none of the device's data. */
  refusal: boolean;
}

/** A 429 stands in for the answer under test: say so rather than "wanted 401". */
const rateLimited = (a: Answer) =>
  a.status === 429 ? "429: rate-limited, so the answer under test is unknown (see ClientAddress)" : undefined;
const expectStatus = (status: number, code?: string) => (a: Answer) => {
  if (a.status !== status) return rateLimited(a) ?? `wanted ${status}`;
  if (status === 401 && !/^Bearer\b/i.test(String(a.headers["www-authenticate"] ?? "")))
    return `401 without WWW-Authenticate: Bearer… (got ${JSON.stringify(a.headers["www-authenticate"])})`;
  const got = codeOf(a);
  if (code !== undefined && got !== code) return `wanted code ${code}, got ${got}`;
  return undefined;
};
const notRefused = (a: Answer) =>
  rateLimited(a) ?? (a.status === 401 || a.status === 403 ? "wanted neither 401 nor 403" : undefined);
const not401 = (a: Answer) => (a.status === 401 ? "wanted not 401" : undefined);

export function authSweep(runtime: Runtime, operations: SweptOperation[]) {
  describe(`auth sweep on ${runtime.name}`, () => {
    const rw = randomToken("rw");
    const ro = randomToken("ro");
    // No keep-alive: requests come from many source addresses (see ClientAddress), each its own connection.
    const agent = new Agent({ keepAlive: false, maxTotalSockets: CONCURRENCY });
    let sent = 0;
    const from = () => runtime.from(sent++ % CLIENT_ADDRESSES);
    const ask = (req: Sent) => send(agent, server.url, req, from());
    /** WebSocket client options from the next client address. */
    const wsFrom = (options: ConnectOptions): ConnectOptions => {
      const o = from();
      return { ...options, headers: { ...o.headers, ...options.headers }, wsOptions: { localAddress: o.localAddress } };
    };
    let server: SweepServer;
    let device: Device;
    const planned = new Map<string, Planned>();
    /** Tokens that were valid and no longer are. */
    const dead: { what: string; token: string }[] = [];
    /** Route checks made, by kind. */
    const ran = new Map<string, number>();
    const roReads: { name: string; status: number; data: boolean }[] = [];

    async function runChecks(checks: Check[]): Promise<string[]> {
      const failures: string[] = [];
      await Promise.all(
        checks.map(async (c) => {
          const a = await ask(c.req);
          ran.set(c.what, (ran.get(c.what) ?? 0) + 1);
          const verdict = c.judge(a);
          if (verdict) failures.push(`${c.what}: ${verdict}: ${shown(c.req, a)}`);
          if (c.refusal || a.status === 401 || a.status === 403) {
            const found = leaked(device, c.req, a);
            if (found.length)
              failures.push(
                `${c.what}: the answer holds the device's data ${JSON.stringify(found.slice(0, 3))}: ${shown(c.req, a)}`,
              );
          }
        }),
      );
      return failures.sort();
    }

    /**
     * Mints an expiring token and has it accepted once. A machine too slow to use it within its lifetime gets
     * another one (up to three): the sweep controls the lifetime, not how fast requests are answered.
     */
    async function usedWhileValid(store: TokenStore, name: string): Promise<Minted & { expiresAt: number }> {
      for (let attempt = 1; ; attempt++) {
        const minted = await store.expiring(name);
        const a = await ask({ method: "GET", path: "/v1/accounts", headers: bearer(minted.token) });
        if (a.status === 200) return minted;
        if (Date.now() < minted.expiresAt)
          throw new Error(
            `a fresh token was refused (${a.status}) before it expired: the tokens the sweep mints are not the server's`,
          );
        if (attempt === 3)
          throw new Error(
            `three tokens that work for ${EXPIRING_TOKEN_SECONDS} s each expired before one request could be answered`,
          );
      }
    }

    /**
     * What the refused writes would have changed (every write of the sweep targets these IDs), read with the
     * read+write token: a refusal that comes after the work (a 403 once the message is sent) shows here.
     */
    let before: Record<string, unknown>;
    async function snapshot(): Promise<Record<string, unknown>> {
      const { chatID, bridgeID, sessionID } = device.ids;
      const paths = [
        "/v1/accounts",
        "/v1/chats",
        `/v1/chats/${enc(chatID)}`,
        `/v1/chats/${enc(chatID)}/messages`,
        "/v1/labels",
        "/v1/webhooks",
        `/v1/bridges/${enc(bridgeID)}/logins`,
        `/v1/bridges/${enc(bridgeID)}/login-sessions/${enc(sessionID)}`,
        "/v1/tokens",
        "/v1/authorized-apps",
      ];
      const out: Record<string, unknown> = {};
      for (const path of paths) {
        const a = await ask({ method: "GET", path, headers: bearer(rw) });
        out[path] = a.status === 200 ? JSON.parse(a.text) : a.status;
      }
      // A webhook's delivery counters move on their own (its receiver is a closed port): keep what a write could change.
      out["/v1/webhooks"] = (
        out["/v1/webhooks"] as { items: { id: string; url: string; chatIDs: string[] }[] }
      ).items.map(({ id, url, chatIDs }) => ({ id, url, chatIDs }));
      return out;
    }

    beforeAll(async () => {
      server = await runtime.start({
        seed: SEED,
        tokens: [
          { token: rw, scopes: ["read", "write"] },
          { token: ro, scopes: ["read"] },
        ],
      });
      device = await collect(ask, rw, server.url);
      for (const s of operations) planned.set(s.name, plan(s, device.ids));
      // Each is shown to work first (but the one expired before use), so a 401 later is the server's decision, not a
      // token that never was.
      const store = server.tokens;
      const revoked = store.lasting;
      const expiring = await usedWhileValid(store, "sweep-expiring");
      const expired = await store.expiring("sweep-expired");
      const works = await ask({ method: "GET", path: "/v1/accounts", headers: bearer(revoked.token) });
      if (works.status !== 200)
        throw new Error(`a fresh token was refused (${works.status}): the tokens the sweep mints are not the server's`);
      await store.revoke(revoked.id);
      // Past the verifier's memory of the revoked token (remembered as valid just now), and past both expiries.
      await sleep(Math.max(TOKEN_CACHE_MS, Math.max(expiring.expiresAt, expired.expiresAt) - Date.now()) + 100);
      dead.push(
        { what: "revoked token", token: revoked.token },
        { what: "token expired after use", token: expiring.token },
        { what: "token expired before use", token: expired.token },
      );
      before = await snapshot();
    });
    afterAll(async () => {
      await server?.stop();
      agent.destroy();
      const total = [...ran.values()].reduce((sum, n) => sum + n, 0);
      console.log(
        `auth sweep on ${runtime.name}: ${operations.length} operations × up to ${ran.size} kinds of check = ${total} route checks (${[...ran].map(([k, n]) => `${k} ×${n}`).join(", ")}), plus the /v1/ws upgrade and the MCP tools; ${sent} requests in all`,
      );
    });

    it(`reads at least ${MIN_OPERATIONS} operations from the app's route table, and lists the public ones and the read-scoped writes`, () => {
      const publics = operations.filter((s) => s.scope === "public").map((s) => s.name);
      const readWrites = operations
        .filter((s) => s.scope === "read" && s.op.method !== "GET" && s.op.method !== "HEAD")
        .map((s) => s.name);
      console.log(
        `${runtime.name}: ${operations.length} operations; public (answered without a token): ${publics.join(", ")}; read scope on a state-changing method: ${readWrites.join(", ")}`,
      );
      expect(operations.length).toBeGreaterThanOrEqual(MIN_OPERATIONS);
      for (const prefix of [
        "/v1/chats",
        "/v1/accounts",
        "/v0/",
        "/v0/mcp",
        "/v0/sse",
        "/v1/assets/serve",
        "/v1/spec",
        "/v1/bridges",
        "/v1/webhooks",
        "/v1/ws",
        "/v1/tokens",
        "/v1/authorized-apps",
      ])
        expect(
          operations.some((s) => s.op.path.startsWith(prefix)),
          `no operation under ${prefix}`,
        ).toBe(true);
      expect(
        readWrites.sort(),
        "a state-changing operation declared with the read scope (see READ_SCOPED_WRITES)",
      ).toEqual([...READ_SCOPED_WRITES].sort());
    });

    it("has device data to leak: authorized requests return the seeded data, and the read-only token sees it", async () => {
      console.log(
        `${runtime.name}: ${device.needles.length} distinctive strings of the device's data (${Object.entries(
          device.kinds,
        )
          .map(([k, n]) => `${n} ${k}`)
          .join(", ")})`,
      );
      expect(device.kinds.account).toBeGreaterThanOrEqual(2);
      expect(device.kinds.title).toBeGreaterThanOrEqual(5);
      expect(device.kinds.text).toBeGreaterThanOrEqual(10);
      expect(device.kinds.secret).toBe(2);
      const req: Sent = { method: "GET", path: "/v1/chats", headers: bearer(ro) };
      const a = await ask(req);
      expect(a.status).toBe(200);
      expect(
        leaked(device, req, a).length,
        "the read-only token's chat list holds none of the collected strings: the leak check would be blind",
      ).toBeGreaterThan(3);
    });

    describe(`every operation: 401 without a token or with a garbage, unknown, expired or revoked one; the read-only token 403 on writes, not refused on reads; 403 cross-site`, () => {
      for (const s of operations) {
        it(`${s.name} [${s.scope}]`, async () => {
          const p = planned.get(s.name)!;
          const checks: Check[] = [];
          const req = (headers: Record<string, string>, path = p.path): Sent => ({
            method: s.op.method,
            path,
            headers: { ...p.headers, ...headers },
            body: p.body,
          });
          // A HEAD answer has no body to read the error code from.
          const refused = (status: number, code?: string) => ({
            judge: expectStatus(status, s.op.method === "HEAD" ? undefined : code),
            refusal: true,
          });
          const isPublic = s.scope === "public";
          const bad: [string, Record<string, string>, string?][] = [
            ["no token", {}],
            ["garbage token", { authorization: "Bearer %%garbage%%" }],
            ["empty Bearer", { authorization: "Bearer " }],
            [
              "the read+write token as Basic credentials",
              { authorization: `Basic ${Buffer.from(`${rw}:`).toString("base64")}` },
            ],
            ["an over-long token", bearer(`inbx_${"a".repeat(4096)}`)],
            ["a well-formed unknown token", bearer(randomToken("inbx"))],
            [
              "the read+write token in the query string",
              {},
              `${p.path}${p.path.includes("?") ? "&" : "?"}access_token=${enc(rw)}&token=${enc(rw)}`,
            ],
            ...dead.map((d): [string, Record<string, string>] => [d.what, bearer(d.token)]),
          ];
          for (const [what, headers, path] of bad) {
            // A public operation answers without a token; with an invalid one it may refuse, but never with data.
            if (isPublic)
              checks.push({
                what,
                req: req(headers, path),
                judge: what === "no token" ? not401 : () => undefined,
                refusal: true,
              });
            else checks.push({ what, req: req(headers, path), ...refused(401, "UNAUTHORIZED") });
          }
          if (p.missingPath && !isPublic) {
            checks.push({
              what: "no token, missing IDs",
              req: req({}, p.missingPath),
              ...refused(401, "UNAUTHORIZED"),
            });
            checks.push({
              what: "a well-formed unknown token, missing IDs",
              req: req(bearer(randomToken("inbx")), p.missingPath),
              ...refused(401, "UNAUTHORIZED"),
            });
          }
          if (s.scope === "write") {
            checks.push({ what: "read-only token on a write", req: req(bearer(ro)), ...refused(403, "FORBIDDEN") });
            if (p.missingPath)
              checks.push({
                what: "read-only token on a write, missing IDs",
                req: req(bearer(ro), p.missingPath),
                ...refused(403, "FORBIDDEN"),
              });
          } else {
            checks.push({
              what: isPublic ? "read-only token on a public operation" : "read-only token on a read",
              req: req(bearer(ro)),
              refusal: false,
              judge: (a) => {
                roReads.push({ name: s.name, status: a.status, data: leaked(device, req(bearer(ro)), a).length > 0 });
                return isPublic ? not401(a) : notRefused(a);
              },
            });
            if (p.missingPath)
              checks.push({
                what: "read-only token on a read, missing IDs",
                req: req(bearer(ro), p.missingPath),
                refusal: false,
                judge: notRefused,
              });
          }
          const crossSite: [string, Record<string, string>, string][] = [
            ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }, "CROSS_SITE_REQUEST"],
            ["Origin: null", { origin: "null" }, "CROSS_SITE_REQUEST"],
          ];
          if (runtime.loopbackOnly)
            crossSite.push(
              ["Origin: https://evil.example", { origin: "https://evil.example" }, "CROSS_SITE_REQUEST"],
              ["Host: evil.example", { host: "evil.example" }, "HOST_NOT_ALLOWED"],
            );
          const readableCrossOrigin = runtime.discoveryCrossOrigin && DISCOVERY.includes(s.op.path);
          for (const [what, headers, code] of crossSite) {
            if (readableCrossOrigin && code !== "HOST_NOT_ALLOWED") {
              const cors = (a: Answer) =>
                a.status === 200 && a.headers["access-control-allow-origin"] === "*"
                  ? undefined
                  : "wanted 200 with access-control-allow-origin: *";
              checks.push({
                what: `${what}, a discovery document (readable cross-origin)`,
                req: req(headers),
                refusal: false,
                judge: cors,
              });
              continue;
            }
            checks.push({
              what: `${what}, read-only token`,
              req: req({ ...bearer(ro), ...headers }),
              ...refused(403, code),
            });
            if (isPublic) checks.push({ what: `${what}, no token`, req: req(headers), ...refused(403, code) });
          }
          // Only the discovery documents may be read cross-origin: every other answer lacks the header.
          if (!readableCrossOrigin)
            checks.push({
              what: "no CORS header",
              req: req({ ...bearer(ro), origin: "https://evil.example" }),
              refusal: false,
              judge: (a) =>
                a.headers["access-control-allow-origin"] === undefined
                  ? undefined
                  : "wanted no access-control-allow-origin",
            });
          const failures = await runChecks(checks);
          if (s.scope !== "public")
            expect(
              p.problem,
              "the sweep's request for this operation would not validate, so a 400 could hide a missing refusal",
            ).toBeUndefined();
          expect(failures).toEqual([]);
        });
      }
    });

    it("read operations with real IDs answered the read-only token (no 404 for an auth bug to hide behind), several with the device's data", () => {
      const withIDs = roReads.filter((r) => operations.find((s) => s.name === r.name)!.params.length > 0);
      const notFound = withIDs.filter((r) => r.status === 404).map((r) => r.name);
      const withData = roReads.filter((r) => r.data).map((r) => r.name);
      const other = roReads.filter((r) => r.status >= 300).map((r) => `${r.name} ${r.status}`);
      console.log(
        `${runtime.name}: read-only token: ${roReads.length} read operations, ${roReads.length - other.length} answered 2xx (others: ${other.join(", ")}), ${withData.length} with the device's data`,
      );
      expect(roReads.length).toBeGreaterThan(20);
      expect(notFound).toEqual([]);
      expect(withData.length).toBeGreaterThanOrEqual(10);
    });

    describe("the /v1/ws upgrade", () => {
      /** The upgrade's refusal must be its status, and carry none of the device's data. */
      async function refused(what: string, options: ConnectOptions, status: number) {
        const r = await refusal(server.url, wsFrom(options));
        expect(r.status, `${what}: ${r.body}`).toBe(status);
        if (status === 401) expect(String(r.headers["www-authenticate"]), what).toMatch(/^Bearer\b/i);
        const found = device.needles.filter((n) => r.body.includes(n) || JSON.stringify(r.headers).includes(n));
        expect(found, `${what}: the refusal holds the device's data`).toEqual([]);
      }

      it(`is refused without a token, with garbage, unknown, expired or revoked ones, in the header or the subprotocol (401)`, async () => {
        await refused("no token", { token: null }, 401);
        await refused("no token, the inboxd.v1 subprotocol only", { token: null, protocols: ["inboxd.v1"] }, 401);
        await refused("garbage header", { token: null, headers: { authorization: "Bearer %%garbage%%" } }, 401);
        await refused("unknown token", { token: randomToken("inbx") }, 401);
        await refused(
          "unknown token in the subprotocol",
          { token: null, protocols: ["inboxd.v1", `bearer.${randomToken("inbx")}`] },
          401,
        );
        for (const d of dead) {
          await refused(d.what, { token: d.token }, 401);
          await refused(
            `${d.what} in the subprotocol`,
            { token: null, protocols: ["inboxd.v1", `bearer.${d.token}`] },
            401,
          );
        }
      });

      it(`is refused cross-site (403)${runtime.loopbackOnly ? ", and for a foreign Host or Origin" : ""}, even with a valid token`, async () => {
        await refused("Sec-Fetch-Site: cross-site", { token: ro, headers: { "sec-fetch-site": "cross-site" } }, 403);
        await refused(
          "Origin: null",
          { token: null, protocols: ["inboxd.v1", `bearer.${ro}`], headers: { origin: "null" } },
          403,
        );
        if (runtime.loopbackOnly) {
          await refused(
            "Origin: https://evil.example",
            { token: null, protocols: ["inboxd.v1", `bearer.${ro}`], origin: "https://evil.example" },
            403,
          );
          await refused("Host: evil.example", { token: ro, headers: { host: "evil.example" } }, 403);
        }
      });

      it("accepts the read-only token in Sec-WebSocket-Protocol (bearer.<token>), selecting inboxd.v1", async () => {
        const conn = await connect(
          server.url,
          "",
          undefined,
          wsFrom({ token: null, protocols: ["inboxd.v1", `bearer.${ro}`] }),
        );
        try {
          expect(conn.ws.protocol).toBe("inboxd.v1");
          expect(conn.frames[0]).toMatchObject({ type: "ready" });
        } finally {
          conn.close();
        }
      });
    });

    it("every MCP tool that writes is hidden from and refused to the read-only token (the scope check wins over argument validation)", async () => {
      const rpc = async (token: string, method: string, params: unknown) => {
        const req: Sent = {
          method: "POST",
          path: "/v0/mcp",
          headers: {
            ...bearer(token),
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        };
        const a = await ask(req);
        return { req, a, json: JSON.parse(a.text) as { result?: any; error?: { message: string } } };
      };
      const all = (await rpc(rw, "tools/list", {})).json.result.tools as {
        name: string;
        annotations?: { readOnlyHint?: boolean };
      }[];
      const writers = all.filter((t) => t.annotations?.readOnlyHint !== true).map((t) => t.name);
      const visible = ((await rpc(ro, "tools/list", {})).json.result.tools as { name: string }[]).map((t) => t.name);
      expect(writers.length).toBeGreaterThanOrEqual(5);
      expect(visible.length, "the read-only token sees no tool at all").toBeGreaterThanOrEqual(5);
      expect(visible.filter((n) => writers.includes(n))).toEqual([]);
      const failures: string[] = [];
      for (const name of writers) {
        const args = {
          chatID: device.ids.chatID,
          messageID: device.ids.messageID,
          text: "sweep: must not be sent",
          reactionKey: "🔥",
        };
        const { req, a, json } = await rpc(ro, "tools/call", { name, arguments: args });
        const refusalText = json.error?.message ?? (json.result?.isError ? JSON.stringify(json.result.content) : "");
        if (!/read-only|write scope/i.test(refusalText))
          failures.push(`${name}: not refused for the scope: ${shown(req, a)}`);
        const found = leaked(device, req, a);
        if (found.length) failures.push(`${name}: the refusal holds the device's data ${JSON.stringify(found)}`);
      }
      expect(failures).toEqual([]);
    });

    it("the refused writes changed nothing: the device reads the same as before the sweep", async () => {
      expect(await snapshot()).toEqual(before);
    });
  });
}
