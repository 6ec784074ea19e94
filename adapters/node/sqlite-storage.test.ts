import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStorage } from "./sqlite-storage.ts";
import { defaultBinding } from "./sqlite-binding.ts";

const ROOT = join(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "inboxd-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function openCloseLoop(path: string, rounds: number): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/children/open-close-storage.ts", path, `${rounds}`], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, output })));
}

describe(`SQLite storage (${defaultBinding().name})`, () => {
  // Opening switches the file to WAL, which takes a lock that another process opening or closing the file holds
  // for a moment. node:sqlite waits 0 ms for a lock unless told otherwise, so without busy_timeout set before that
  // switch, two CLI commands started together failed now and then with "database is locked".
  it("opens and closes the same file from four processes at once without a locked-database error", async () => {
    const path = join(dir, "shared.sqlite");
    const runs = await Promise.all([1, 2, 3, 4].map(() => openCloseLoop(path, 25)));
    expect(runs.map((run) => run.output)).toEqual(["", "", "", ""]);
    expect(runs.map((run) => run.code)).toEqual([0, 0, 0, 0]);
    const { storage, close } = await openSqliteStorage(path);
    expect(await storage.getKeys("round:")).toHaveLength(100);
    await close();
  }, 60_000);
});
