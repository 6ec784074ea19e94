import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type RunningServer, type ServeOptions } from "../../adapters/node/serve.ts";
import { databasePath } from "../../adapters/node/data-dir.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { seedDataset, type SeedOptions } from "../../src/seed/dataset.ts";
import { ensureToken, type Scope } from "../../src/services/tokens.ts";
import { Db } from "../../src/store/db.ts";
import type { RateLimitOptions } from "../../src/http/rate-limit.ts";
import type { AppOptions } from "../../src/app.ts";

export interface NodeHarness {
  url: string;
  dataDir: string;
  /** The running daemon (a new one after each restart). */
  readonly server: RunningServer;
  /**
   * Stops the daemon and starts it again on the same port and data directory, as a person restarting it would:
   * connections drop, and clients find it again at the same address.
   */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the real daemon (SQLite in a temp dir, real HTTP on a free loopback port) with a seeded sandbox dataset
 * and the given tokens.
 */
export async function startNode(options: {
  seed?: SeedOptions;
  tokens: { token: string; scopes: Scope[] }[];
  verbose?: boolean;
  tuning?: {
    loginSessionTtlMs?: number;
    sandboxQrDelayMs?: number;
    xmppFirstBackfill?: number;
    matrixFirstBackfill?: number;
    desktopApiFirstBackfill?: number;
  };
  /** Per-token budgets (default: off, as suites load one token far beyond a person's use). */
  rateLimit?: RateLimitOptions | false;
  /** Event log retention (the daemon reads it from INBOXD_EVENT_LOG_*). */
  eventLog?: AppOptions["eventLog"];
  /** `--remote-access` (and its `--public-url`, `--trusted-proxy`) and `--allow-host`. */
  remoteAccess?: ServeOptions["remoteAccess"];
  allowHosts?: string[];
  /** How long an OAuth access token lives (`--token-ttl`). */
  accessTokenTtlMs?: number;
}): Promise<NodeHarness> {
  const dataDir = await prepareDataDir(options);
  const listen = (port: number) =>
    startServer({
      port,
      host: "127.0.0.1",
      dbPath: databasePath(dataDir),
      allowHosts: options.allowHosts ?? [],
      remoteAccess: options.remoteAccess,
      verbose: options.verbose ?? false,
      tuning: options.tuning,
      rateLimit: options.rateLimit ?? false,
      eventLog: options.eventLog,
      accessTokenTtlMs: options.accessTokenTtlMs,
      print: () => undefined,
    });
  let server = await listen(0);
  const port = Number(new URL(server.url).port);
  return {
    url: server.url,
    dataDir,
    get server() {
      return server;
    },
    async restart() {
      await server.close();
      // As test/xmpp/node.test.ts restarts its daemon. Another program asking the kernel for a free port meanwhile
      // could be given this one (about one chance in the ~28,000 ephemeral ports): listen() then says so.
      server = await listen(port);
    },
    async stop() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A new temp data directory holding the tokens and, when given, a seeded dataset: what startNode serves, and what a
 * test that runs `inboxd serve` as a child process (to kill it) starts that process on.
 */
export async function prepareDataDir(options: {
  seed?: SeedOptions;
  tokens: { token: string; scopes: Scope[] }[];
}): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), "inboxd-test-"));
  const { storage, close } = await openSqliteStorage(databasePath(dataDir));
  for (const t of options.tokens) await ensureToken(storage, t.token, { name: t.scopes.join("+"), scopes: t.scopes });
  if (options.seed) await seedDataset(await Db.open(storage), options.seed);
  await close();
  return dataDir;
}
