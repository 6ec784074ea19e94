import os from "node:os";
import { dirname, join } from "node:path";
import { FastResponse, serve as listen } from "srvx";
import { createApp, type App, type AppOptions } from "../../src/app.ts";
import { limitHeapGrowth } from "./heap-growth.ts";
import { xmppOverTCP } from "./xmpp-tcp.ts";
import { openUpstreamSocket } from "./upstream-socket.ts";
import { loadMatrixCrypto } from "./matrix-crypto.ts";
import { arrival, peerAddress, requestFor, type NodeRequest } from "./peer.ts";
import { LOOPBACK_PROXIES, trustedProxies, type ProxyTrust } from "./forwarded.ts";
import { baseURL, signInLink } from "./open-command.ts";
import { createToken, listTokens } from "../../src/services/tokens.ts";
import { openSqliteStorage } from "./sqlite-storage.ts";
import { assetStorage } from "./asset-storage.ts";
import { localFiles } from "./local-files.ts";
import {
  answerClientErrors,
  BODY_TIMEOUTS,
  bodyOf,
  finishBody,
  HEADERS_TIMEOUT_MS,
  MAX_HEADER_BYTES,
  ReasonPhraseResponse,
  type BodyTimeouts,
} from "./request-body.ts";
import { attachWebSockets } from "./websocket.ts";
import { dialRelay } from "./relay-client.ts";
import { UsageError } from "./usage-error.ts";
import { DEVICE_INBOX, inboxOf, RELAYED_INBOX_KEY, type Tenancy } from "../../src/tenancy.ts";
import type { Storage } from "unstorage";
import { badRequest } from "../../src/errors.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import type { IncomingMessage } from "node:http";
import { fetchClientMetadataPinned } from "./client-metadata-fetch.ts";

export interface ServeOptions {
  port: number;
  host: string;
  dbPath: string;
  /** Extra host names to answer to (remote access). Loopback names are always allowed. */
  allowHosts: string[];
  verbose: boolean;
  /** Where to print the one-time token and status lines. */
  print: (line: string) => void;
  /** MCP tools offered (--mcp-tools). */
  mcp?: AppOptions["mcp"];
  /** Overrides for tests (e.g. short login-session expiry). */
  /**
   * Test tuning; `xmppFirstBackfill`: messages per archive a first XMPP connect reads; `matrixFirstBackfill`:
   * messages per room a first Matrix sync loads.
   */
  tuning?: Pick<AppOptions, "loginSessionTtlMs" | "sandboxQrDelayMs" | "sandboxEchoDelayMs"> & {
    xmppFirstBackfill?: number;
    matrixFirstBackfill?: number;
    desktopApiFirstBackfill?: number;
  };
  /** Overrides for tests: how long a request's headers and body may take (request-body.ts). */
  bodyTimeouts?: BodyTimeouts;
  /** Per-token budgets and failed-authentication throttling (`--rate-limit`); false turns them off. Default: on, with src/http/rate-limit.ts's defaults. */
  rateLimit?: AppOptions["rateLimit"];
  /**
   * Remote access (`--remote-access`): forwarded headers from trusted proxies (loopback, and `trustedProxies` CIDR
   * ranges) are believed, and every absolute URL is built from the public origin (`publicURL`, else theirs).
   */
  remoteAccess?: { publicURL?: URL; trustedProxies?: string[] };
  /**
   * Called once the port is bound, before the data dir is opened: where `serve` creates the directory and takes its
   * lock, so that a port in use leaves nothing behind. Throws to stop the start.
   */
  claimDataDir?: () => void;
  /** `--relay URL`: dial out to a relay Worker and answer the requests it forwards (relay-client.ts). */
  relay?: { url: string; secret: string };
  /** Lifetime of OAuth access tokens (`--token-ttl`). */
  accessTokenTtlMs?: number;
  /** Retention of the event log (INBOXD_EVENT_LOG_* in the environment). */
  eventLog?: AppOptions["eventLog"];
}

/**
 * One request: bodies go through request-body.ts (see there), so a refusal never costs the client its answer. A
 * request that comes while the app is still starting waits for it (the daemon listens first, see startServer).
 */
