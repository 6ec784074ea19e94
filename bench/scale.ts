/**
 * npm run bench -- --scale: the daemon at two data-set sizes side by side — 10,000 chats / 1,000,000 messages and
 * 100,000 chats / 10,000,000 messages (`inboxd seed --accounts 3 --seed 11`) — with bare node:http in the same run,
 * and the Worker's Durable Object in workerd at 1M (bench/worker-scale.ts). One size at a time: its data dir is
 * seeded, measured and deleted before the next is seeded (the 10M one takes several GB).
 *
 * Per size: the seed (wall clock of the CLI process, and its peak RSS, VmHWM polled every 200 ms while it lives); a
 * first start, then RESTARTS restarts (ms from spawn to the first 200 on GET /v1/chats, each listed); the RSS of the
 * serving process tree (the daemon and any descendants) idle after the last restart and after the load; GET /v1/chats
 * at 16 connections beside bare node:http answering the same bytes; search for two common words at 4; sends at 16 to
 * one chat and spread over 16 chats (a 13-word text); then how long requests wait while a new chat snapshot is
 * written (bench/resnapshot.ts); the data dir's size on disk. Printed by bench/scale-report.ts.
 */
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { childrenRunning, cpuSeconds, createToken, descendants, machineBusySeconds, median, memory, ROOT, spawnNode, startBaseline, startDaemon, type Daemon } from "./daemon.ts";
import { LoadGenerator, type LoadResult, type RequestSpec } from "./load.ts";
import { measureResnapshot, type ResnapshotResult } from "./resnapshot.ts";
import { COMMON_WORDS, listChatIDs, segment } from "./workload.ts";
import { killWorkerScale, runWorkerScale, type WorkerScaleResult } from "./worker-scale.ts";

/** The --only values of scale mode: the daemon at each size, and the Durable Object in workerd. */
export const SCALE_SECTIONS = ["scale", "worker-scale"] as const;

export interface ScaleSize {
  /** "1m", "10m" (with --quick "1m-quick", "10m-quick") or "CHATSxMESSAGES"; also the name of its dir under --scale-dir. */
  key: string;
  /** "1M / 10k chats". */
  label: string;
  chats: number;
  messages: number;
}

const NAMED: Record<string, { chats: number; messages: number }> = {
  "1m": { chats: 10_000, messages: 1_000_000 },
  "10m": { chats: 100_000, messages: 10_000_000 },
};
/** --quick: the same two shapes, small enough for a smoke run. */
const QUICK: Record<string, { chats: number; messages: number }> = {
  "1m": { chats: 2_000, messages: 50_000 },
  "10m": { chats: 20_000, messages: 500_000 },
};

