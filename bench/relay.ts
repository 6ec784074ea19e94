/**
 * The relay (adapters/workers/relay-object.ts ↔ adapters/node/relay-client.ts), on a small data set of its own: the
 * Worker in relay mode, run by workerd through Miniflare (test/harness/workerd.ts), and one daemon started with
 * `inboxd serve --relay URL` that dials out to it. GET /v1/chats with a read-only token, straight to the daemon's
 * loopback port and through the relay's URL, by the same load generator at the same concurrency, in pairs of rounds
 * whose order alternates (direct/relay, relay/direct, …) so that a drift of the machine's load favours neither side.
 * Reported: each side's p50/p95/p99 and req/s (the round of median p50), the latency the relay adds (relay − direct,
 * p50 and p99, median of the pairs), and the CPU the daemon, workerd, the generator and every other process took.
 */
import { randomBytes } from "node:crypto";
import { basename, join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { startWorkerd, type WorkerdServer } from "../test/harness/workerd.ts";
import {
  childrenRunning,
  cpuSeconds,
  freePort,
  machineBusySeconds,
  median,
  memory,
  ROOT,
  runCli,
  spawnNode,
  waitUntilServing,
} from "./daemon.ts";
import { LoadGenerator, type LoadResult, type RequestSpec } from "./load.ts";
import { formatReport, type Row } from "./report.ts";

export interface RelayBenchOptions {
  /** Where the data set is seeded (a path that does not exist yet, or an empty directory). */
  dir: string;
  chats: number;
  messages: number;
  accounts: number;
  /** Concurrency levels, measured one after the other (1, then the section's usual read concurrency). */
  concurrency: number[];
  /** Pairs of rounds (direct, relay) per level. */
  pairs: number;
  warmupSeconds: number;
  roundSeconds: number;
  log: (line: string) => void;
}

/** CPU during one round (warm-up included), % of one core. */
export interface RoundCpu {
  daemon: number;
  workerd: number;
  generator: number;
  /** This process: the bench, and Miniflare's own part of the relay (it runs in here). */
  bench: number;
  /** Everything else on the machine. */
  others: number;
}

export interface RelayRound {
  result: LoadResult;
  cpu: RoundCpu;
  daemonRssMB: number;
}

export interface RelayLevel {
  concurrency: number;
  /** The rounds, pair by pair: direct[i] and relay[i] are a pair. */
  direct: RelayRound[];
  relay: RelayRound[];
  /** Relay − direct, ms, the median of the pairs. */
  addedP50Ms: number;
  addedP99Ms: number;
}

export interface RelayResult {
  chats: number;
  messages: number;
  /** ms from spawning the daemon to its `relay: connected to` line. */
  connectMs: number;
  levels: RelayLevel[];
}

/** The two ways to the daemon, measured in turn. */
type Side = "direct" | "relay";
const SIDES: Side[] = ["direct", "relay"];
/** The target of the issue: the relay adds at most this much to GET /v1/chats at p50, one client. */
const TARGET_ADDED_P50_MS = 2;
const CLI = join(ROOT, "adapters/node/cli.ts");
/** The workerd processes of the running relay, for killRelay() when the bench is interrupted. */
let workerdPids: number[] = [];

const int = (x: number) => Math.round(x).toLocaleString("en-US");
const signedMs = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(2)}`;

/** Kills the relay's workerd processes by PID (for an interrupted bench; a finished one has stopped Miniflare). */
export function killRelay(): void {
  for (const pid of workerdPids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  workerdPids = [];
}

/** `inboxd serve --relay URL` on a loopback port, the secret in its environment; resolves once it has dialed in and answers on loopback. */
async function startRelayedDaemon(dir: string, token: string, relayURL: string, secret: string) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const before = process.env.INBOXD_RELAY_SECRET;
  process.env.INBOXD_RELAY_SECRET = secret;
  let child: ChildProcess;
  try {
    child = spawnNode(CLI, ["serve", "--data-dir", dir, "--port", String(port), "--relay", relayURL]);
  } finally {
    if (before === undefined) delete process.env.INBOXD_RELAY_SECRET;
    else process.env.INBOXD_RELAY_SECRET = before;
  }
  let output = "";
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(child.pid!, "SIGTERM");
    const timer = setTimeout(() => child.exitCode === null && process.kill(child.pid!, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    while (!output.includes("relay: connected to")) {
      if (child.exitCode !== null) throw new Error(`inboxd serve --relay exited with ${child.exitCode}:\n${output}`);
      if (performance.now() - started > 60_000)
        throw new Error(`the daemon did not dial in to the relay within 60 s:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const connectMs = performance.now() - started;
    await waitUntilServing(child, url, token, () => output, started);
    return { pid: child.pid!, url, connectMs, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export async function runRelayBench(o: RelayBenchOptions): Promise<RelayResult> {
  o.log(`relay: seeding ${o.chats} chats, ${o.messages} messages into ${o.dir}`);
  await runCli([
    "seed",
    "--data-dir",
    o.dir,
    "--chats",
    String(o.chats),
    "--messages",
    String(o.messages),
    "--accounts",
    String(o.accounts),
    "--seed",
    "1",
  ]);
  const token = (
    await runCli(["token", "create", "--data-dir", o.dir, "--scope", "read", "--name", "bench-relay"])
  ).stdout
    .trim()
    .split("\n")
    .pop()!
    .trim();
  const secret = randomBytes(24).toString("base64url");
  // The relay's own per-address limit is off: every request here comes from one address, far beyond a person's use.
  o.log("relay: starting the relay Worker in workerd (Miniflare)");
  let relay: WorkerdServer | undefined;
  let daemon: Awaited<ReturnType<typeof startRelayedDaemon>> | undefined;
  const generator = new LoadGenerator();
  try {
    relay = await startWorkerd({
      vars: { INBOXD_MODE: "relay", INBOXD_RELAY_SECRET: secret, INBOXD_RELAY_RATE_LIMIT: "off" },
    });
    workerdPids = childrenRunning((argv) => basename(argv[0]) === "workerd");
    if (!workerdPids.length) throw new Error("the relay's workerd process was not found among the bench's children");
    daemon = await startRelayedDaemon(o.dir, token, relay.url, secret);
    o.log(
      `relay: daemon pid ${daemon.pid} at ${daemon.url} dialed in to ${relay.url} after ${int(daemon.connectMs)} ms (workerd pid ${workerdPids.join(", ")})`,
    );
    const urls: Record<Side, string> = { direct: daemon.url, relay: relay.url };
    const requests: RequestSpec[] = [{ method: "GET", path: "/v1/chats" }];
    const top = Math.max(...o.concurrency);
    for (const side of SIDES) {
      const warm = await generator.run({
        url: urls[side],
        token,
        requests,
        concurrency: top,
        warmupSeconds: 0,
        durationSeconds: o.warmupSeconds,
      });
      if (warm.errors)
        throw new Error(
          `GET /v1/chats ${side} failed during the warm-up: ${JSON.stringify(warm.statuses)} ${warm.firstError}`,
        );
    }
    const [generatorPid] = childrenRunning((argv) => argv.some((arg) => arg.endsWith("load-worker.ts")));
    if (generatorPid === undefined) throw new Error("the load generator's process was not found");
    const { pid: daemonPid } = daemon;

    const sample = () => ({
      at: performance.now(),
      daemon: cpuSeconds(daemonPid),
      workerd: workerdPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0),
      generator: cpuSeconds(generatorPid),
      machine: machineBusySeconds(),
    });
    const round = async (side: Side, concurrency: number): Promise<RelayRound> => {
      const before = sample(),
        benchBefore = process.cpuUsage();
      const result = await generator.run({
        url: urls[side],
        token,
        requests,
        concurrency,
        warmupSeconds: o.warmupSeconds,
        durationSeconds: o.roundSeconds,
      });
      const after = sample(),
        benchUsage = process.cpuUsage(benchBefore);
      const pct = (seconds: number) => (seconds / ((after.at - before.at) / 1000)) * 100;
      const cpu = {
        daemon: pct(after.daemon - before.daemon),
        workerd: pct(after.workerd - before.workerd),
        generator: pct(after.generator - before.generator),
        bench: pct((benchUsage.user + benchUsage.system) / 1e6),
        others: 0,
      };
      cpu.others = Math.max(
        0,
        pct(after.machine - before.machine) - cpu.daemon - cpu.workerd - cpu.generator - cpu.bench,
      );
      return { result, cpu, daemonRssMB: memory(daemonPid).rssMB };
    };

    const levels: RelayLevel[] = [];
    for (const concurrency of o.concurrency) {
      const rounds: Record<Side, RelayRound[]> = { direct: [], relay: [] };
      for (let pair = 0; pair < o.pairs; pair++) {
        for (const side of pair % 2 ? [...SIDES].reverse() : SIDES) {
          const r = await round(side, concurrency);
          rounds[side].push(r);
          o.log(
            `relay: GET /v1/chats ${side}, c=${concurrency} (pair ${pair + 1}/${o.pairs}): p50 ${r.result.p50.toFixed(2)} ms, p99 ${r.result.p99.toFixed(2)} ms, ` +
              `${int(r.result.rps)} req/s; CPU daemon ${int(r.cpu.daemon)} %, workerd ${int(r.cpu.workerd)} %, other processes ${int(r.cpu.others)} %`,
          );
        }
      }
      const added = (key: "p50" | "p99") =>
        median(rounds.relay.map((r, i) => r.result[key] - rounds.direct[i].result[key]));
      levels.push({ concurrency, ...rounds, addedP50Ms: added("p50"), addedP99Ms: added("p99") });
    }
    return { chats: o.chats, messages: o.messages, connectMs: daemon.connectMs, levels };
  } finally {
    generator.close();
    await daemon?.stop();
    await relay?.stop();
    workerdPids = [];
  }
}

