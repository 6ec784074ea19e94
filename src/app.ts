import { Router } from "itty-router";
import { createStorage, type Storage } from "unstorage";
import type { NetworkConnector } from "./bridges/connector.ts";
import { BridgeRuntime } from "./bridges/runtime.ts";
import { ApiError, toErrorResponse } from "./http/errors.ts";
import { authenticate, authorize, checkRequestOrigin, type GuardOptions, type Principal } from "./http/guard.ts";
import { RateLimiter, type RateLimitOptions } from "./http/rate-limit.ts";
import { challenge, OAuthError, oauthErrorResponse, oauthRoutes } from "./oauth/index.ts";
import { Api, type ApiRouter, type Operation, type RequestContext } from "./http/route-kit.ts";
import { parseQuery } from "./http/validate.ts";
import { discoveryPreflight, isDiscoveryPath, withDiscoveryCors } from "./http/cors.ts";
import { accountRoutes } from "./routes/accounts.ts";
import { chatRoutes } from "./routes/chats.ts";
import { infoRoutes, type ServerInfo } from "./routes/info.ts";
import { messageRoutes } from "./routes/messages.ts";
import { bridgeRoutes } from "./routes/bridges.ts";
import { LoginSessions } from "./bridges/login-sessions.ts";
import { completeLogin, syncLoginAccounts } from "./services/bridges.ts";
import type { Context } from "./services/context.ts";
import { JsonText } from "./services/present.ts";
import { TokenVerifier } from "./services/tokens.ts";
import { ingest } from "./services/ingest.ts";
import { Db } from "./store/db.ts";
import { EventHub } from "./events/hub.ts";
import { EventLog, type EventLogOptions } from "./events/log.ts";
import { presentAccount } from "./services/accounts.ts";
import { fireDueReminders, nextReminderAt } from "./services/reminders.ts";
import { endDueMutes, nextMuteEnd } from "./services/mutes.ts";
import { WebhookDispatcher } from "./services/webhooks.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { assetRoutes } from "./routes/assets.ts";
import { appRoutes } from "./routes/app.ts";
import { BlobStore } from "./assets/blob-store.ts";
import type { LocalFiles } from "./assets/local-files.ts";
import { cleanupUploads, MAX_UPLOAD_BYTES, UPLOAD_TTL_MS, type AssetConfig } from "./services/assets.ts";
import { isV0Path, v0Components, v0ErrorBodies, v0ErrorResponse, v0Response, v0Routes } from "./v0/index.ts";
import { mcpRoutes, type McpOptions } from "./mcp/index.ts";
import { lazyDocument, specRoutes } from "./spec/routes.ts";
import { eventRoutes } from "./routes/events.ts";
import { labelRoutes } from "./routes/labels.ts";
import { typingRoutes } from "./routes/typing.ts";
import { SandboxConnector } from "./connectors/sandbox/sandbox.ts";
import { XmppConnector, type XmppOptions } from "./connectors/xmpp/index.ts";
import { MatrixConnector, type MatrixOptions } from "./connectors/matrix/index.ts";
import { DesktopApiConnector, type DesktopApiOptions } from "./connectors/desktop-api/index.ts";
import { webRoutes } from "./web/index.ts";
import { tokenRoutes } from "./routes/tokens.ts";

export const VERSION = "0.1.0";
export const VERSION_HEADER = "X-Beeper-Desktop-Version";

