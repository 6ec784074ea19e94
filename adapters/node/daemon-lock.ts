import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { explainDatabaseError } from "./data-dir.ts";
import { defaultBinding, type SqliteDatabase } from "./sqlite-binding.ts";

/**
 * The data-dir lock. The daemon keeps chats and indexes in memory, so a second daemon, or `seed` writing behind the
 * running one's back, would diverge from it: `serve` and `seed` each hold the lock while they run, and refuse to
 * start while another holds it. `token`, `webhook` and `open` never take it: they work beside a running daemon.
 *
 * The lock is a write lock on a small SQLite database of its own, `<data dir>/inboxd.lock` (never on the data,
 * which other commands must keep reading and writing): a transaction begun with BEGIN IMMEDIATE and kept open. The
 * OS file lock SQLite takes for it belongs to the process, so the kernel drops it when the process ends in any way
 * (exit, crash, SIGKILL, power loss): a leftover file never blocks a start, whatever PIDs are alive later. Another
 * process asking for it gets SQLITE_BUSY at once (busy_timeout 0), so of two simultaneous starts exactly one wins.
 *
 * Who holds it (command, PID, since when) is a row of that database, only for the refusal message: the holder
 * commits it and then begins the transaction it keeps, and another process can still read it while the lock is held
 * (a RESERVED lock admits readers).
 */
const lockPath = (dataDir: string) => join(dataDir, "inboxd.lock");

export interface LockHolder {
  command: string;
  pid: number;
  since: string;
}

/**
 * Takes the data dir's lock for `command` until the returned release is called or the process ends. Throws, naming
 * the holder, while another process holds it.
 */
export function lockDataDir(dataDir: string, command: "serve" | "seed"): () => void {
  // Older versions marked a served directory with inboxd.pid; the lock below replaces it.
  rmSync(join(dataDir, "inboxd.pid"), { force: true });
  const path = lockPath(dataDir);
  let db: SqliteDatabase | undefined;
  try {
    db = defaultBinding().open(path);
    db.exec("PRAGMA busy_timeout=0");
    db.exec("BEGIN IMMEDIATE");
    db.exec(
      "CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY CHECK (id = 1), command TEXT, pid INTEGER, since TEXT)",
    );
    db.prepare("INSERT OR REPLACE INTO holder VALUES (1, ?, ?, ?)").run(command, process.pid, new Date().toISOString());
    db.exec("PRAGMA busy_timeout=2000"); // the commit waits for a refused process that is reading the row
    db.exec("COMMIT");
    db.exec("PRAGMA busy_timeout=0");
    // Another process may take the lock between the commit and this: then it holds it, and this one gives up.
    db.exec("BEGIN IMMEDIATE");
  } catch (error) {
    const holder = db && busy(error) ? readHolder(db) : undefined;
    db?.close();
    if (!busy(error)) throw explainDatabaseError(error, path);
    // The row may still be this process's own, when another took the lock right after this one wrote it.
    const who =
      holder && holder.pid !== process.pid
        ? `inboxd ${holder.command} (pid ${holder.pid}, since ${holder.since})`
        : "inboxd";
    throw new Error(
      `another ${who} is using ${dataDir}; stop it ${command === "seed" ? "before seeding" : "first, or pass another --data-dir"}`,
    );
  }
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    db.close(); // ends the transaction and with it the lock
  };
}

/** Who holds the data dir's lock ("unknown" if the row cannot be read), or undefined when nobody does. */
export function lockHolder(dataDir: string): LockHolder | "unknown" | undefined {
  if (!existsSync(lockPath(dataDir))) return undefined;
  const db = defaultBinding().open(lockPath(dataDir));
  try {
    db.exec("PRAGMA busy_timeout=0");
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
    return undefined;
  } catch (error) {
    if (!busy(error)) throw error;
    return readHolder(db) ?? "unknown";
  } finally {
    db.close();
  }
}

function readHolder(db: SqliteDatabase): LockHolder | undefined {
  try {
    db.exec("PRAGMA busy_timeout=200"); // the holder's own commit of this row locks readers out for an instant
    return db.prepare("SELECT command, pid, since FROM holder WHERE id = 1").get() as LockHolder | undefined;
  } catch {
    return undefined; // only for the message: no row yet, or still busy
  }
}

/** SQLITE_BUSY, from better-sqlite3 (by name) or node:sqlite (errcode 5). */
function busy(error: unknown): boolean {
  const { code, errcode, message } = error as { code?: string; errcode?: number; message?: string };
  return code === "SQLITE_BUSY" || errcode === 5 || /database is locked/.test(message ?? "");
}

const urlPath = (dataDir: string) => join(dataDir, "inboxd.url");

/**
 * Says where the daemon serving the data dir listens, for `inboxd open` (which must link to that daemon, whatever
 * port it was given). Written whole (a rename) once listening; `release` removes it. A leftover from a crash is
 * harmless: servingURL believes it only while a `serve` holds the lock.
 */
export function announceURL(dataDir: string, url: string): () => void {
  const path = urlPath(dataDir);
  writeFileSync(`${path}.tmp`, `${url}\n`);
  renameSync(`${path}.tmp`, path);
  return () => rmSync(path, { force: true });
}

/** The URL of the daemon serving the data dir, or undefined when none does (or it has not said yet). */
export function servingURL(dataDir: string): string | undefined {
  const holder = lockHolder(dataDir);
  if (holder === undefined || (holder !== "unknown" && holder.command !== "serve")) return undefined;
  try {
    return readFileSync(urlPath(dataDir), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}
