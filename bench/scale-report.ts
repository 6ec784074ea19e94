/** The printed tables of scale mode (bench/scale-mode.ts), in the style of bench/report.ts. */
import { median } from "./daemon.ts";
import type { LoadResult } from "./load.ts";
import {
  CHAT_LIST_PAIRS,
  READ_CONCURRENCY,
  SEARCH_CONCURRENCY,
  SEND_CONCURRENCY,
  SPREAD_CHATS,
  type ScaleSizeFailure,
  type ScaleSizeResult,
} from "./scale.ts";
import type { Phase } from "./scale-common.ts";
import type { ScaleRun } from "./scale-mode.ts";
import type { WorkerScaleResult } from "./worker-scale.ts";
import { RESNAPSHOT_CHATS } from "./resnapshot.ts";
import { CALIBRATION_ROUNDS, formatCalibration } from "./calibration.ts";

/** The issue's targets, judged on the largest size measured (10M / 100k chats in a full run). */
export const TARGETS = {
  seedSeconds: 240,
  seedPeakMB: 1536,
  readyMs: 1000,
  rssMB: 400,
  chatsP99Ms: 5,
  chatsShareOfBare: 0.6,
  searchP99Ms: 10,
  spreadSendsPerSecond: 2000,
  spreadShareOfSmallest: 0.8,
};

interface Line {
  name: string;
  cells: string[];
  target?: string;
  pass?: boolean;
}

const ms = (x: number) => x.toFixed(2);
const int = (x: number) => Math.round(x).toLocaleString("en-US");
const mb = (x: number) => (x >= 1024 ? `${(x / 1024).toFixed(2)} GB` : `${x.toFixed(0)} MB`);
const bytes = (x: number) => mb(x / 2 ** 20);
const pct = (x: number) => `${(x * 100).toFixed(0)} %`;

/**
 * GET /v1/chats as a share of bare node:http: the median of the alternating pairs of rounds (bench/scale.ts), or
 * for results from before the pairs, the one round of each.
 */
function chatsShare(r: ScaleSizeResult): number {
  return r.chatsShares?.length ? median(r.chatsShares) : r.phases.chats.result.rps / r.phases.bare.result.rps;
}
const verdict = (pass: boolean | undefined) => (pass === undefined ? "" : pass ? "PASS" : "MISS  <<<");
const isOk = (x: ScaleSizeResult | ScaleSizeFailure): x is ScaleSizeResult => !("error" in x);
const latency = (r: LoadResult) => `${ms(r.p50)} / ${ms(r.p99)} ms`;
const clean = (p: Phase) => p.result.errors === 0;
const SHORT: Record<string, string> = {
  bare: "bare node:http",
  chats: "GET /v1/chats",
  search: "search",
  sendOne: "sends to one chat",
  sendSpread: `sends over ${SPREAD_CHATS} chats`,
};

