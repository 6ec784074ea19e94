import os from "node:os";
import { dirname, join } from "node:path";
import { serve as listen } from "srvx";
import { createApp, type App, type AppOptions } from "../../src/app.ts";
import { xmppOverTCP } from "./xmpp-tcp.ts";
import { peerAddress, tagPeer, type NodeRequest } from "./peer.ts";
import { signInLink } from "./open-command.ts";
import { createToken, listTokens } from "../../src/services/tokens.ts";
import { openSqliteStorage } from "./sqlite-storage.ts";
import { assetStorage } from "./asset-storage.ts";
import { answerClientErrors, BODY_TIMEOUTS, bodyOf, finishBody, HEADERS_TIMEOUT_MS, MAX_HEADER_BYTES, type BodyTimeouts } from "./request-body.ts";
import { attachWebSockets } from "./websocket.ts";

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
  /** Test tuning; `xmppFirstBackfill`: messages per archive a first XMPP connect reads. */
  tuning?: Pick<AppOptions, "loginSessionTtlMs" | "sandboxQrDelayMs"> & { xmppFirstBackfill?: number };
  /** Overrides for tests: how long a request body may take (request-body.ts). */
  bodyTimeouts?: BodyTimeouts;
  /** Per-token budgets and failed-authentication throttling (`--rate-limit`); false turns them off. Default: on, with src/http/rate-limit.ts's defaults. */
  rateLimit?: AppOptions["rateLimit"];
  /** Lifetime of OAuth access tokens (`--token-ttl`). */
  accessTokenTtlMs?: number;
  /** Retention of the event log (INBOXD_EVENT_LOG_* in the environment). */
  eventLog?: AppOptions["eventLog"];
}

/** One request: bodies go through request-body.ts (see there), so a refusal never costs the client its answer. */
async function handle(app: App, request: Request, timeouts: BodyTimeouts): Promise<Response> {
  const node = (request as NodeRequest).runtime?.node;
  if (!node || request.method === "GET" || request.method === "HEAD") return app.fetch(request);
  const body = bodyOf(node.req, timeouts);
  const forwarded = tagPeer(new Request(request.url, { method: request.method, headers: request.headers, body: body.stream, duplex: "half" } as RequestInit), node.req.socket?.remoteAddress);
  const response = await app.fetch(forwarded);
  return body.complete() ? response : finishBody(node.req, node.res, body, response);
}

/**
 * The HTTP listener around an app: srvx, with bodies, limits and timeouts as request-body.ts handles them (tests
 * shorten the body timeouts).
 */
export async function listenApp(app: App, port: number, host: string, bodyTimeouts: BodyTimeouts = BODY_TIMEOUTS) {
  const server = listen({
    port,
    hostname: host,
    fetch: (request) => handle(app, request, bodyTimeouts),
    silent: true,
    gracefulShutdown: false,
    node: {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: 0, // bodies have their own progress timeout (request-body.ts): an upload may take long
      connectionsCheckingInterval: 2_000,
    },
  });
  await server.ready();
  answerClientErrors(server.node!.server! as import("node:http").Server);
  return server;
}

export interface RunningServer {
  url: string;
  /** Which SQLite library holds the data, e.g. "node:sqlite" or "better-sqlite3 12.11.1". */
  sqlite: string;
  app: App;
  /** A one-time link that signs the owner's browser in (to approve apps), made at start. */
  signInLink: string;
  close(): Promise<void>;
}

/** Opens the store, creates a first token if there is none, and listens. */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const { storage, binding, close: closeStorage } = await openSqliteStorage(options.dbPath);
  if ((await listTokens(storage)).length === 0) {
    const { token } = await createToken(storage, { name: "initial", scopes: ["read", "write"] });
    options.print(`Created an access token (read, write). It is shown only once; store it now:\n${token}`);
  }
  // Reminders (and later retries) wake the app at their time; a timer cannot wait longer than ~24.8 days.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let app: App | undefined;
  const schedule = (at: number | undefined) => {
    clearTimeout(timer);
    if (at === undefined) return;
    timer = setTimeout(() => void app?.wake().catch((error) => process.stderr.write(`inboxd: wake failed: ${error}\n`)), Math.min(Math.max(0, at - Date.now()), 2 ** 31 - 1));
    timer.unref();
  };
  // Asset bytes: files under <data dir>/assets, never through a symlink (asset-storage.ts).
  const assetDir = join(dirname(options.dbPath), "assets");
  app = await createApp({
    schedule,
    assets: { storage: assetStorage(assetDir), dir: assetDir },
    storage,
    allowedHosts: options.allowHosts,
    mcp: options.mcp,
    rateLimit: options.rateLimit,
    accessTokenTtlMs: options.accessTokenTtlMs,
    eventLog: options.eventLog,
    clientAddress: peerAddress,
    xmpp: { transports: [xmppOverTCP], firstBackfill: options.tuning?.xmppFirstBackfill },
    loginSessionTtlMs: options.tuning?.loginSessionTtlMs,
    sandboxQrDelayMs: options.tuning?.sandboxQrDelayMs,
    info: { platform: { os: process.platform, arch: process.arch, release: os.release() } },
    log: options.verbose ? (line) => process.stderr.write(`${new Date().toISOString()} debug ${line}\n`) : undefined,
  });
  const server = await listenApp(app, options.port, options.host, options.bodyTimeouts);
  const sockets = attachWebSockets(server.node!.server! as import("node:http").Server, app);
  await app.wake(); // reminders that came due while the daemon was down
  // `inboxd webhook add` writes from another process: look for new webhooks every 2 s.
  const webhookRefresh = setInterval(() => void app!.context.webhooks.refresh(true).catch(() => undefined), 2000);
  webhookRefresh.unref();
  const address = server.node?.server?.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  const url = `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`;
  return {
    url,
    signInLink: await signInLink(storage, url),
    sqlite: binding.name === "node:sqlite" ? "node:sqlite" : `${binding.name} ${binding.version}`,
    app,
    async close() {
      clearTimeout(timer);
      clearInterval(webhookRefresh);
      sockets.close();
      await server.close(true);
      await app.close();
      await closeStorage();
    },
  };
}
