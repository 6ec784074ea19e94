import { existsSync, mkdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { openSqliteStorage } from "./sqlite-storage.ts";
import { UsageError } from "./usage-error.ts";

/** The platform's per-user data directory, used when neither `--data-dir` nor `INBOXD_DATA_DIR` is given. */
export function defaultDataDir(): string {
  if (process.platform === "win32")
    return join(process.env.LOCALAPPDATA ?? join(homedir(), "AppData", "Local"), "inboxd");
  if (process.platform === "darwin") return join(homedir(), "Library", "Application Support", "inboxd");
  return join(process.env.XDG_DATA_HOME ?? join(homedir(), ".local", "share"), "inboxd");
}

/** `--data-dir`, else `INBOXD_DATA_DIR`, else the platform's per-user data directory. */
export function resolveDataDir(flag?: string): string {
  return flag || process.env.INBOXD_DATA_DIR || defaultDataDir();
}

export const databasePath = (dataDir: string) => join(dataDir, "inboxd.sqlite3");

/** For commands that write (serve, seed, token create, webhook add): the directory, created if missing. */
export function createDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // EEXIST: the path is a file; ENOTDIR: one of its parents is.
    if (code === "EEXIST" || code === "ENOTDIR") throw notADirectory(dataDir);
    throw new UsageError(
      `cannot create the data directory ${dataDir} (${code ?? (error as Error).message}): pass another with --data-dir DIR`,
      false,
    );
  }
}

/**
 * For commands that only read or remove (token list|revoke, webhook list|remove, open): they never create a data
 * directory or a database, so a mistyped --data-dir is reported instead of silently becoming a new, empty one.
 */
export function requireData(dataDir: string): void {
  if (fileOnPath(dataDir)) throw notADirectory(dataDir);
  if (!existsSync(databasePath(dataDir)))
    throw new UsageError(
      `${dataDir} holds no inboxd data yet: check --data-dir (or INBOXD_DATA_DIR), or start inboxd there once with inboxd serve`,
      false,
    );
}

const notADirectory = (dataDir: string) =>
  new UsageError(
    `the data directory ${dataDir} is not a directory (a file is in its place or on its path): pass a directory with --data-dir DIR`,
    false,
  );

/**
 * The data directory's store for a CLI command: created if `create`, else it must hold data already (see
 * requireData). A file that is not an SQLite database is reported with its path.
 */
export async function openDataDir(dataDir: string, options: { create: boolean }): ReturnType<typeof openSqliteStorage> {
  if (options.create) createDataDir(dataDir);
  else requireData(dataDir);
  try {
    return await openSqliteStorage(databasePath(dataDir));
  } catch (error) {
    throw explainDatabaseError(error, databasePath(dataDir));
  }
}

/** SQLite's "file is not a database" (or "malformed") as a usage error naming the file; other errors unchanged. */
export function explainDatabaseError(error: unknown, path: string): unknown {
  const { code, errcode, message } = error as { code?: string; errcode?: number; message?: string };
  // better-sqlite3 names the code (SQLITE_NOTADB, SQLITE_CORRUPT); node:sqlite gives the number (26, 11).
  const notADatabase = code === "SQLITE_NOTADB" || errcode === 26 || /file is not a database/.test(message ?? "");
  const corrupt = code === "SQLITE_CORRUPT" || errcode === 11 || /disk image is malformed/.test(message ?? "");
  if (!notADatabase && !corrupt) return error;
  return new UsageError(
    `${path} is ${notADatabase ? "not an SQLite database" : "a damaged SQLite database"}: move it away, or pass another directory with --data-dir DIR`,
    false,
  );
}

/**
 * Whether the path, or the nearest part of it that exists, is a file rather than a directory. Walked by hand:
 * `statSync(…, { throwIfNoEntry: false })` answers "missing" for a path below a file on Node 22+ but throws
 * ENOTDIR on Node 20.
 */
function fileOnPath(path: string): boolean {
  for (let at = resolve(path); ; at = dirname(at)) {
    try {
      return !statSync(at).isDirectory();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    }
    if (dirname(at) === at) return false;
  }
}
