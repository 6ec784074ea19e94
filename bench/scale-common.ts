/**
 * What the daemon's scale runs (bench/scale.ts) and the Worker's (bench/worker-scale.ts) share: the data-set sizes,
 * a load phase with the CPU and RSS of the server's process tree over it, and the requests of those phases.
 */
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Api } from "../test/kit/http.ts";
import { childrenRunning, cpuSeconds, descendants, machineBusySeconds } from "./daemon.ts";
import { mergeResults, type LoadGenerator, type LoadResult, type RequestSpec } from "./load.ts";
import { COMMON_WORDS, listChatIDs } from "./workload.ts";

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

const short = (n: number) =>
  n >= 1e6 ? `${+(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : String(n);

/** "1m", "10m" or "CHATSxMESSAGES" (e.g. 2000x50000). */
export function parseSize(text: string, quick: boolean): ScaleSize {
  const name = text.trim().toLowerCase();
  const custom = /^(\d+)x(\d+)$/.exec(name);
  const dims = custom ? { chats: Number(custom[1]), messages: Number(custom[2]) } : (quick ? QUICK : NAMED)[name];
  if (!dims || !(dims.chats > 0) || !(dims.messages >= 0))
    throw new Error(`--scale-sizes: unknown size ${text} (expected 1m, 10m or CHATSxMESSAGES)`);
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

export const RESTARTS = 3;

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
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.blocks * 512;
  return readdirSync(path).reduce((sum, name) => sum + diskBytes(join(path, name)), stat.blocks * 512);
}

/**
 * One load phase against `serverPids`' URL, with the CPU of the server's process tree, the generator, this process
 * and every other process over it.
 */
export async function measurePhase(
  generator: LoadGenerator,
  o: {
    name: string;
    serverPids: number[];
    url: string;
    token?: string;
    requests: RequestSpec[];
    concurrency: number;
    warmupSeconds: number;
    durationSeconds: number;
    log: (line: string) => void;
  },
): Promise<Phase> {
  o.log(`${o.name} (c=${o.concurrency}, ${o.warmupSeconds} s warm-up + ${o.durationSeconds} s)`);
  const generatorPids = childrenRunning((argv) => argv.some((arg) => arg.endsWith("load-worker.ts")));
  const sample = () => ({
    at: performance.now(),
    server: treeCpu(o.serverPids),
    generator: treeCpu(generatorPids),
    machine: machineBusySeconds(),
  });
  const before = sample(),
    benchBefore = process.cpuUsage();
  const result = await generator.run({
    url: o.url,
    token: o.token,
    requests: o.requests,
    concurrency: o.concurrency,
    warmupSeconds: o.warmupSeconds,
    durationSeconds: o.durationSeconds,
  });
  const after = sample(),
    bench = process.cpuUsage(benchBefore);
  const pct = (seconds: number) => (seconds / ((after.at - before.at) / 1000)) * 100;
  const cpu: PhaseCpu = {
    server: pct(after.server - before.server),
    generator: pct(after.generator - before.generator),
    bench: pct((bench.user + bench.system) / 1e6),
    others: 0,
  };
  cpu.others = Math.max(0, pct(after.machine - before.machine) - cpu.server - cpu.generator - cpu.bench);
  const phase = { name: o.name, result, cpu, serverRssMB: treeRss(...o.serverPids).mb };
  o.log(
    `  p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ${Math.round(result.rps)} req/s, ${result.errors} errors; CPU server ${cpu.server.toFixed(0)} %, generator ${cpu.generator.toFixed(0)} %, other processes ${cpu.others.toFixed(0)} %`,
  );
  if (result.errors) o.log(`  errors: ${JSON.stringify(result.statuses)} first: ${result.firstError}`);
  return phase;
}

/** Rounds of one load as one phase: results merged (bench/load.ts), CPU shares weighted by each round's length. */
export function mergePhases(name: string, rounds: Phase[]): Phase {
  const seconds = rounds.reduce((s, r) => s + r.result.seconds, 0);
  const weighted = (f: (c: PhaseCpu) => number) =>
    rounds.reduce((s, r) => s + f(r.cpu) * r.result.seconds, 0) / seconds;
  return {
    name,
    result: mergeResults(rounds.map((r) => r.result)),
    cpu: {
      server: weighted((c) => c.server),
      generator: weighted((c) => c.generator),
      bench: weighted((c) => c.bench),
      others: weighted((c) => c.others),
    },
    serverRssMB: rounds.at(-1)!.serverRssMB,
  };
}

/**
 * What the scale phases need, from the seeded data: the first GET /v1/chats page byte for byte (the baseline answers
 * with it), chat IDs (bench/workload.ts's shuffled order, Echo chats apart) and the two-common-words searches (every
 * pair of COMMON_WORDS, as bench/workload.ts's searchCommon). Not buildWorkload itself: its rare-word hunt costs
 * up to 1,500 searches that no scale phase uses.
 */
export async function scaleWorkload(url: string, token: string) {
  const res = await new Api(url, token).bytes("GET", "/v1/chats");
  if (res.status !== 200) throw new Error(`GET /v1/chats answered ${res.status}`);
  const chatsBody = Buffer.from(res.bytes);
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
