/**
 * One SQLite binding under one Node runtime, measured through the daemon's real storage (openSqliteStorage) and the
 * real seed. Run by bench/sqlite-bindings.ts, one process per binding and round; prints one JSON line.
 *   node --import tsx bench/sqlite-binding-worker.ts --binding default|node:sqlite|better-sqlite3-13 --dir DIR
 *        --chats N --messages N
 */
import { readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  betterSqlite3Binding,
  defaultBinding,
  nodeSqliteBinding,
  type SqliteBinding,
} from "../adapters/node/sqlite-binding.ts";
import { openSqliteStorage } from "../adapters/node/sqlite-storage.ts";
import { seedDataset } from "../src/seed/dataset.ts";
import { Db } from "../src/store/db.ts";
import { ROOT } from "./daemon.ts";

/** Point reads of random stored records, each timed. */
const READS = 20_000;
/** Commits shaped like a send (a message chunk, the chat record, a search-index segment), one after another. */
const COMMITS = 2_000;

const { values } = parseArgs({
  options: {
    binding: { type: "string" },
    dir: { type: "string" },
    chats: { type: "string" },
    messages: { type: "string" },
  },
});

function pickBinding(name: string | undefined): SqliteBinding {
  if (name === "default") return defaultBinding();
  if (name === "node:sqlite")
    return nodeSqliteBinding() ?? fail(`node:sqlite is not available on Node ${process.versions.node}`);
  if (name === "better-sqlite3-13") {
    // The candidate installed by the bench into bench/sqlite-candidates (not a dependency of inboxd).
    const manifest = join(ROOT, "bench/sqlite-candidates/package.json");
    const require = createRequire(manifest);
    const { version } = JSON.parse(readFileSync(require.resolve("better-sqlite3/package.json"), "utf8")) as {
      version: string;
    };
    return betterSqlite3Binding(require("better-sqlite3"), version);
  }
  return fail(`unknown --binding ${name}`);
}

function fail(message: string): never {
  throw new Error(message);
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function main() {
  const binding = pickBinding(values.binding);
  const dir = values.dir!;
  const path = join(dir, "inboxd.sqlite3");
  // A fixed "now", so every binding stores byte-identical records.
  const options = {
    chats: Number(values.chats),
    messages: Number(values.messages),
    accounts: 2,
    seed: 1,
    now: Date.UTC(2026, 0, 1),
  };

  // 1. The seed, as `inboxd seed` runs it: big group commits.
  let started = performance.now();
  let opened = await openSqliteStorage(path, binding);
  let db = await Db.open(opened.storage, { cacheBytes: 256 * 1024 * 1024 });
  await seedDataset(db, options);
  await opened.close();
  const seedSeconds = (performance.now() - started) / 1000;

  // 2. A restart: open the file and rebuild the in-memory chat table.
  started = performance.now();
  opened = await openSqliteStorage(path, binding);
  db = await Db.open(opened.storage);
  const openMs = performance.now() - started;
  const { storage } = opened;

  // 3. Listing every key (db0's LIKE scan), then timed point reads of random records.
  started = performance.now();
  const keys = await storage.getKeys("");
  const listMs = performance.now() - started;
  let state = 12345;
  const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const readUs: number[] = [];
  started = performance.now();
  for (let i = 0; i < READS; i++) {
    const key = keys[Math.floor(random() * keys.length)];
    const t = performance.now();
    await storage.getItem(key);
    readUs.push((performance.now() - t) * 1000);
  }
  const readsPerSecond = READS / ((performance.now() - started) / 1000);

  // 4. Small commits, one after another (what a lone client's sends cost in storage).
  const chunk = {
    messages: Array.from({ length: 32 }, (_, i) => ({
      id: `m${i}`,
      text: "a message of ordinary length, about sixty characters long",
    })),
  };
  const commitMs: number[] = [];
  started = performance.now();
  for (let i = 0; i < COMMITS; i++) {
    const t = performance.now();
    await storage.setItems<Record<string, unknown>>([
      { key: `bench:chunk:${i % 50}`, value: chunk },
      { key: `bench:chat:${i % 50}`, value: { title: `chat ${i % 50}`, lastActivity: i, unread: i % 7 } },
      { key: `bench:index:${i % 200}`, value: { ids: Array.from({ length: 64 }, (_, j) => i * 64 + j) } },
    ]);
    commitMs.push(performance.now() - t);
  }
  const commitsPerSecond = COMMITS / ((performance.now() - started) / 1000);
  await opened.close();

  readUs.sort((a, b) => a - b);
  commitMs.sort((a, b) => a - b);
  const sqliteVersion = (() => {
    const connection = binding.open(path);
    try {
      return (connection.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
    } finally {
      connection.close();
    }
  })();
  console.log(
    JSON.stringify({
      node: process.versions.node,
      binding: binding.name,
      version: binding.version,
      sqliteVersion,
      seedSeconds,
      seedMessagesPerSecond: options.messages / seedSeconds,
      openMs,
      keys: keys.length,
      listMs,
      readsPerSecond,
      readP50Us: percentile(readUs, 50),
      readP99Us: percentile(readUs, 99),
      commitsPerSecond,
      commitP50Ms: percentile(commitMs, 50),
      commitP99Ms: percentile(commitMs, 99),
      fileMB: (statSync(path).size + (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0)) / 1024 / 1024,
    }),
  );
}

main().catch((error) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
