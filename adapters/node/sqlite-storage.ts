import type BetterSqlite3 from "better-sqlite3";
import { createDatabase } from "db0";
import sqlite from "db0/connectors/better-sqlite3";
import { createStorage, type Driver, type Storage } from "unstorage";
import db0Driver from "unstorage/drivers/db0";

// The db0 driver prints an "experimental" notice on first use; it is expected here, so silence it once.
(globalThis as Record<string, unknown>)["__unstorage_db0_experimental_warning__"] = true;

const TABLE = "inboxd";

/**
 * The daemon's storage: unstorage's db0 driver on SQLite (better-sqlite3). The db0 driver owns the table and every
 * operation; three things it lacks are added here:
 * - WAL journaling with synchronous=NORMAL: a commit is one append to the WAL, which survives `kill -9` of the
 *   process (the OS holds the bytes); `INBOXD_SQLITE_SYNC=FULL` also fsyncs each commit, for power-loss safety.
 * - `setItems` in one transaction, so each group commit of the store is atomic and costs one WAL append.
 * - prepared statements reused across calls for the hot paths (get, set): db0 prepares each statement anew,
 *   which was a sixth of the daemon's CPU time under load.
 */
export async function openSqliteStorage(path: string): Promise<{ storage: Storage; close(): Promise<void> }> {
  const database = createDatabase(sqlite({ path }));
  const sync = process.env.INBOXD_SQLITE_SYNC === "FULL" ? "FULL" : "NORMAL";
  await database.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=${sync}; PRAGMA busy_timeout=5000; PRAGMA cache_size=-16384;`);
  const base = db0Driver({ database, tableName: TABLE });
  await base.hasItem("", {}); // lets the db0 driver create its table before statements are prepared
  const sqliteDb = (await database.getInstance()) as BetterSqlite3.Database;
  const select = sqliteDb.prepare(`SELECT value FROM ${TABLE} WHERE key = ?`).pluck();
  const upsert = sqliteDb.prepare(
    `INSERT INTO ${TABLE} (key, value, created_at, updated_at) VALUES (?, ?, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = CURRENT_TIMESTAMP`,
  );
  const writeAll = sqliteDb.transaction((items: { key: string; value: string }[]) => {
    for (const item of items) upsert.run(item.key, item.value);
  });
  const driver: Driver = {
    ...base,
    name: "sqlite-wal",
    getItem: (key) => (select.get(key) as string | undefined) ?? null,
    setItem: (key, value) => {
      upsert.run(key, value);
    },
    setItems: (items: { key: string; value: string }[]) => {
      writeAll.immediate(items);
    },
  };
  const storage = createStorage({ driver });
  return {
    storage,
    async close() {
      await storage.dispose();
      await database.dispose();
    },
  };
}