async function handle(
  starting: App | Promise<App>,
  request: Request,
  timeouts: BodyTimeouts,
  proxy?: ProxyTrust,
): Promise<Response> {
  try {
    const node = (request as NodeRequest).runtime?.node;
    // Node's own refusal of an HTTP/1.1 request without Host has no body; this one has the API's error body.
    if (node && node.req.httpVersion === "1.1" && node.req.headers.host === undefined)
      return toErrorResponse(
        badRequest("an HTTP/1.1 request needs a Host header", [
          { code: "required", message: "Host is required", path: ["headers", "host"] },
        ]),
      );
    const app = await starting;
    if (!node) return await app.fetch(request);
    if (request.method === "GET" || request.method === "HEAD") {
      // Without remote access a GET goes as srvx made it: nothing to rewrite on the hot path.
      const seen = proxy && arrival(request.url, request.headers, node.req.socket?.remoteAddress, proxy);
      const response = await app.fetch(seen?.proxied ? requestFor(seen, { method: request.method }) : request);
      // The app never reads a GET's or HEAD's body; one a client sent anyway is dropped like any unread body, so
      // that a client still sending it (with `Connection: close`, say) reads the answer instead of a reset.
      return node.req.complete ? response : finishBody(node.req, node.res, node.req.readableLength, response);
    }
    const seen = arrival(request.url, request.headers, node.req.socket?.remoteAddress, proxy);
    const body = bodyOf(node.req, timeouts);
    if (!seen.proxied && Number(node.req.headers["content-length"]) <= SMALL_BODY_BYTES) {
      // A small body (a send, a chat change) is read whole first, within the same limits, and srvx's own request
      // carries it (srvx reads `rawBody` when there is one): a new Request around the body's stream was a tenth
      // of a send's CPU time on the daemon. So such a body is read before the app looks at the token, as the
      // headers are; its idle and rate limits (BODY_TIMEOUTS) bound how long that can take.
      let read: Buffer;
      try {
        read = await body.readAll();
      } catch (error) {
        // The app answers a body it could not read as it answers any other (its error body, /v0's, the log line).
        const failed = new ReadableStream({ start: (controller) => controller.error(error) });
        const answer = await app.fetch(
          requestFor(seen, { method: request.method, body: failed, duplex: "half" } as RequestInit),
        );
        return finishBody(node.req, node.res, body.received(), answer);
      }
      (node.req as IncomingMessage & { rawBody?: Buffer }).rawBody = read;
      return await app.fetch(request);
    }
    const forwarded = requestFor(seen, { method: request.method, body: body.stream, duplex: "half" } as RequestInit);
    const response = await app.fetch(forwarded);
    return body.complete() ? response : finishBody(node.req, node.res, body.received(), response);
  } catch (error) {
    return toErrorResponse(error); // srvx's own answer to a throw is a bare 500
  }
}

/** Bodies up to this, with a declared length, are read before the app sees the request (see handle). */
const SMALL_BODY_BYTES = 64 * 1024;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Why the daemon cannot listen, in words that say what to change (the CLI prints it as `inboxd: …`). */
function listenError(error: NodeJS.ErrnoException, port: number, host: string): Error {
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const notHere = `cannot listen on ${where}: ${host} is not an address of this machine; pick another with --host`;
  const because = {
    EADDRINUSE: `port ${port} is already in use on ${host} (another inboxd, or another program): stop that, or pick another port with --port`,
    EACCES: `not allowed to listen on ${where} (ports below 1024 need privileges): pick another port with --port`,
    EADDRNOTAVAIL: notHere,
    ENOTFOUND: notHere,
  }[error.code ?? ""];
  return because ? new UsageError(because, false) : error;
}

/**
 * The HTTP listener around an app (or an app still starting): srvx, with bodies, limits and timeouts as
 * request-body.ts handles them (tests shorten the timeouts). A port that is taken is a UsageError naming it.
 */
