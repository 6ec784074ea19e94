import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { databasePath } from "../../adapters/node/data-dir.ts";
import { startServer, type RunningServer, type ServeOptions } from "../../adapters/node/serve.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { ensureToken } from "../../src/services/tokens.ts";
import { startWorkerd } from "./workerd.ts";

/** inboxd on one runtime, empty but for one read-write token, as the network suites (XMPP, Matrix) drive it. */
export interface Runtime {
  url: string;
  token: string;
  /** Stops inboxd and starts it again on the same storage, running `whileDown` in between (the network's server keeps running). */
  restart(whileDown?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

export type Tuning = NonNullable<ServeOptions["tuning"]>;

/** The Node daemon over SQLite in a fresh data directory; a restart keeps its port and data. */
export async function startDaemonRuntime(token: string, tuning: Tuning = {}): Promise<Runtime> {
  const dataDir = mkdtempSync(join(tmpdir(), "inboxd-network-"));
  const dbPath = databasePath(dataDir);
  const { storage, close } = await openSqliteStorage(dbPath);
  await ensureToken(storage, token, { name: "rw", scopes: ["read", "write"] });
  await close();
  const listen = (port: number) =>
    startServer({ port, host: "127.0.0.1", dbPath, allowHosts: [], verbose: false, print: () => undefined, tuning });
  let server: RunningServer = await listen(0);
  const port = Number(new URL(server.url).port);
  return {
    url: server.url,
    token,
    async restart(whileDown) {
      await server.close();
      await whileDown?.();
      server = await listen(port);
    },
    async stop() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * workerd through Miniflare. Its restart brings the runtime back at once; the object wakes (and connects its
 * accounts) on the next request, so `whileDown` runs while inboxd is still down as far as the network can tell.
 */
export async function startWorkerdRuntime(
  token: string,
  tuning: Parameters<typeof startWorkerd>[0]["tuning"] = {},
): Promise<Runtime> {
  const worker = await startWorkerd({ token, tuning });
  return {
    url: worker.url,
    token,
    async restart(whileDown) {
      await worker.restart();
      await whileDown?.();
    },
    stop: () => worker.stop(),
  };
}
