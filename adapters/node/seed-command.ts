import { existsSync, linkSync, rmSync } from "node:fs";
import cliProgress from "cli-progress";
import { seedDataset } from "../../src/seed/dataset.ts";
import { Db } from "../../src/store/db.ts";
import { keys } from "../../src/store/records.ts";
import { createDataDir, databasePath, explainDatabaseError, openDataDir } from "./data-dir.ts";
import { openSqliteStorage } from "./sqlite-storage.ts";
import { defaultBinding } from "./sqlite-binding.ts";
import { lockDataDir } from "./daemon-lock.ts";
import { stopSignal } from "./stop-signal.ts";

/** Exit code after Ctrl-C (128 + SIGINT), as shells report a process that SIGINT ended. */
const INTERRUPTED = 130;

/**
 * `inboxd seed`: the dataset is written to a staging database beside the real one (`inboxd.sqlite3.seeding`) and
 * only then published: linked in as the database of a fresh data dir, or copied into an existing, empty one in one
 * transaction. So the data dir never holds a partial dataset: after Ctrl-C (or a crash, or kill -9) it is as before,
 * and the next seed starts over. It holds the data-dir lock throughout (no daemon may serve the dir meanwhile).
 */
export async function runSeed(
  dataDir: string,
  options: { chats: number; messages: number; accounts: number; seed: number },
): Promise<number> {
  createDataDir(dataDir);
  const unlock = lockDataDir(dataDir, "seed");
  const path = databasePath(dataDir);
  const staging = `${path}.seeding`;
  removeDatabase(staging); // left by a seed that was killed
  try {
    let meta: unknown;
    if (existsSync(path)) {
      const { storage, close } = await openDataDir(dataDir, { create: true });
      try {
        const db = await Db.open(storage);
        if (db.accounts.length || db.chats.size) {
          console.error(
            `inboxd: ${dataDir} already holds data; seed needs an empty data directory (pass another with --data-dir DIR)`,
          );
          return 1;
        }
        // Chat numbers go on from the store's (a removed account's chats may have used some).
        meta = await storage.getItem(keys.meta);
      } finally {
        await close();
      }
    }
    const started = Date.now();
    const aborted = await seedStaging(staging, meta, options);
    if (aborted) {
      console.error(`inboxd: seed interrupted (${aborted}); nothing was written to ${dataDir}: run it again to seed`);
      return INTERRUPTED;
    }
    await publish(staging, path);
    console.log(
      `seeded ${options.chats} chats, ${options.messages} messages, ${options.accounts} account(s) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    return 0;
  } finally {
    removeDatabase(staging);
    unlock();
  }
}

/** Seeds the staging database; returns the signal that stopped it, if one did. */
async function seedStaging(
  staging: string,
  meta: unknown,
  options: { chats: number; messages: number; accounts: number; seed: number },
): Promise<NodeJS.Signals | undefined> {
  const stop = new AbortController();
  let signal: NodeJS.Signals | undefined;
  void stopSignal().then((received) => {
    signal = received;
    stop.abort();
  });
  const { storage, close } = await openSqliteStorage(staging);
  const bar = process.stderr.isTTY
    ? new cliProgress.SingleBar(
        { format: "seeding [{bar}] {percentage}% | {value}/{total} messages | {duration}s", stream: process.stderr },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  try {
    if (meta) await storage.setItem(keys.meta, meta as never);
    // Seeding never reads a record back, so cached records would only hold memory.
    const db = await Db.open(storage, { cacheBytes: 0 });
    bar?.start(options.messages, 0);
    let lastLine = 0;
    await seedDataset(db, {
      ...options,
      signal: stop.signal,
      onProgress: (done, total) => {
        bar?.update(done);
        if (!bar && Date.now() - lastLine > 5000) {
          lastLine = Date.now();
          console.error(`seeding: ${done}/${total} messages`);
        }
      },
    });
  } catch (error) {
    if (!stop.signal.aborted) throw error;
  } finally {
    // Stopping the bar turns line wrapping back on (it turned it off) and shows the cursor again.
    bar?.stop();
    await close();
  }
  return signal;
}

/** Makes the seeded staging database the data dir's database. */
async function publish(staging: string, path: string): Promise<void> {
  // A fresh data dir gets the staging file itself. A hard link never replaces a database that appeared meanwhile
  // (`token create` may run beside seed): that, or a file system without hard links, gets a copy instead.
  if (![path, `${path}-wal`, `${path}-shm`, `${staging}-wal`].some((file) => existsSync(file))) {
    try {
      linkSync(staging, path);
      return;
    } catch {
      // copied below
    }
  }
  await copyInto(staging, path);
}

/** Copies every record of the staging database into the database at `path`, in one transaction. */
async function copyInto(staging: string, path: string): Promise<void> {
  await (await openSqliteStorage(path)).close(); // creates the database and its table where there is none yet
  const db = defaultBinding().open(path);
  try {
    db.exec("PRAGMA busy_timeout=5000");
    // The table is sqlite-storage.ts's (unstorage's db0 driver).
    db.prepare("ATTACH DATABASE ? AS seeded").run(staging);
    db.exec("BEGIN IMMEDIATE");
    db.exec(
      "INSERT OR REPLACE INTO inboxd (key, value, blob, created_at, updated_at) SELECT key, value, blob, created_at, updated_at FROM seeded.inboxd",
    );
    db.exec("COMMIT");
  } catch (error) {
    throw explainDatabaseError(error, path);
  } finally {
    db.close();
  }
}

/** An SQLite database file and its WAL and shared-memory files. */
function removeDatabase(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) rmSync(file, { force: true });
}