export async function listenApp(
  app: App | Promise<App>,
  port: number,
  host: string,
  timeouts: BodyTimeouts = BODY_TIMEOUTS,
  proxy?: ProxyTrust,
) {
  const headersTimeout = timeouts.headersMs ?? HEADERS_TIMEOUT_MS;
  // srvx's FastResponse as the Response every part of the daemon makes (srvx documents this use): it keeps the body
  // as given and hands Node the bytes and headers directly, where a built-in Response copies the body into a stream
  // that is then read back chunk by chunk. That copy was a third of the CPU of GET /v1/chats at 16 connections
  // (undici's extractBody); FastResponse still is a Response (instanceof, clone, body) wherever code needs one.
  globalThis.Response = FastResponse;
  const server = listen({
    port,
    hostname: host,
    fetch: (request) => handle(app, request, timeouts, proxy),
    silent: true,
    gracefulShutdown: false,
    node: {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout,
      requestTimeout: 0, // bodies have their own progress timeout (request-body.ts): an upload may take long
      connectionsCheckingInterval: Math.min(2_000, headersTimeout / 2),
      // Refused in handle() with a JSON body instead (Node's own 400 has none).
      requireHostHeader: false,
      ServerResponse: ReasonPhraseResponse,
    },
  });
  try {
    await server.ready();
  } catch (error) {
    throw listenError(error as NodeJS.ErrnoException, port, host);
  }
  answerClientErrors(server.node!.server! as import("node:http").Server, headersTimeout);
  return server;
}

export interface RunningServer {
  url: string;
  /** Which SQLite library holds the data, e.g. "node:sqlite" or "better-sqlite3 12.11.1". */
  sqlite: string;
  app: App;
  /** A one-time link that signs the owner's browser in (to approve apps), made at start. */
  signInLink: string;
  /** The relay connection, with --relay. */
  relay?: ReturnType<typeof dialRelay>;
  close(): Promise<void>;
}

/**
 * Listens first, so that a port in use is said before anything is written to the data directory; then opens the
 * store and builds the app (requests that come meanwhile wait for it), and creates a first token if there is none.
 */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  let started!: (app: App) => void;
  let failed!: (error: unknown) => void;
  const starting = new Promise<App>((resolve, reject) => ((started = resolve), (failed = reject)));
  starting.catch(() => undefined); // requests waiting on it answer the error; startServer throws it
  const proxy = proxyTrust(options);
  const server = await listenApp(starting, options.port, options.host, options.bodyTimeouts, proxy);
  const nodeServer = server.node!.server! as import("node:http").Server;
  // WebSocket upgrades wait for the app too (attachWebSockets needs it), then are handed over in order.
  const early: unknown[][] = [];
  const hold = (...args: unknown[]) => early.push(args);
  nodeServer.on("upgrade", hold);
  let handedOver = false;
  // As soon as the app and its WebSocket layer exist, requests and held upgrades go to them: what start-up does
  // after that (due reminders, a webhook backlog, the first token) must not keep the daemon from answering.
  const handOver = (app: App) => {
    handedOver = true;
    started(app);
    nodeServer.off("upgrade", hold);
    for (const args of early) nodeServer.emit("upgrade", ...args);
  };
  try {
    return await startApp(options, server, handOver, proxy);
  } catch (error) {
    failed(error);
    if (!handedOver) {
      nodeServer.off("upgrade", hold);
      for (const [, socket] of early) (socket as import("node:stream").Duplex).destroy();
    }
    await server.close(true);
    throw error;
  }
}

/** Whose forwarded headers are believed: none without remote access; loopback peers and --trusted-proxy ranges with it. */
function proxyTrust(options: ServeOptions): ProxyTrust | undefined {
  if (!options.remoteAccess) return undefined;
  const { publicURL, trustedProxies: extra = [] } = options.remoteAccess;
  return { trusts: trustedProxies([...LOOPBACK_PROXIES, ...extra]), publicURL, hosts: options.allowHosts };
}