/** The section's table, as the other sections print theirs. */
export function formatRelay(r: RelayResult): string {
  const loads: Row[] = [];
  const scalars: Row[] = [];
  for (const level of r.levels) {
    const c = level.concurrency;
    const byP50 = (rounds: RelayRound[]) =>
      rounds.find((x) => x.result.p50 === median(rounds.map((y) => y.result.p50)))!;
    const row = (x: RelayRound, name: string): Row => ({
      name,
      result: x.result,
      cpuPct: x.cpu.daemon,
      rssMB: x.daemonRssMB,
    });
    const errors = [...level.direct, ...level.relay].reduce((sum, x) => sum + x.result.errors, 0);
    const judged = c === Math.min(...r.levels.map((l) => l.concurrency));
    loads.push(
      row(
        byP50(level.direct),
        `GET /v1/chats, direct to the daemon (loopback), c=${c}, median of ${level.direct.length}`,
      ),
      {
        ...row(byP50(level.relay), `  through the local relay (workerd), c=${c}`),
        target: `${judged ? `≤ ${TARGET_ADDED_P50_MS} ms` : "stated:"} added at p50 (median pair: ${signedMs(level.addedP50Ms)} ms)`,
        pass: judged ? level.addedP50Ms <= TARGET_ADDED_P50_MS && errors === 0 : undefined,
      },
    );
    const pairs = level.relay.map(
      (x, i) =>
        `${signedMs(x.result.p50 - level.direct[i].result.p50)} / ${signedMs(x.result.p99 - level.direct[i].result.p99)}`,
    );
    const cpu = (rounds: RelayRound[], key: keyof RoundCpu) => int(median(rounds.map((x) => x.cpu[key])));
    const cpuText = (rounds: RelayRound[]) =>
      `daemon ${cpu(rounds, "daemon")}, workerd ${cpu(rounds, "workerd")}, generator ${cpu(rounds, "generator")}, bench ${cpu(rounds, "bench")}, other processes and the kernel ${cpu(rounds, "others")}`;
    // CPU s per wall s, over requests per wall s.
    const perRequest = (rounds: RelayRound[], key: "daemon" | "workerd") =>
      int(median(rounds.map((x) => ((x.cpu[key] / 100) * 1e6) / x.result.rps)));
    scalars.push(
      {
        name: `c=${c}: added by the relay, p50 / p99 ms, median of ${pairs.length} pairs`,
        value: `${signedMs(level.addedP50Ms)} / ${signedMs(level.addedP99Ms)} (pairs: ${pairs.join("; ")})`,
      },
      { name: "  CPU per round, median, % of a core: direct", value: cpuText(level.direct) },
      { name: "    through the relay", value: cpuText(level.relay) },
      {
        name: "  CPU per request, median: daemon, direct | relay; workerd",
        value: `${perRequest(level.direct, "daemon")} | ${perRequest(level.relay, "daemon")} µs; ${perRequest(level.relay, "workerd")} µs`,
      },
    );
  }
  scalars.push({ name: "daemon start to `relay: connected to`", value: `${int(r.connectMs)} ms` });
  const header = `Relay: ${int(r.chats)} chats, ${int(r.messages)} messages seeded; GET /v1/chats (read-only token) direct and through the relay Worker in workerd (Miniflare)`;
  const notes = [
    "Pairs of rounds alternate direct/relay, relay/direct, …; each round has its own warm-up. The rows are the round of median p50; added",
    `latency is relay − direct within each pair, the median of the pairs. The target (≤ ${TARGET_ADDED_P50_MS} ms added at p50) is judged at the lowest`,
    "concurrency; at higher ones the daemon and workerd share the machine's CPUs, and the difference includes waiting for one.",
  ];
  return [header, "", formatReport(loads, scalars), ...notes].join("\n");
}