export interface AppOptions extends GuardOptions {
  storage: Storage;
  connectors?: NetworkConnector[];
  info?: Partial<ServerInfo>;
  /** Called once per request with a log line (no secrets, no query values). */
  log?: (line: string) => void;
  now?: () => number;
  cacheBytes?: number;
  /** Idle login sessions expire after this long (default 10 minutes). */
  loginSessionTtlMs?: number;
  /** How long the sandbox QR login waits before completing on its own (default 1.5 s). */
  sandboxQrDelayMs?: number;
  /** How long the sandbox's Echo takes to answer (default 20–60 ms at random; benchmarks set a fixed one). */
  sandboxEchoDelayMs?: number;
  /**
   * Asks the runtime to call `App.wake()` at the given time (ms since epoch), replacing any earlier request;
   * undefined cancels it. The daemon uses a timer, the Worker a Durable Object alarm.
   */
  schedule?: (at: number | undefined) => void;
  /** The fetch webhooks are delivered with (default: the global one). */
  fetch?: typeof fetch;
  /**
   * Where asset bytes go (raw items; default: memory) and, on the daemon, the directory whose file:// URLs name
   * them. Uploads never sent are deleted after `uploadTtlMs` (default 24 h).
   */
  assets?: { storage: Storage; dir?: string; maxUploadBytes?: number; uploadTtlMs?: number; localFiles?: LocalFiles };
  /**
   * XMPP: transports besides WebSocket (the daemon adds TCP with STARTTLS, adapters/node/xmpp-tcp.ts), and how many
   * messages of each archive a first connect reads (default 10,000; older ones load when a client pages back).
   */
  xmpp?: XmppOptions;
  /** Matrix: how many messages of each room a first sync loads (default 50). */
  matrix?: MatrixOptions;
  /** Another Desktop API server as a network: how the runtime opens its WebSocket, and the first load's size. */
  desktopApi?: DesktopApiOptions;
  /** MCP tools offered: "all" (default), "read-only", or tool names (src/mcp/options.ts). */
  mcp?: Pick<McpOptions, "tools">;
  /** How long an OAuth access token lives (default 1 hour). */
  accessTokenTtlMs?: number;
  /** Per-token request budgets and failed-authentication throttling (src/http/rate-limit.ts); false turns them off. */
  rateLimit?: RateLimitOptions | false;
  /** The client's network address, as the runtime knows it (for throttling failed authentication). */
  clientAddress?: (request: Request) => string | undefined;
  /**
   * Remote access through a proxy or tunnel (the daemon reads forwarded headers, adapters/node/forwarded.ts): the OAuth
   * discovery documents are readable cross-origin and /v1/info says `remote_access: true`. Default: on where any Host
   * is answered (the Worker), off otherwise.
   */
  remoteAccess?: boolean;
  /** Retention of the durable event log (default 7 days and 1,000,000 events). */
  eventLog?: Pick<EventLogOptions, "maxAgeMs" | "maxEvents" | "enabled">;
}

const earliest = (...times: (number | undefined)[]) => {
  const defined = times.filter((t): t is number => t !== undefined);
  return defined.length ? Math.min(...defined) : undefined;
};

/**
 * The built-in networks: the sandbox (up to 10 accounts), a single-account variant of it that behaves like
 * networks bound to one phone or device and, like SMS, has no typing notifications, XMPP, Matrix, and another
 * Desktop API server (the desktop app, or another inboxd).
 */
function defaultConnectors(options: AppOptions, db: Db): NetworkConnector[] {
  return [
    new SandboxConnector({ qrDelayMs: options.sandboxQrDelayMs, echoDelayMs: options.sandboxEchoDelayMs }),
    new SandboxConnector({ network: "sandbox-solo", displayName: "Sandbox (single account)", maxAccounts: 1, qrDelayMs: options.sandboxQrDelayMs, typing: false }),
    new XmppConnector(options.xmpp),
    new MatrixConnector(options.matrix),
    new DesktopApiConnector(() => db.instanceID, options.desktopApi),
  ];
}

export interface App {
  fetch(request: Request): Promise<Response>;
  /**
   * Vets a WebSocket upgrade of /v1/ws: host and origin checks, then a token with the read scope, from the
   * Authorization header or — for browsers, which cannot set headers on a WebSocket — from a
   * `Sec-WebSocket-Protocol` entry `bearer.<token>`. Answers the subprotocol to select, or the refusal to send.
   */
  checkUpgrade(request: Request): Promise<{ ok: true; protocol?: string } | { ok: false; response: Response }>;
  events: EventHub;
  context: Context;
  /** Every operation the app answers (what GET /v1/spec documents). */
  operations: readonly Operation[];
  /** Does what is due (reminders, timed mutes, webhook retries, expired uploads) and schedules the next wake-up (AppOptions.schedule). */
  wake(): Promise<void>;
  close(): Promise<void>;
}