const short = (n: number) => (n >= 1e6 ? `${+(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : String(n));

/** "1m", "10m" or "CHATSxMESSAGES" (e.g. 2000x50000). */
export function parseSize(text: string, quick: boolean): ScaleSize {
  const name = text.trim().toLowerCase();
  const custom = /^(\d+)x(\d+)$/.exec(name);
  const dims = custom ? { chats: Number(custom[1]), messages: Number(custom[2]) } : (quick ? QUICK : NAMED)[name];
  if (!dims || !(dims.chats > 0) || !(dims.messages >= 0)) throw new Error(`--scale-sizes: unknown size ${text} (expected 1m, 10m or CHATSxMESSAGES)`);
  const key = custom ? `${dims.chats}x${dims.messages}` : quick ? `${name}-quick` : name;
  return { key, label: `${short(dims.messages)} / ${short(dims.chats)} chats`, ...dims };
}

/** CPU during one load phase (warm-up included), % of one core. */
export interface PhaseCpu {
  /** The server's process tree. */
  server: number;
  generator: number;
  /** This process (and, for the Worker, Miniflare's part that runs in here). */
  bench: number;
  /** Everything else on the machine (the machine is shared). */
  others: number;
}

export interface Phase {
  name: string;
  result: LoadResult;
  cpu: PhaseCpu;
  /** RSS of the server's process tree after the phase. */
  serverRssMB: number;
}

export interface ScaleSizeResult {
  size: ScaleSize;
  dir: string;
  /** Undefined: the seed was skipped (a data dir from an earlier run under --scale-dir). */
  seed?: { seconds: number; peakRssMB: number };
  disk: { afterSeedBytes: number; afterRunBytes: number };
  firstStartMs: number;
  restartsMs: number[];
  readyMedianMs: number;
  rss: { idleMB: number; idleProcesses: number; afterLoadMB: number; daemonPeakMB: number };
  chatsBodyBytes: number;
  sendText: string;
  phases: { bare: Phase; chats: Phase; search: Phase; sendOne: Phase; sendSpread: Phase };
  /** Requests' waits while a new chat snapshot is written (bench/resnapshot.ts); absent in results of older runs. */
  resnapshot?: ResnapshotResult;
  /** 1-minute load average before and after this size (the machine is shared). */
  loadavg: { before: number; after: number };
  seconds: number;
}

export interface ScaleSizeFailure {
  size: ScaleSize;
  error: string;
}

export interface ScaleRun {
  date: string;
  quick: boolean;
  cpus: number;
  warmupSeconds: number;
  durationSeconds: number;
  restarts: number;
  sizes: (ScaleSizeResult | ScaleSizeFailure)[];
  worker?: WorkerScaleResult | { size: ScaleSize; error: string };
  seconds: number;
}

export const RESTARTS = 3;
/** Pause after the last restart before the idle RSS reading. */
const IDLE_SETTLE_MS = 2000;
export const READ_CONCURRENCY = 16;
export const SEARCH_CONCURRENCY = 4;
export const SEND_CONCURRENCY = 16;
export const SPREAD_CHATS = 16;
/** 13 words, the counter included. */
export const SEND_TEXT = "bench message {n}: see you at the station tomorrow morning before the train";
const CLI = join(ROOT, "adapters/node/cli.ts");

/** Temp dirs of this run (not --scale-dir ones), removed by cleanupScale() if the bench is interrupted. */
const tempDirs = new Set<string>();

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

/** For an interrupted bench: workerd killed by PID, temp dirs removed. */
export function cleanupScale(): void {
  killWorkerScale();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

const statusKB = (pid: number, key: string) => {
  try {
    return Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0; // gone meanwhile
  }
};

/** Summed VmRSS of `pids` and all their descendants, MB. */
export function treeRss(...pids: number[]): { mb: number; processes: number } {
  const all = [...new Set(pids.flatMap((pid) => [pid, ...descendants(pid)]))];
  return { mb: all.reduce((sum, pid) => sum + statusKB(pid, "VmRSS"), 0) / 1024, processes: all.length };
}

/** Summed VmHWM (peak RSS so far) of `pids` and their descendants, MB. */
export function treePeak(...pids: number[]): number {
  const all = [...new Set(pids.flatMap((pid) => [pid, ...descendants(pid)]))];
  return all.reduce((sum, pid) => sum + statusKB(pid, "VmHWM"), 0) / 1024;
}

function treeCpu(pids: number[]): number {
  return [...new Set(pids.flatMap((pid) => [pid, ...descendants(pid)]))].reduce((sum, pid) => {
    try {
      return sum + cpuSeconds(pid);
    } catch {
      return sum;
    }
  }, 0);
}

/** Bytes the files under `path` take on disk (allocated blocks). */
export function diskBytes(path: string): number {
  let stat;
  try {
    stat = lstatSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.blocks * 512;
  return readdirSync(path).reduce((sum, name) => sum + diskBytes(join(path, name)), stat.blocks * 512);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One load phase against `serverPids`' URL, with the CPU of the server's process tree, the generator, this process
 * and every other process over it.
 */
export async function measurePhase(
  generator: LoadGenerator,
  o: { name: string; serverPids: number[]; url: string; token?: string; requests: RequestSpec[]; concurrency: number; warmupSeconds: number; durationSeconds: number; log: (line: string) => void },
): Promise<Phase> {
  o.log(`${o.name} (c=${o.concurrency}, ${o.warmupSeconds} s warm-up + ${o.durationSeconds} s)`);
  const generatorPids = childrenRunning((argv) => argv.some((arg) => arg.endsWith("load-worker.ts")));
  const sample = () => ({ at: performance.now(), server: treeCpu(o.serverPids), generator: treeCpu(generatorPids), machine: machineBusySeconds() });
  const before = sample(), benchBefore = process.cpuUsage();
  const result = await generator.run({ url: o.url, token: o.token, requests: o.requests, concurrency: o.concurrency, warmupSeconds: o.warmupSeconds, durationSeconds: o.durationSeconds });
  const after = sample(), bench = process.cpuUsage(benchBefore);
  const pct = (seconds: number) => (seconds / ((after.at - before.at) / 1000)) * 100;
  const cpu: PhaseCpu = { server: pct(after.server - before.server), generator: pct(after.generator - before.generator), bench: pct((bench.user + bench.system) / 1e6), others: 0 };
  cpu.others = Math.max(0, pct(after.machine - before.machine) - cpu.server - cpu.generator - cpu.bench);
  const phase = { name: o.name, result, cpu, serverRssMB: treeRss(...o.serverPids).mb };
  o.log(`  p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ${Math.round(result.rps)} req/s, ${result.errors} errors; CPU server ${cpu.server.toFixed(0)} %, other processes ${cpu.others.toFixed(0)} %`);
  if (result.errors) o.log(`  errors: ${JSON.stringify(result.statuses)} first: ${result.firstError}`);
  return phase;
}

/**
 * What the scale phases need, from the seeded data: the first GET /v1/chats page byte for byte (the baseline answers
 * with it), chat IDs (bench/workload.ts's shuffled order, Echo chats apart) and the two-common-words searches (every
 * pair of COMMON_WORDS, as bench/workload.ts's searchCommon). Not buildWorkload itself: its rare-word hunt costs
 * up to 1,500 searches that no scale phase uses.
 */
export async function scaleWorkload(url: string, token: string) {
  const res = await fetch(`${url}/v1/chats`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`GET /v1/chats answered ${res.status}`);
  const chatsBody = Buffer.from(await res.arrayBuffer());
  const { chatIDs, echoChatIDs } = await listChatIDs(url, token);
  const pairs = COMMON_WORDS.flatMap((a, i) => COMMON_WORDS.slice(i + 1).map((b) => `${a} ${b}`));
  const get = (path: string): RequestSpec => ({ method: "GET", path });
  return {
    chatsBody,
    chatIDs,
    echoChatIDs,
    requests: {
      chats: [get("/v1/chats")],
      searchCommon: pairs.map((query) => get(`/v1/messages/search?${new URLSearchParams({ query })}`)),
    },
  };
}

/** `inboxd seed` as a child process; its VmHWM is read every 200 ms while it lives (the last reading is its peak). */
async function seed(dir: string, size: ScaleSize, accounts: number, seedValue: number, log: (line: string) => void) {
  const args = ["seed", "--data-dir", dir, "--chats", String(size.chats), "--messages", String(size.messages), "--accounts", String(accounts), "--seed", String(seedValue)];
  log(`inboxd ${args.join(" ")}`);
  const started = performance.now();
  const child = spawnNode(CLI, args);
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    for (const line of chunk.toString().split("\n")) if (line.trim()) log(`  seed: ${line.trim()}`);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  let peakMB = 0;
  const poll = () => {
    if (child.pid && child.exitCode === null) peakMB = Math.max(peakMB, treePeak(child.pid));
  };
  const timer = setInterval(poll, 200);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearInterval(timer);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`inboxd seed exited with ${code} after ${seconds.toFixed(1)} s (peak RSS ${peakMB.toFixed(0)} MB):\n${output}`);
  return { seconds, peakRssMB: peakMB };
}

/** One size: seed (unless reused), restarts, memory, load phases, disk. */
export async function runScaleSize(o: {
  size: ScaleSize;
  dir: string;
  accounts: number;
  seed: number;
  warmupSeconds: number;
  durationSeconds: number;
  generator: LoadGenerator;
  log: (line: string) => void;
}): Promise<ScaleSizeResult> {
  const log = (line: string) => o.log(`${o.size.key}: ${line}`);
  const started = performance.now();
  const loadBefore = os.loadavg()[0];
  let seedResult: ScaleSizeResult["seed"];
  if (existsSync(join(o.dir, "inboxd.sqlite3"))) log(`reusing ${o.dir} (no seed)`);
  else {
    mkdirSync(o.dir, { recursive: true });
    seedResult = await seed(o.dir, o.size, o.accounts, o.seed, log);
    log(`seeded in ${seedResult.seconds.toFixed(1)} s, peak RSS ${seedResult.peakRssMB.toFixed(0)} MB`);
  }
  const afterSeedBytes = diskBytes(o.dir);
  const token = await createToken(o.dir);
  let daemon: Daemon | undefined = await startDaemon(o.dir, token);
  try {
    const firstStartMs = daemon.readyMs;
    log(`first start: ready in ${firstStartMs.toFixed(0)} ms (pid ${daemon.pid})`);
    const restartsMs: number[] = [];
    for (let i = 0; i < RESTARTS; i++) {
      await daemon.stop();
      daemon = undefined;
      daemon = await startDaemon(o.dir, token);
      restartsMs.push(daemon.readyMs);
      log(`restart ${i + 1}/${RESTARTS}: ready in ${daemon.readyMs.toFixed(0)} ms (pid ${daemon.pid})`);
    }
    await sleep(IDLE_SETTLE_MS);
    const idle = treeRss(daemon.pid);
    log(`idle RSS of the daemon's process tree: ${idle.mb.toFixed(0)} MB (${idle.processes} process${idle.processes === 1 ? "" : "es"})`);

    const work = await scaleWorkload(daemon.url, token);
    const targets = work.chatIDs.filter((id) => !work.echoChatIDs.includes(id));
    if (targets.length < SPREAD_CHATS) throw new Error(`only ${targets.length} chats besides the Echo chats; the spread sends need ${SPREAD_CHATS}`);
    const body = JSON.stringify({ text: SEND_TEXT });
    const send = (id: string): RequestSpec => ({ method: "POST", path: `/v1/chats/${segment(id)}/messages`, body });
    const phase = (name: string, pids: number[], url: string, requests: RequestSpec[], concurrency: number, auth = true) =>
      measurePhase(o.generator, { name, serverPids: pids, url, token: auth ? token : undefined, requests, concurrency, warmupSeconds: o.warmupSeconds, durationSeconds: o.durationSeconds, log });

    const bodyFile = join(os.tmpdir(), `inboxd-scale-body-${process.pid}.json`);
    writeFileSync(bodyFile, work.chatsBody);
    let bare: Phase;
    try {
      const baseline = await startBaseline(bodyFile);
      try {
        bare = await phase(`bare node:http, same ${work.chatsBody.length} B body`, [baseline.pid], baseline.url, [{ method: "GET", path: "/" }], READ_CONCURRENCY, false);
      } finally {
        await baseline.stop();
      }
    } finally {
      rmSync(bodyFile, { force: true });
    }
    const pid = [daemon.pid];
    const chats = await phase("GET /v1/chats", pid, daemon.url, work.requests.chats, READ_CONCURRENCY);
    const search = await phase("search: two common words", pid, daemon.url, work.requests.searchCommon, SEARCH_CONCURRENCY);
    const sendOne = await phase("POST send, one chat", pid, daemon.url, [send(targets[0])], SEND_CONCURRENCY);
    const sendSpread = await phase(`POST send, ${SPREAD_CHATS} chats`, pid, daemon.url, targets.slice(0, SPREAD_CHATS).map(send), SEND_CONCURRENCY);
    const afterLoad = treeRss(daemon.pid);
    const daemonPeakMB = memory(daemon.pid).peakMB;
    // After the RSS figures: it is not part of the load they are judged on.
    const resnapshot = await measureResnapshot(daemon.url, token, SEND_TEXT);
    log(`re-snapshot: ${resnapshot.chats} chats changed in ${resnapshot.sendSeconds.toFixed(1)} s; longest wait ${resnapshot.max.toFixed(1)} ms`);
    await daemon.stop();
    daemon = undefined;
    const result: ScaleSizeResult = {
      size: o.size,
      dir: o.dir,
      seed: seedResult,
      disk: { afterSeedBytes, afterRunBytes: diskBytes(o.dir) },
      firstStartMs,
      restartsMs,
      readyMedianMs: median(restartsMs),
      rss: { idleMB: idle.mb, idleProcesses: idle.processes, afterLoadMB: afterLoad.mb, daemonPeakMB },
      chatsBodyBytes: work.chatsBody.length,
      sendText: SEND_TEXT,
      phases: { bare, chats, search, sendOne, sendSpread },
      resnapshot,
      loadavg: { before: loadBefore, after: os.loadavg()[0] },
      seconds: (performance.now() - started) / 1000,
    };
    return result;
  } finally {
    await daemon?.stop();
  }
}

