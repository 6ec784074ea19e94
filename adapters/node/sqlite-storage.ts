import { createDatabase } from "db0";
import sqlite from "db0/connectors/better-sqlite3";
import { createStorage, type Driver, type Storage } from "unstorage";
import db0Driver from "unstorage/drivers/db0";

// The db0 driver prints an "experimental" notice on first use; it is expected here, so silence it once.
(globalThis as Record<string, unknown>)["__unstorage_db0_experimental_warning__"] = true;

/**
 * The daemon's storage: unstorage's db0 driver on SQLite (better-sqlite3), plus two things the driver lacks:
 * - WAL journaling with synchronous=NORMAL: a commit is one append to the WAL, which survives `kill -9` of the
 *   process (the OS holds the bytes); `INBOXD_SQLITE_SYNC=FULL` also fsyncs each commit, for power-loss safety.
 * - `setItems` in one transaction, so each group commit of the store is atomic and costs one WAL append.
 */
export async function openSqliteStorage(path: string): Promise<{ storage: Storage; close(): Promise<void> }> {
  const database = createDatabase(sqlite({ path }));
  const sync = process.env.INBOXD_SQLITE_SYNC === "FULL" ? "FULL" : "NORMAL";
  await database.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=${sync}; PRAGMA busy_timeout=5000; PRAGMA cache_size=-65536;`);
  const base = db0Driver({ database, tableName: "inboxd" });
  const driver: Driver = {
    ...base,
    name: "sqlite-wal",
    async setItems(items: { key: string; value: string }[]) {
      await database.exec("BEGIN IMMEDIATE");
      try {
        for (const item of items) await base.setItem!(item.key, item.value, {});
        await database.exec("COMMIT");
      } catch (error) {
        await database.exec("ROLLBACK");
        throw error;
      }
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
