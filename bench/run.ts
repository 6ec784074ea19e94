/**
 * npm run bench: seeds a data set, starts the daemon, measures each endpoint next to a bare node:http server
 * answering a same-size body, and prints p50/p95/p99 latency, requests/s and the targets of the issue.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { cpuSeconds, createToken, killAll, memory, runCli, startBaseline, startDaemon, type Daemon } from "./daemon.ts";
import { LoadGenerator, type LoadResult, type RequestSpec } from "./load.ts";
import { formatReport, type Row } from "./report.ts";
import { buildWorkload } from "./workload.ts";

const HELP = `Usage: npm run bench -- [options]

Seeds a data set, starts inboxd, and measures each endpoint (p50/p95/p99 latency, requests/s) next to a bare
node:http server answering a body of the same size, against the targets for 10,000 chats / 1,000,000 messages.

  --chats N          chats to seed (default 10000)
  --messages N       messages to seed (default 1000000)
  --accounts N       accounts to seed (default 2)
  --quick            smoke run: 1000 chats, 50000 messages, 2 s per measurement (unless given explicitly)
  --duration S       seconds measured per endpoint (default 5)
  --warmup S         seconds of discarded warm-up per endpoint (default 1)
  --concurrency N    concurrent clients for the read endpoints (default 8)
  --keep DIR         seed into DIR and keep it; if DIR already holds inboxd.sqlite3, skip the seed and reuse it
                     (sends of earlier runs stay in it)
  --json FILE        also write the results as JSON
  -h, --help         this help

Exit code is 0 whether or not targets are met (MISS rows are marked); non-zero only if the benchmark fails.`;

const { values: opts } = parseArgs({
  options: {
    chats: { type: "string" },
    messages: { type: "string" },
    accounts: { type: "string", default: "2" },
    quick: { type: "boolean", default: false },
    duration: { type: "string" },
    warmup: { type: "string", default: "1" },
    concurrency: { type: "string", default: "8" },
    keep: { type: "string" },
    json: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (opts.help) {
  console.log(HELP);
  process.exit(0);
}
const num = (raw: string | undefined, fallback: number) => {
  const n = raw === undefined ? fallback : Number(raw);
  if (!(n > 0)) throw new Error(`expected a positive number, got ${raw}`);
  return n;
};
const chats = num(opts.chats, opts.quick ? 1000 : 10_000);
const messages = num(opts.messages, opts.quick ? 50_000 : 1_000_000);
const accounts = num(opts.accounts, 2);
const duration = num(opts.duration, opts.quick ? 2 : 5);
const warmup = num(opts.warmup, 1);
const readConcurrency = num(opts.concurrency, 8);

const RESTARTS = 3;
const log = (line: string) => console.error(`[bench] ${line}`);
const dir = opts.keep ? resolve(opts.keep) : mkdtempSync(join(os.tmpdir(), "inboxd-bench-"));
const bodyFile = join(os.tmpdir(), `inboxd-bench-body-${process.pid}.json`);
let daemon: Daemon | undefined;
const generator = new LoadGenerator();

function cleanup() {
  generator.close();
  killAll();
  rmSync(bodyFile, { force: true });
  if (!opts.keep) rmSync(dir, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => { cleanup(); process.exit(130); });

async function main() {
  // Seed (wall clock of the CLI command), token, first start.
  let seedSeconds: number | undefined;
  if (existsSync(join(dir, "inboxd.sqlite3"))) log(`reusing ${dir} (no seed)`);
  else {
    log(`seeding ${chats} chats, ${messages} messages, ${accounts} accounts into ${dir}`);
    const args = ["seed", "--data-dir", dir, "--chats", String(chats), "--messages", String(messages), "--accounts", String(accounts), "--seed", "1"];
    seedSeconds = (await runCli(args)).seconds;
    log(`seeded in ${seedSeconds.toFixed(1)} s`);
  }
  const token = await createToken(dir);
  daemon = await startDaemon(dir, token);
  const firstReadyMs = daemon.readyMs;
  log(`daemon pid ${daemon.pid} ready in ${firstReadyMs.toFixed(0)} ms at ${daemon.url}`);

  const work = await buildWorkload(daemon.url, token);
  log(`workload: ${work.chatIDs.length} chats, ${work.rareWords.length} rare words (of ${work.rareTries} tried: ${work.rareWords.slice(0, 6).map((w) => `${w.word}×${w.hits}`).join(" ")} …), account ${work.accountID}, dateAfter ${work.dateAfter}`);

  /** Runs one phase; the row also gets the server's CPU use (% of one core) and RSS after the phase. */
  const measure = async (name: string, pid: number, url: string, requests: RequestSpec[], concurrency: number, auth = true) => {
    log(`${name} (c=${concurrency}, ${warmup} s warm-up + ${duration} s)`);
    const cpu = cpuSeconds(pid), started = performance.now();
    const result = await generator.run({ url, token: auth ? token : undefined, requests, concurrency, warmupSeconds: warmup, durationSeconds: duration });
    const cpuPct = ((cpuSeconds(pid) - cpu) / ((performance.now() - started) / 1000)) * 100;
    return { name, result, cpuPct, rssMB: memory(pid).rssMB };
  };
  writeFileSync(bodyFile, work.chatsBody);
  const baselineServer = await startBaseline(bodyFile);
  const bare = await measure(`  bare node:http, same ${work.chatsBody.length} B body`, baselineServer.pid, baselineServer.url, [{ method: "GET", path: "/" }], readConcurrency, false);
  await baselineServer.stop();

  const r = work.requests;
  const loads: Row[] = [];
  const add = (row: Row, target: string, pass: boolean) => loads.push({ ...row, target, pass: pass && row.result!.errors === 0 });
  const chatsList = await measure("GET /v1/chats", daemon.pid, daemon.url, r.chats, readConcurrency);
  const share = chatsList.result.rps / bare.result.rps;
  add(chatsList, `p99 ≤ 10 ms, ≥ 30 % of bare (${(share * 100).toFixed(0)} %)`, chatsList.result.p99 <= 10 && share >= 0.3);
  loads.push(bare);
  const p99 = (limit: number) => (x: LoadResult) => x.p99 <= limit;
  const p95 = (limit: number) => (x: LoadResult) => x.p95 <= limit;
  const phases: [string, RequestSpec[], number, string, (x: LoadResult) => boolean][] = [
    ["GET /v1/chats/{id}/messages", r.messages, readConcurrency, "p99 ≤ 10 ms", p99(10)],
    ["GET /v1/chats/{id}", r.chat, readConcurrency, "p99 ≤ 10 ms", p99(10)],
    ["search: one rare word", r.searchRare, readConcurrency, "p95 ≤ 20 ms", p95(20)],
    ["search: two common words", r.searchCommon, readConcurrency, "p95 ≤ 50 ms", p95(50)],
    ["search: word + accountIDs + dateAfter", r.searchFiltered, readConcurrency, "p95 ≤ 50 ms", p95(50)],
    ["POST send, alone", r.send, 1, "p99 ≤ 20 ms", p99(20)],
    ["POST send, 16 clients", r.send, 16, "≥ 1,000 sends/s", (x) => x.rps >= 1000],
  ];
  for (const [name, requests, concurrency, target, ok] of phases) {
    const row = await measure(name, daemon.pid, daemon.url, requests, concurrency);
    add(row, target, ok(row.result));
  }
  const afterLoad = memory(daemon.pid);

  // Restarts: SIGTERM, spawn again, time to the first answered GET /v1/chats; the median of RESTARTS (noisy machine).
  const restartsMs: number[] = [];
  let atReady = afterLoad;
  for (let i = 0; i < RESTARTS; i++) {
    log(`restarting the daemon (${i + 1}/${RESTARTS})`);
    await daemon.stop();
    daemon = await startDaemon(dir, token);
    restartsMs.push(daemon.readyMs);
    if (i === 0) atReady = memory(daemon.pid);
  }
  await daemon.stop();
  daemon = undefined;
  const readyMs = [...restartsMs].sort((a, b) => a - b)[Math.floor(RESTARTS / 2)];

  const mb = (x: number) => `${x.toFixed(0)} MB`;
  const scalars: Row[] = [
    seedSeconds === undefined
      ? { name: "seed", value: "skipped (--keep)" }
      : { name: `seed ${chats} chats / ${messages} messages`, value: `${seedSeconds.toFixed(1)} s`, target: "≤ 120 s", pass: seedSeconds <= 120 },
    { name: `daemon ready after restart, median of ${RESTARTS}`, value: `${readyMs.toFixed(0)} ms`, target: "≤ 2 s", pass: readyMs <= 2000 },
    { name: "  each restart", value: restartsMs.map((x) => x.toFixed(0)).join(" / ") + " ms" },
    { name: "daemon ready, first start", value: `${firstReadyMs.toFixed(0)} ms` },
    { name: "RSS peak during load (VmHWM)", value: mb(afterLoad.peakMB), target: "≤ 400 MB", pass: afterLoad.peakMB <= 400 },
    { name: "RSS after load (VmRSS)", value: mb(afterLoad.rssMB), target: "≤ 400 MB", pass: afterLoad.rssMB <= 400 },
    { name: "RSS after the first restart, ready", value: mb(atReady.rssMB) },
  ];
  console.log(`\ninboxd benchmark: ${opts.keep && seedSeconds === undefined ? `reused ${dir}` : `${chats} chats, ${messages} messages, ${accounts} accounts`}; ` +
    `${duration} s per measurement after ${warmup} s warm-up; ${os.cpus().length} CPUs, node ${process.version}\n`);
  console.log(formatReport(loads, scalars));

  if (opts.json) {
    const json = {
      date: new Date().toISOString(),
      options: { chats, messages, accounts, duration, warmup, readConcurrency, reusedDir: seedSeconds === undefined },
      seedSeconds,
      readyMs: { firstStart: firstReadyMs, restartMedian: readyMs, restarts: restartsMs },
      memoryMB: { afterLoad, atReady },
      workload: { chats: work.chatIDs.length, rareWords: work.rareWords, accountID: work.accountID, dateAfter: work.dateAfter, chatsBodyBytes: work.chatsBody.length },
      endpoints: loads.map(({ name, result, target, pass, cpuPct, rssMB }) => ({ name: name.trim(), target, pass, serverCpuPct: cpuPct, serverRssMB: rssMB, ...result })),
      scalars,
    };
    writeFileSync(opts.json, JSON.stringify(json, null, 2));
    log(`wrote ${opts.json}`);
  }
}

main()
  .catch((error) => {
    console.error(`bench failed: ${error instanceof Error ? error.stack : error}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await daemon?.stop().catch(() => undefined);
    cleanup();
  });