function table(header: string[], rows: string[][], rightAligned: number[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export function formatScale(run: ScaleRun, versions: string): string {
  const out: string[] = [];
  const ok = run.sizes.filter(isOk);
  const sizesText = run.sizes.map((s) => `${s.size.label} (${s.size.key})`).join(", ");
  out.push(
    `inboxd scale benchmark${run.quick ? " (--quick: smaller sizes)" : ""}: ${sizesText || "no daemon sizes"}; inboxd seed --accounts 3 --seed 11; ` +
      `${run.durationSeconds} s per measurement after ${run.warmupSeconds} s warm-up; ${run.cpus} CPUs, ${versions}; ${(run.seconds / 60).toFixed(1)} min in all; ` +
      `load generator: autocannon (bench/load-worker.ts); started ${run.date}`,
    run.calibration ? `Machine at the start: ${formatCalibration(run.calibration)}.` : "",
    "",
  );
  if (run.sizes.length) out.push(...daemonTable(run, ok), "");
  for (const s of run.sizes)
    if (!isOk(s)) out.push(`${s.size.label}: FAILED: ${s.error.split("\n").slice(0, 6).join("\n  ")}`, "");
  if (run.worker) {
    if ("error" in run.worker)
      out.push(
        `Worker (Durable Object in workerd), ${run.worker.size.label}: FAILED: ${run.worker.error.split("\n").slice(0, 6).join("\n  ")}`,
        "",
      );
    else
      out.push(
        ...workerTable(
          run.worker,
          ok.find(
            (s) =>
              s.size.chats === (run.worker as WorkerScaleResult).size.chats &&
              s.size.messages === (run.worker as WorkerScaleResult).size.messages,
          ),
        ),
        "",
      );
  }
  const misses = out.join("\n").split("MISS  <<<").length - 1;
  out.push(misses ? `${misses} target(s) MISSED` : ok.length ? "all targets met" : "no target judged");
  return out.join("\n");
}

function daemonTable(run: ScaleRun, ok: ScaleSizeResult[]): string[] {
  // Judged: the largest size; the 80 % target of the spread sends compares it with the smallest.
  const judge = ok.length ? ok.reduce((a, b) => (b.size.messages > a.size.messages ? b : a)) : undefined;
  const smallest = ok.length > 1 ? ok.reduce((a, b) => (b.size.messages < a.size.messages ? b : a)) : undefined;
  const ref = smallest !== judge ? smallest : undefined;
  const lines: Line[] = [];
  const add = (
    name: string,
    cell: (r: ScaleSizeResult) => string,
    target?: string,
    pass?: (r: ScaleSizeResult) => boolean | undefined,
  ) =>
    lines.push({
      name,
      cells: run.sizes.map((s) => (isOk(s) ? cell(s) : "failed")),
      target,
      pass: judge && pass ? pass(judge) : undefined,
    });
  const spread = (r: ScaleSizeResult) => r.phases.sendSpread.result.rps;

  add(`machine calibration before the load phases (median of ${CALIBRATION_ROUNDS}; lower = faster)`, (r) =>
    r.calibration ? `${r.calibration.ms.toFixed(0)} ms` : "—",
  );
  add(
    "seed: wall clock of inboxd seed",
    (r) => (r.seed ? `${r.seed.seconds.toFixed(1)} s` : "skipped (reused dir)"),
    `≤ ${TARGETS.seedSeconds} s`,
    (r) => r.seed && r.seed.seconds <= TARGETS.seedSeconds,
  );
  add(
    "  seed process peak RSS (VmHWM)",
    (r) => (r.seed ? mb(r.seed.peakRssMB) : "skipped"),
    "≤ 1.5 GB",
    (r) => r.seed && r.seed.peakRssMB <= TARGETS.seedPeakMB,
  );
  add(
    `ready after restart (first 200 on GET /v1/chats), median of ${run.restarts}`,
    (r) => `${int(r.readyMedianMs)} ms`,
    "≤ 1 s",
    (r) => r.readyMedianMs <= TARGETS.readyMs,
  );
  add("  each restart", (r) => `${r.restartsMs.map(int).join(" / ")} ms`);
  add("  first start, after the seed", (r) => `${int(r.firstStartMs)} ms`);
  add(
    "RSS of the serving process tree, idle after start",
    (r) => mb(r.rss.idleMB) + (r.rss.idleProcesses > 1 ? ` (${r.rss.idleProcesses} processes)` : ""),
    `≤ ${TARGETS.rssMB} MB`,
    (r) => r.rss.idleMB <= TARGETS.rssMB,
  );
  add(
    "  after load",
    (r) => mb(r.rss.afterLoadMB),
    `≤ ${TARGETS.rssMB} MB`,
    (r) => r.rss.afterLoadMB <= TARGETS.rssMB,
  );
  add("  daemon peak RSS over its life (VmHWM)", (r) => mb(r.rss.daemonPeakMB));
  add(
    `GET /v1/chats, ${READ_CONCURRENCY} conn: p50 / p99`,
    (r) => latency(r.phases.chats.result),
    `p99 ≤ ${TARGETS.chatsP99Ms} ms`,
    (r) => r.phases.chats.result.p99 <= TARGETS.chatsP99Ms && clean(r.phases.chats),
  );
  add(
    "  req/s, and as % of bare node:http (median of the pairs)",
    (r) => `${int(r.phases.chats.result.rps)} = ${pct(chatsShare(r))}`,
    `≥ ${pct(TARGETS.chatsShareOfBare)}`,
    (r) => chatsShare(r) >= TARGETS.chatsShareOfBare,
  );
  add(
    `  bare node:http, same-size body, ${READ_CONCURRENCY} conn: req/s`,
    (r) => `${int(r.phases.bare.result.rps)} (${int(r.chatsBodyBytes)} B)`,
  );
  add("  share in each pair of rounds (bare, then the list)", (r) =>
    r.chatsShares ? r.chatsShares.map(pct).join(" / ") : "one round each",
  );
  add(
    `message search, two common words, ${SEARCH_CONCURRENCY} conn: p50 / p99`,
    (r) => latency(r.phases.search.result),
    `p99 ≤ ${TARGETS.searchP99Ms} ms`,
    (r) => r.phases.search.result.p99 <= TARGETS.searchP99Ms && clean(r.phases.search),
  );
  add("  req/s", (r) => int(r.phases.search.result.rps));
  add(
    `sends, ${SEND_CONCURRENCY} conn, one chat: sends/s`,
    (r) => `${int(r.phases.sendOne.result.rps)}/s`,
    "—",
    (r) => (clean(r.phases.sendOne) ? undefined : false),
  );
  add("  p50 / p99", (r) => latency(r.phases.sendOne.result));
  add(
    `sends, ${SEND_CONCURRENCY} conn over ${SPREAD_CHATS} chats (13-word texts): sends/s`,
    (r) => `${int(spread(r))}/s`,
    `≥ ${int(TARGETS.spreadSendsPerSecond)}/s`,
    (r) => spread(r) >= TARGETS.spreadSendsPerSecond && clean(r.phases.sendSpread),
  );
  if (ref)
    add(
      `  as % of the same at ${ref.size.label}`,
      (r) => (r === ref ? "—" : pct(spread(r) / spread(ref))),
      `≥ ${pct(TARGETS.spreadShareOfSmallest)}`,
      (r) => spread(r) / spread(ref) >= TARGETS.spreadShareOfSmallest,
    );
  add("  p50 / p99", (r) => latency(r.phases.sendSpread.result));
  add(
    `longest wait while a new chat snapshot is written (${RESNAPSHOT_CHATS} chats changed)`,
    (r) => (r.resnapshot ? `${r.resnapshot.max.toFixed(1)} ms` : "—"),
    "report",
  );
  add("  GET /v1/accounts every 2 ms meanwhile: p50 / p99", (r) =>
    r.resnapshot ? `${r.resnapshot.p50.toFixed(2)} / ${r.resnapshot.p99.toFixed(2)} ms` : "—",
  );
  add("data on disk (data dir), after the seed", (r) => bytes(r.disk.afterSeedBytes), "report");
  add("  after the run (sends, tokens)", (r) => bytes(r.disk.afterRunBytes));

  const header = ["figure", ...run.sizes.map((s) => s.size.label), `target at ${judge?.size.label ?? "—"}`, "result"];
  const rows = lines.map((l) => [l.name, ...l.cells, l.target ?? "", verdict(l.pass)]);
  const notes = ok.map((r) => {
    const phases = Object.values(r.phases);
    const others = Math.max(...phases.map((p) => p.cpu.others));
    const errors = phases
      .filter((p) => p.result.errors)
      .map((p) => `${p.name}: ${JSON.stringify(p.result.statuses)} first: ${p.result.firstError}`);
    return [
      `  ${r.size.label}: ${(r.seconds / 60).toFixed(1)} min; load average ${r.loadavg.before.toFixed(2)} before, ${r.loadavg.after.toFixed(2)} after; other processes took up to ` +
        `${others.toFixed(0)} % of a core during a load phase (server CPU, % of a core: ${Object.entries(r.phases)
          .map(([key, p]) => `${SHORT[key]} ${p.cpu.server.toFixed(0)}`)
          .join(", ")})`,
      ...errors.map((e) => `    errors (a MISS): ${e}`),
    ].join("\n");
  });
  return [
    table(
      header,
      rows,
      run.sizes.map((_, i) => i + 1),
    ),
    `Targets are judged on the ${judge?.size.label ?? "largest"} column${ref ? `; the last send target compares it with ${ref.size.label}` : ""}. Load phases: ${run.warmupSeconds} s warm-up, ` +
      `then ${run.durationSeconds} s measured; bare node:http answers the daemon's first GET /v1/chats page byte for byte, in ${CHAT_LIST_PAIRS} rounds alternating with the list's (each round its own warm-up).`,
    "RSS: VmRSS summed over the daemon and its descendants; idle = 2 s after the last restart answered. Sends go to chats other than the Echo chats.",
    "The machine is shared with other work:",
    ...notes,
  ];
}

function workerTable(w: WorkerScaleResult, daemon: ScaleSizeResult | undefined): string[] {
  const lines: string[][] = [];
  const add = (name: string, worker: string, node = "") => lines.push([name, worker, ...(daemon ? [node] : [])]);
  const load = (p: Phase) =>
    `${latency(p.result)}, ${int(p.result.rps)} req/s${p.result.errors ? ` (${p.result.errors} errors)` : ""}`;
  const d = daemon?.phases;
  add(
    "seed (INBOXD_SEED: inside the object, on its first request)",
    w.seed ? `${w.seed.seconds.toFixed(1)} s` : "skipped (reused storage)",
    daemon?.seed ? `${daemon.seed.seconds.toFixed(1)} s (inboxd seed)` : "",
  );
  add(
    `machine calibration before the load phases (median of ${CALIBRATION_ROUNDS})`,
    w.calibration ? `${w.calibration.ms.toFixed(0)} ms` : "—",
    daemon?.calibration ? `${daemon.calibration.ms.toFixed(0)} ms` : "",
  );
  add(
    "  workerd peak RSS during the seed",
    w.seed ? mb(w.seed.workerdPeakMB) : "skipped",
    daemon?.seed ? mb(daemon.seed.peakRssMB) : "",
  );
  add(
    `ready after restart (new workerd; first 200 on GET /v1/chats), median of ${w.restarts.length}`,
    `${int(w.readyMedianMs)} ms`,
    daemon ? `${int(daemon.readyMedianMs)} ms` : "",
  );
  add(
    "  each restart: total (workerd listening)",
    `${w.restarts.map((r) => `${int(r.readyMs)} (${int(r.workerdUpMs)})`).join(" / ")} ms`,
  );
  add("RSS of workerd: after the seed", mb(w.rss.afterSeedMB));
  add("  idle after restart", mb(w.rss.idleMB), daemon ? mb(daemon.rss.idleMB) : "");
  add("  after load", mb(w.rss.afterLoadMB), daemon ? mb(daemon.rss.afterLoadMB) : "");
  add(
    "storage on disk (the object's SQLite, Miniflare persist dir)",
    bytes(w.diskBytes),
    daemon ? bytes(daemon.disk.afterSeedBytes) : "",
  );
  w.concurrency.forEach((c, i) =>
    add(
      `GET /v1/chats, ${c} conn: p50 / p99, req/s`,
      load(w.phases.chats[i]),
      d && c === READ_CONCURRENCY ? load(d.chats) : "",
    ),
  );
  w.concurrency.forEach((c, i) =>
    add(
      `search, two common words, ${c} conn: p50 / p99, req/s`,
      load(w.phases.search[i]),
      d && c === SEARCH_CONCURRENCY ? load(d.search) : "",
    ),
  );
  const phases = [...w.phases.chats, ...w.phases.search];
  const others = Math.max(...phases.map((p) => p.cpu.others));
  const errors = phases
    .filter((p) => p.result.errors)
    .map(
      (p) =>
        `  errors: ${p.name} c=${p.result.concurrency}: ${JSON.stringify(p.result.statuses)} first: ${p.result.firstError}`,
    );
  return [
    `Worker: the Durable Object (adapters/workers/inbox-object.ts) in workerd through Miniflare, ${w.size.label} (${w.size.key}); storage in ${w.persistDir}`,
    "",
    table(
      ["figure", `Worker, ${w.size.label}`, ...(daemon ? [`daemon, same size`] : [])],
      lines,
      daemon ? [1, 2] : [1],
    ),
    ...errors,
    `No targets of its own (reported). workerd CPU during the load phases, % of a core: ${phases.map((p) => `${p.name.replace(/^Worker |: two common words/g, "")} at ${p.result.concurrency} conn ${p.cpu.server.toFixed(0)}`).join(", ")}; ` +
      `other processes up to ${others.toFixed(0)} %; load average ${w.loadavg.before.toFixed(2)} before, ${w.loadavg.after.toFixed(2)} after; ${(w.seconds / 60).toFixed(1)} min.`,
  ];
}
