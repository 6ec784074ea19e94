/**
 * Node-only helpers: the asset directory as a file listing, and the daemon's app on a real socket with the asset
 * limits and the clock under the test's control.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assetStorage } from "../../adapters/node/asset-storage.ts";
import { listenApp } from "../../adapters/node/serve.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { createApp, type App } from "../../src/app.ts";
import { seedDataset } from "../../src/seed/dataset.ts";
import { ensureToken } from "../../src/services/tokens.ts";
import { Db } from "../../src/store/db.ts";
import { randomToken } from "../kit/common.ts";
import { Api } from "../kit/http.ts";

/** Every file under `dir` (relative paths, sorted; directories left out). */
export function listing(dir: string): string[] {
  return entries(dir).filter((p) => !p.endsWith("/"));
}
/** Every file and directory under `dir`, directories with a trailing slash. */
export function entries(dir: string): string[] {
  return existsSync(dir)
    ? (readdirSync(dir, { recursive: true }) as string[])
        .map((p) => (statSync(join(dir, p)).isDirectory() ? `${p}/` : p))
        .sort()
    : [];
}

/**
 * The daemon's app wired as adapters/node/serve.ts wires it (SQLite store, assets under <dir>/assets, its
 * listener), but with the asset limits and the clock under the test's control (the harness does not expose them).
 */
export async function startTuned(options: { maxUploadBytes?: number; uploadTtlMs?: number; now?: () => number }) {
  const dataDir = mkdtempSync(join(tmpdir(), "inboxd-assets-"));
  const token = randomToken("rw");
  const { storage, close } = await openSqliteStorage(join(dataDir, "inboxd.sqlite3"));
  await ensureToken(storage, token, { name: "rw", scopes: ["read", "write"] });
  await seedDataset(await Db.open(storage), { chats: 4, messages: 20, accounts: 1, seed: 3 });
  const assetDir = join(dataDir, "assets");
  const scheduled: (number | undefined)[] = [];
  const app: App = await createApp({
    storage,
    allowedHosts: [],
    now: options.now,
    schedule: (at) => scheduled.push(at),
    assets: {
      storage: assetStorage(assetDir),
      dir: assetDir,
      maxUploadBytes: options.maxUploadBytes,
      uploadTtlMs: options.uploadTtlMs,
    },
  });
  const server = await listenApp(app, 0, "127.0.0.1");
  const address = server.node!.server!.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    url,
    app,
    /** The daemon's HTTP server, for tests that wait on what it saw (a connection closing). */
    httpServer: server.node!.server! as import("node:http").Server,
    assetDir,
    scheduled,
    api: new Api(url, token),
    async stop() {
      await server.close(true);
      await app.close();
      await close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type TunedDaemon = Awaited<ReturnType<typeof startTuned>>;