/** Every size in turn (each seeded, measured, then its dir deleted unless under --scale-dir), then the Worker. */
export async function runScaleBench(o: {
  sizes: ScaleSize[];
  /** Undefined: no Worker measurement. */
  workerSize?: ScaleSize;
  scaleDir?: string;
  quick: boolean;
  accounts: number;
  seed: number;
  warmupSeconds: number;
  durationSeconds: number;
  log: (line: string) => void;
}): Promise<ScaleRun> {
  // Every daemon runs the rate limiter with a budget no load here reaches (as bench/run.ts sets it).
  process.env.INBOXD_RATE_LIMIT ??= "1000000";
  const started = performance.now();
  const run: ScaleRun = {
    date: new Date().toISOString(),
    quick: o.quick,
    cpus: os.cpus().length,
    warmupSeconds: o.warmupSeconds,
    durationSeconds: o.durationSeconds,
    restarts: RESTARTS,
    sizes: [],
    seconds: 0,
  };
  const generator = new LoadGenerator();
  try {
    for (const size of o.sizes) {
      const dir = o.scaleDir ? join(o.scaleDir, size.key) : tempDir(`inboxd-scale-${size.key}-`);
      o.log(`${size.key}: ${size.chats} chats, ${size.messages} messages in ${dir}`);
      try {
        run.sizes.push(await runScaleSize({ size, dir, accounts: o.accounts, seed: o.seed, warmupSeconds: o.warmupSeconds, durationSeconds: o.durationSeconds, generator, log: o.log }));
      } catch (error) {
        o.log(`${size.key}: failed: ${(error as Error).stack}`);
        run.sizes.push({ size, error: (error as Error).message });
        process.exitCode = 1;
      } finally {
        if (!o.scaleDir) removeTempDir(dir);
      }
    }
    if (o.workerSize) {
      const size = o.workerSize;
      const persistDir = o.scaleDir ? join(o.scaleDir, `worker-${size.key}`) : tempDir(`inboxd-scale-worker-${size.key}-`);
      try {
        run.worker = await runWorkerScale({
          size, persistDir, accounts: o.accounts, seed: o.seed, warmupSeconds: o.warmupSeconds, durationSeconds: o.durationSeconds, generator, log: o.log,
        });
      } catch (error) {
        o.log(`worker ${size.key}: failed: ${(error as Error).stack}`);
        run.worker = { size, error: (error as Error).message };
        process.exitCode = 1;
      } finally {
        if (!o.scaleDir) removeTempDir(persistDir);
      }
    }
  } finally {
    generator.close();
  }
  run.seconds = (performance.now() - started) / 1000;
  return run;
}