async function startApp(
  options: ServeOptions,
  server: Awaited<ReturnType<typeof listenApp>>,
  handOver: (app: App) => void,
  proxy: ProxyTrust | undefined,
): Promise<RunningServer> {
  options.claimDataDir?.();
  const { storage, binding, close: closeStorage } = await openSqliteStorage(options.dbPath);
  // Reminders (and later retries) wake the app at their time; a timer cannot wait longer than ~24.8 days.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let app: App | undefined;
  const schedule = (at: number | undefined) => {
    clearTimeout(timer);
    if (at === undefined) return;
    timer = setTimeout(
      () => void app?.wake().catch((error) => process.stderr.write(`inboxd: wake failed: ${error}\n`)),
      Math.min(Math.max(0, at - Date.now()), 2 ** 31 - 1),
    );
    timer.unref();
  };
  // Asset bytes: files under <data dir>/assets, never through a symlink (asset-storage.ts); local files that a
  // client names as a chat picture (local-files.ts).
  const assetDir = join(dirname(options.dbPath), "assets");
  const tenancy = await relayedInbox(storage, options.relay?.secret);
  app = await createApp({
    tenancy,
    schedule,
    assets: { storage: assetStorage(assetDir), dir: assetDir, localFiles },
    storage,
    // SQLite writes synchronously: a commit waits one turn so that concurrent requests share it (src/store/kv.ts).
    gatherWrites: nextTurn,
    nextTurn,
    allowedHosts: options.allowHosts,
    remoteAccess: proxy !== undefined || options.relay !== undefined,
    mcp: options.mcp,
    rateLimit: options.rateLimit,
    accessTokenTtlMs: options.accessTokenTtlMs,
    fetchClientMetadata: fetchClientMetadataPinned,
    eventLog: options.eventLog,
    clientAddress: peerAddress,
    xmpp: { transports: [xmppOverTCP], firstBackfill: options.tuning?.xmppFirstBackfill },
    matrix: { firstBackfill: options.tuning?.matrixFirstBackfill, loadCrypto: loadMatrixCrypto },
    desktopApi: { openSocket: openUpstreamSocket, firstBackfill: options.tuning?.desktopApiFirstBackfill },
    loginSessionTtlMs: options.tuning?.loginSessionTtlMs,
    sandboxQrDelayMs: options.tuning?.sandboxQrDelayMs,
    sandboxEchoDelayMs: options.tuning?.sandboxEchoDelayMs,
    info: { platform: { os: process.platform, arch: process.arch, release: os.release() } },
    log: options.verbose ? (line) => process.stderr.write(`${new Date().toISOString()} debug ${line}\n`) : undefined,
  });
  limitHeapGrowth();
  const sockets = attachWebSockets(server.node!.server! as import("node:http").Server, app, { proxy });
  handOver(app);
  const relay = options.relay ? dialRelay(app, { ...options.relay, log: options.print }) : undefined;
  await app.wake(); // reminders that came due while the daemon was down
  if ((await listTokens(storage)).length === 0) {
    const { token } = await createToken(storage, { name: "initial", scopes: ["read", "write"], inbox: tenancy?.inbox });
    options.print(`Created an access token (read, write). It is shown only once; store it now:\n${token}`);
  }
  // `inboxd webhook add` writes from another process: look for new webhooks every 2 s.
  const webhookRefresh = setInterval(() => void app!.context.webhooks.refresh(true).catch(() => undefined), 2000);
  webhookRefresh.unref();
  const address = server.node?.server?.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  const url = baseURL(options.host, port);
  return {
    url,
    signInLink: await signInLink(storage, url),
    sqlite: binding.name === "node:sqlite" ? "node:sqlite" : `${binding.name} ${binding.version}`,
    app,
    relay,
    async close() {
      clearTimeout(timer);
      clearInterval(webhookRefresh);
      await relay?.close();
      sockets.close();
      await server.close(true);
      await app.close();
      await closeStorage();
    },
  };
}

/**
 * A pairing secret that names an inbox of a deployment of many (`relay_<inbox>.…`, src/tenancy.ts): the daemon then
 * mints secrets that name it too, since the Worker routes a request by the inbox its credential names, and keeps the
 * inbox's ID in its store for `inboxd token create` and `inboxd open`. A relay of its own (an untagged secret) ends that.
 */
async function relayedInbox(storage: Storage, secret: string | undefined): Promise<Tenancy | undefined> {
  if (secret === undefined) {
    // Serving without the relay: what was minted for it (and is minted now) still names the inbox, and works here.
    const stored = await storage.getItem<string>(RELAYED_INBOX_KEY);
    return stored ? { inbox: stored } : undefined;
  }
  const inbox = inboxOf(secret);
  if (inbox === DEVICE_INBOX) {
    await storage.removeItem(RELAYED_INBOX_KEY);
    return undefined;
  }
  await storage.setItem(RELAYED_INBOX_KEY, inbox);
  return { inbox };
}
