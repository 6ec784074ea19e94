import os from "node:os";
import { dirname, join } from "node:path";
import { createStorage } from "unstorage";
import fsLite from "unstorage/drivers/fs-lite";
import { serve as listen } from "srvx";
import { createApp, type App, type AppOptions } from "../../src/app.ts";
import { createToken, listTokens } from "../../src/services/tokens.ts";
import { openSqliteStorage } from "./sqlite-storage.ts";
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
  /** Overrides for tests (e.g. short login-session expiry). */
  tuning?: Pick<AppOptions, "loginSessionTtlMs" | "sandboxQrDelayMs">;
}

export interface RunningServer {
  url: string;
  /** Which SQLite library holds the data, e.g. "node:sqlite" or "better-sqlite3 12.11.1". */
  sqlite: string;
  app: App;
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
  // Asset bytes: files under <data dir>/assets (unstorage fs-lite), written and read in 1 MiB chunks.
  const assetDir = join(dirname(options.dbPath), "assets");
  app = await createApp({
    schedule,
    assets: { storage: createStorage({ driver: fsLite({ base: assetDir }) }), dir: assetDir },
    storage,
    allowedHosts: options.allowHosts,
    ...options.tuning,
    info: { platform: { os: process.platform, arch: process.arch, release: os.release() } },
    log: options.verbose ? (line) => process.stderr.write(`${new Date().toISOString()} debug ${line}\n`) : undefined,
  });
  const server = listen({
    port: options.port,
    hostname: options.host,
    fetch: (request) => app!.fetch(request),
    silent: true,
    gracefulShutdown: false,
    // Uploads stream up to 500 MB (the app enforces per-route limits: JSON 40 MB, uploads 500 MB).
    maxRequestBodySize: 520 * 1024 * 1024,
  });
  await server.ready();
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
