import { existsSync, mkdirSync } from "node:fs";
import cliProgress from "cli-progress";
import { seedDataset } from "../../src/seed/dataset.ts";
import { Db } from "../../src/store/db.ts";
import { databasePath } from "./data-dir.ts";
import { openSqliteStorage } from "./sqlite-storage.ts";
import { runningDaemon } from "./daemon-lock.ts";

export async function runSeed(dataDir: string, options: { chats: number; messages: number; accounts: number; seed: number }): Promise<number> {
  mkdirSync(dataDir, { recursive: true });
  const daemon = runningDaemon(dataDir);
  if (daemon) {
    console.error(`inboxd: a daemon (pid ${daemon}) is serving ${dataDir}; stop it before seeding`);
    return 1;
  }
  const path = databasePath(dataDir);
  const fresh = !existsSync(path);
  const { storage, close } = await openSqliteStorage(path);
  const started = Date.now();
  const bar = process.stderr.isTTY
    ? new cliProgress.SingleBar({ format: "seeding [{bar}] {percentage}% | {value}/{total} messages | {duration}s", stream: process.stderr }, cliProgress.Presets.shades_classic)
    : undefined;
  try {
    const db = await Db.open(storage, { cacheBytes: 256 * 1024 * 1024 });
    if (!fresh && (db.accounts.length || db.chats.size)) {
      console.error(`inboxd: ${dataDir} already holds data; seed needs an empty data directory`);
      return 1;
    }
    bar?.start(options.messages, 0);
    let lastLine = 0;
    await seedDataset(db, {
      ...options,
      onProgress: (done, total) => {
        bar?.update(done);
        if (!bar && Date.now() - lastLine > 5000) {
          lastLine = Date.now();
          console.error(`seeding: ${done}/${total} messages`);
        }
      },
    });
    bar?.stop();
    console.log(`seeded ${options.chats} chats, ${options.messages} messages, ${options.accounts} account(s) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return 0;
  } finally {
    bar?.stop();
    await close();
  }
}
