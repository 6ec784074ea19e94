import { createDatabase } from "db0";
import { createStorage, type Driver, type Storage } from "unstorage";
import db0Driver from "unstorage/drivers/db0";
import { defaultBinding, type SqliteBinding, type SqliteDatabase } from "./sqlite-binding.ts";

// The db0 driver prints an "experimental" notice on first use; it is expected here, so silence it once.
(globalThis as Record<string, unknown>).__unstorage_db0_experimental_warning__ = true;

const TABLE = "inboxd";

/**
 * The daemon's storage: unstorage's db0 driver on SQLite, through the runtime's binding (sqlite-binding.ts). The
 * db0 driver owns the table and every operation; three things it lacks are added here:
 * - WAL journaling with synchronous=NORMAL: a commit is one append to the WAL, which survives `kill -9` of the
 *   process (the OS holds the bytes); `INBOXD_SQLITE_SYNC=FULL` also fsyncs each commit, for power-loss safety.
 * - `setItems` in one transaction, so each group commit of the store is atomic and costs one WAL append.
 * - prepared statements reused across calls for the hot paths (get, set): db0 prepares each statement anew,
 *   which was a sixth of the daemon's CPU time under load.
 * - key listing by range on the primary key: db0's `LIKE 'prefix%'` reads the whole table (70 ms at start-up on
 *   10 million messages, for a listing that finds nothing).
 */
export async function openSqliteStorage(
  path: string,
  binding: SqliteBinding = defaultBinding(),
): Promise<{ storage: Storage; binding: SqliteBinding; close(): Promise<void> }> {
  const database = createDatabase(binding.connector(path));
  const sync = process.env.INBOXD_SQLITE_SYNC === "FULL" ? "FULL" : "NORMAL";
  const base = await untilNotLocked(async () => {
    // busy_timeout comes first: node:sqlite waits 0 ms by default, and switching to WAL needs a lock that another
    // process opening or closing the same file (a CLI command beside the daemon) can hold for a moment.
    await database.exec(
      `PRAGMA busy_timeout=${BUSY_TIMEOUT_MS}; PRAGMA journal_mode=WAL; PRAGMA synchronous=${sync}; PRAGMA cache_size=-16384;`,
    );
    // A new driver per attempt: db0's keeps a failed table set-up as failed.
    const driver = db0Driver({ database, tableName: TABLE });
    await driver.hasItem("", {}); // lets the db0 driver create its table before statements are prepared
    return driver;
  });
  const sqlite = (await database.getInstance()) as SqliteDatabase;
  const select = sqlite.prepare(`SELECT value FROM ${TABLE} WHERE key = ?`);
  const upsert = sqlite.prepare(
    `INSERT INTO ${TABLE} (key, value, created_at, updated_at) VALUES (?, ?, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = CURRENT_TIMESTAMP`,
  );
  // Every key under a prefix sorts from the prefix up to (not including) the prefix with its last character
  // raised by one; the callers' prefixes end in ":".
  const keysFrom = sqlite.prepare(`SELECT key FROM ${TABLE} WHERE key >= ? AND key < ?`);
  const allKeys = sqlite.prepare(`SELECT key FROM ${TABLE}`);
  const after = (prefix: string) => prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const driver: Driver = {
    ...base,
    name: "sqlite-wal",
    getItem: (key) => (select.get(key) as { value: string } | undefined)?.value ?? null,
    getKeys: (prefix = "") =>
      ((prefix ? keysFrom.all(prefix, after(prefix)) : allKeys.all()) as { key: string }[]).map((row) => row.key),
    setItem: (key, value) => {
      upsert.run(key, value);
    },
    setItems: (items: { key: string; value: string }[]) => {
      inTransaction(sqlite, () => {
        for (const item of items) upsert.run(item.key, item.value);
      });
    },
  };
  const storage = createStorage({ driver });
  return {
    storage,
    binding,
    async close() {
      await storage.dispose();
      await database.dispose();
    },
  };
}

const BUSY_TIMEOUT_MS = 5000;

/**
 * Runs the set-up of a new connection (the switch to WAL, the table's creation) again while SQLite answers "database
 * is locked", for up to the busy timeout. Until a new file is in WAL mode, SQLite refuses a lock that could deadlock
 * with another connection's at once, without waiting on busy_timeout: several processes opening one new data
 * directory together (CLI commands started side by side) then failed now and then. The set-up is idempotent.
 */
async function untilNotLocked<T>(setUp: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await setUp();
    } catch (error) {
      if (!/database is locked|SQLITE_BUSY/i.test(String((error as Error)?.message ?? error)) || Date.now() > deadline)
        throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(100, 5 * attempt) * (0.5 + Math.random())));
    }
  }
}

/** Runs `write` in one IMMEDIATE transaction (the write lock is taken up front, so it waits on busy_timeout). */
function inTransaction(sqlite: SqliteDatabase, write: () => void): void {
  sqlite.exec("BEGIN IMMEDIATE");
  try {
    write();
    sqlite.exec("COMMIT");
  } catch (error) {
    try {
      sqlite.exec("ROLLBACK");
    } catch {
      // SQLite may already have rolled the transaction back (e.g. after SQLITE_FULL); nothing is left to undo.
    }
    throw error;
  }
}