/** The subprotocol a browser offers next to `bearer.<token>`; the server selects it. */
export const WS_PROTOCOL = "inboxd.v1";

/**
 * Builds the whole API as one fetch handler over the given storage. Runtime-free: the Node daemon and the Worker
 * differ only in the storage driver and the listener they wrap around this.
 *
 * @example
 * const app = await createApp({ storage: createStorage() });
 * const res = await app.fetch(new Request("http://127.0.0.1/v1/accounts", { headers: { authorization: `Bearer ${token}` } }));
 */
export async function createApp(options: AppOptions): Promise<App> {
  const db = await Db.open(options.storage, { cacheBytes: options.cacheBytes });
  // The app is the store's one writer, so it keeps the chat snapshot that makes the next start fast. A store
  // without one (written before snapshots existed) gets it over the first commits, beginning with this one.
  db.keepsChatSnapshot = true;
  // Made on first start and written with this commit: how another inboxd tells this one apart (loop detection).
  void db.instanceID;
  await db.commit();
  const bridges = new BridgeRuntime();
  for (const c of options.connectors ?? defaultConnectors(options, db)) bridges.register(c);
  const sessions = new LoginSessions({ ttlMs: options.loginSessionTtlMs, complete: (session, result) => completeLogin(context, session, result) });
  const webhooks = new WebhookDispatcher(db.kv, { fetch: options.fetch, onIdleUntil: () => context.rearm() });
  const assets: AssetConfig = {
    blobs: new BlobStore(options.assets?.storage ?? createStorage()),
    assetDir: options.assets?.dir,
    localFiles: options.assets?.localFiles,
    maxUploadBytes: options.assets?.maxUploadBytes ?? MAX_UPLOAD_BYTES,
    uploadTtlMs: options.assets?.uploadTtlMs ?? UPLOAD_TTL_MS,
    downloads: new Map(),
  };
  const context: Context = {
    db,
    bridges,
    sessions,
    webhooks,
    assets,
    now: options.now ?? Date.now,
    rearm: () => options.schedule?.(earliest(nextReminderAt(context), nextMuteEnd(context), webhooks.nextAt(), context.nextUploadExpiry)),
  };
  bridges.onEvent = (account, event) => ingest(context, account, event);
  bridges.onSetLoginAccounts = (account, accounts) => syncLoginAccounts(context, account, accounts);
  bridges.onSaveState = async (account, state) => {
    account.state = state;
    db.saveAccounts();
    await db.commit();
  };

  const info: ServerInfo = {
    version: VERSION,
    platform: { os: "unknown", arch: "unknown" },
    remoteAccess: options.remoteAccess ?? options.allowedHosts === "*",
    ...options.info,
  };
  const tokens = new TokenVerifier(options.storage, undefined, context.now);
  const limiter = options.rateLimit === false ? undefined : new RateLimiter(options.rateLimit, context.now);
  /**
   * Authenticates a request against the token store and the rate limits. A valid token always gets in (every local
   * client shares 127.0.0.1, so refusing by address first would let anyone lock the owner out); failed attempts with
   * a token count per client address, and past the budget they are answered 429 instead of 401. Requests without a
   * token do not count: clients start the OAuth flow with one.
   */
  const admit = async (request: Request, from: Request = request): Promise<Principal> => {
    let principal: Principal;
    try {
      principal = await authenticate(request, tokens);
    } catch (error) {
      if (limiter && request.headers.has("authorization")) {
        const address = options.clientAddress?.(from);
        limiter.checkAddress(address);
        limiter.failed(address);
      }
      throw error;
    }
    limiter?.spend(principal.id);
    return principal;
  };
  const log = new EventLog(db.kv, { ...options.eventLog, now: context.now });
  await log.load();
  const events = new EventHub(db, log, (account) => presentAccount(account, context));
  const router: ApiRouter = Router({
    before: [
      async (request: Request, rc: RequestContext) => {
        checkRequestOrigin(request, rc.url, options, info.remoteAccess && isDiscoveryPath(rc.url.pathname));
        // Every route needs a valid token, except public ones asked without one; each operation checks its scope.
        if (api.isPublic(request.method, rc.url.pathname) && !request.headers.has("authorization")) return;
        rc.principal = await admit(request);
      },
    ],
    catch: (error: unknown, request: Request) => {
      if (error instanceof OAuthError) return oauthErrorResponse(error);
      if (!(error instanceof ApiError)) options.log?.(`error: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
      return errorResponseFor(new URL(request.url), error);
    },
  }) as unknown as ApiRouter;
  const api = new Api(router);
  infoRoutes(api, info);
  accountRoutes(api);
  chatRoutes(api);
  messageRoutes(api);
  bridgeRoutes(api);
  webhookRoutes(api);
  assetRoutes(api, assets);
  appRoutes(api);
  labelRoutes(api);
  typingRoutes(api);
  eventRoutes(api, events);
  v0Routes(api);
  const openApi = lazyDocument(api, { version: VERSION, errorBodies: v0ErrorBodies, components: v0Components });
  mcpRoutes(api, events, { ...options.mcp, log: options.log }, openApi);
  specRoutes(api, openApi);
  oauthRoutes(api, { storage: options.storage, now: context.now, accessTokenTtlMs: options.accessTokenTtlMs });
  tokenRoutes(api, { storage: options.storage, now: context.now });
  webRoutes(api);
  api.addHeadForGets();
  router.all("*", (request: Request, rc: RequestContext) => {
    const allowed = api.methodsAt(rc.url.pathname);
    if (allowed.length) throw new ApiError(405, "METHOD_NOT_ALLOWED", `${request.method} is not answered at ${rc.url.pathname}: it takes ${allowed.join(", ")}`, undefined, { allow: allowed.join(", ") });
    throw new ApiError(404, "NOT_FOUND", `no route for ${request.method} ${rc.url.pathname}`);
  });

  context.announce = (event) => events.publish([event]);
  // Retention runs beside the commits and wake-ups: once the log is 1 % (at most 1,000 events) over its count, and
  // hourly for age; not on every wake-up (webhook retries and reminders wake the app often).
  let compactedAt = context.now();
  const maybeCompact = async () => {
    if (!log.compactionDue && context.now() - compactedAt < 3_600_000) return;
    compactedAt = context.now();
    await log.compact().catch((error) => options.log?.(`error: event log compaction: ${error instanceof Error ? error.message : String(error)}`));
  };
  events.add({ deliver: () => void maybeCompact() });
  await webhooks.load(log);
  events.add(webhooks);
  // Accounts connect once every commit has its events: what a network delivers as the account connects (a first
  // sync, history, messages that waited) is announced and logged like anything later, not stored unannounced.
  for (const account of db.accounts) await bridges.attach(account);
  context.rearm();
  return {
    context,
    events,
    operations: api.operations,
    async wake() {
      await maybeCompact();
      await fireDueReminders(context);
      await endDueMutes(context);
      // The next reminder is armed before webhooks run: a long backlog to a slow receiver must not delay it.
      context.rearm();
      await webhooks.run();
      await cleanupUploads(context, assets);
      context.rearm();
    },
    async checkUpgrade(request) {
      try {
        const url = new URL(request.url);
        if (url.pathname !== "/v1/ws") throw new ApiError(404, "NOT_FOUND", `no WebSocket endpoint at ${url.pathname}`);
        checkRequestOrigin(request, url, options);
        const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim()).filter(Boolean);
        const fromProtocol = offered.find((p) => p.startsWith("bearer."))?.slice("bearer.".length);
        const headers = new Headers(request.headers);
        if (!headers.has("authorization") && fromProtocol) headers.set("authorization", `Bearer ${fromProtocol}`);
        const principal = await admit(new Request(request.url, { headers }), request);
        authorize(principal, "read");
        return { ok: true, protocol: offered.includes(WS_PROTOCOL) ? WS_PROTOCOL : undefined };
      } catch (error) {
        const response = toErrorResponse(error);
        response.headers.set(VERSION_HEADER, VERSION);
        if (response.status === 401) response.headers.set("www-authenticate", challenge(new URL(request.url).origin));
        return { ok: false, response };
      }
    },
    async fetch(request: Request): Promise<Response> {
      const started = Date.now();
      const url = new URL(request.url);
      const discovery = info.remoteAccess && isDiscoveryPath(url.pathname);
      let response: Response;
      try {
        if (discovery && request.method === "OPTIONS") {
          checkRequestOrigin(request, url, options, true);
          response = discoveryPreflight(request);
        } else {
          const rc: RequestContext = { app: context, url, query: parseQuery(url) };
          response = toResponse(await router.fetch(request as never, rc));
        }
      } catch (error) {
        response = errorResponseFor(url, error);
      }
      if (isV0Path(url.pathname)) response = v0Response(response, url);
      if (request.method === "HEAD" && response.body) response = await withoutBody(response);
      if (discovery) response = withDiscoveryCors(response);
      if (response.status === 401) response.headers.set("www-authenticate", challenge(url.origin));
      await discardUnreadBody(request);
      response.headers.set(VERSION_HEADER, VERSION);
      options.log?.(`${request.method} ${url.pathname} ${response.status} ${Date.now() - started}ms`);
      return response;
    },
    async close() {
      await bridges.stop();
      // A snapshot half written stays unnamed; the next start's first build removes its parts.
      db.keepsChatSnapshot = false;
      await db.commit();
    },
  };
}

/** The error body of the generation the request was for: /v0 has its own (src/v0). */
function errorResponseFor(url: URL, error: unknown): Response {
  return isV0Path(url.pathname) ? v0ErrorResponse(error) : toErrorResponse(error);
}

/**
 * A HEAD answer: GET's status and headers, its body (possibly a stream just opened) cancelled. A JSON body's length
 * is said as GET's Content-Length would be: without one (or chunked framing), Node's own HTTP client does not reuse
 * the connection after a HEAD. Other bodies without a length may be endless streams (SSE), so they are not read.
 */
async function withoutBody(response: Response): Promise<Response> {
  const headers = new Headers(response.headers);
  if (!headers.has("content-length") && /^application\/json/.test(headers.get("content-type") ?? ""))
    headers.set("content-length", String((await response.arrayBuffer()).byteLength));
  else void response.body?.cancel().catch(() => {});
  return new Response(null, { status: response.status, statusText: response.statusText, headers });
}

function toResponse(result: unknown): Response {
  if (result instanceof Response) return result;
  if (result instanceof JsonText) return new Response(result.text as BodyInit, { status: 200, headers: { "content-type": "application/json" } });
  return new Response(JSON.stringify(result), { status: 200, headers: { "content-type": "application/json" } });
}

/**
 * A body the app answered without reading (a refusal): a small one is read and dropped, so the runtime can keep the
 * connection alive (workerd resets it otherwise); a larger one is cancelled, which the Worker drops and the Node
 * adapter drains after the response (adapters/node/request-body.ts). A body read halfway is the runtime's to finish.
 */
async function discardUnreadBody(request: Request) {
  if (!request.body || request.bodyUsed) return;
  const length = Number(request.headers.get("content-length") ?? "0");
  try {
    if (length > 0 && length <= 1024 * 1024) await request.arrayBuffer();
    else await request.body.cancel();
  } catch {
    // The client went away (or the body timed out); nothing to keep alive.
  }
}
