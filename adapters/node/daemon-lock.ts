import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * `<data dir>/inboxd.pid` marks the data directory as served. The daemon keeps chats and indexes in memory, so a
 * second daemon, or `seed` writing behind the running one's back, would diverge from it: both refuse.
 */
const pidFile = (dataDir: string) => join(dataDir, "inboxd.pid");

/** The PID of a live daemon serving this directory, if any (a stale file from a crash does not count). */
export function runningDaemon(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile(dataDir), "utf8").trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else; still alive.
    return (error as NodeJS.ErrnoException).code === "EPERM" ? pid : undefined;
  }
}

export function lockDataDir(dataDir: string): () => void {
  const other = runningDaemon(dataDir);
  if (other) throw new Error(`another inboxd serve (pid ${other}) is using ${dataDir}`);
  writeFileSync(pidFile(dataDir), `${process.pid}\n`);
  return () => rmSync(pidFile(dataDir), { force: true });
}
