import { homedir } from "node:os";
import { join } from "node:path";

/** `--data-dir`, else `INBOXD_DATA_DIR`, else the platform's per-user data directory. */
export function resolveDataDir(flag?: string): string {
  if (flag) return flag;
  if (process.env.INBOXD_DATA_DIR) return process.env.INBOXD_DATA_DIR;
  if (process.platform === "win32") return join(process.env.LOCALAPPDATA ?? join(homedir(), "AppData", "Local"), "inboxd");
  if (process.platform === "darwin") return join(homedir(), "Library", "Application Support", "inboxd");
  return join(process.env.XDG_DATA_HOME ?? join(homedir(), ".local", "share"), "inboxd");
}

export const databasePath = (dataDir: string) => join(dataDir, "inboxd.sqlite3");
