/** The printed tables. */
import type { FanoutResult, Stats } from "./fanout.ts";
import type { LoadResult } from "./load.ts";

export interface Row {
  name: string;
  /** A load measurement, or a single value (seed time, ready time, RSS). */
  result?: LoadResult;
  value?: string;
  /** Server process CPU use during the phase (% of one core) and its RSS after it. */
  cpuPct?: number;
  rssMB?: number;
  target?: string;
  /** undefined: no target (informational row). */
  pass?: boolean;
}

/** A live-events fan-out measurement; `stats` is one of the result's latency distributions. */
export interface LiveRow {
  name: string;
  result: FanoutResult;
  stats: Stats;
  target?: string;
  pass?: boolean;
  /** A line printed under the table. */
  note?: string;
}

const ms = (x: number) => x.toFixed(2);
const int = (x: number) => Math.round(x).toLocaleString("en-US");
const verdict = (row: { pass?: boolean }) => (row.pass === undefined ? "" : row.pass ? "PASS" : "MISS  <<<");

function table(header: string[], rows: string[][], rightAligned: number[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

function liveSection(live: LiveRow[]): string[] {
  if (!live.length) return [];
  const rows = live.map((row) => {
    const { result: r, stats } = row;
    return [
      row.name,
      int(r.clients),
      int(r.sendsPerSecond),
      ms(stats.p50),
      ms(stats.p95),
      ms(stats.p99),
      ms(stats.max),
      `${int(r.received)} / ${int(r.expected)}`,
      int(r.lost),
      `${int(r.serverCpuPct)} %`,
      `${int(r.generatorCpuPct)} %`,
      row.target ?? "",
      verdict(row),
    ];
  });
  const notes = [...new Set(live.map((row) => row.result))].flatMap((r) => {
    const closes = Object.entries(r.closes)
      .map(([code, n]) => `${n} × code ${code}`)
      .join(", ");
    return [
      `  sends: ${int(r.sends)} in ${r.seconds.toFixed(1)} s (target ${int(r.targetRate)}/s; a start at most ${ms(r.maxScheduleLagMs)} ms behind schedule), HTTP latency p50 ${ms(r.sendP50)} ms, p99 ${ms(r.sendP99)} ms` +
        (r.retries ? `; ${int(r.retries)} retried after ECONNRESET on a reused keep-alive socket` : "") +
        (r.sendErrors ? `; ${int(r.sendErrors)} failed, first: ${r.firstSendError}` : ""),
      `  ${int(r.early)} of ${int(r.received)} events (${((r.early / Math.max(1, r.received)) * 100).toFixed(1)} %) reached their client before the send's HTTP response ` +
        `(counted as 0 ms above; with sign: median ${ms(r.signedP50)} ms, earliest ${ms(r.earliestMs)} ms)`,
      `  spread of one send's event over the ${int(r.clients)} clients (last − first arrival): p50 ${ms(r.spread.p50)} ms, p99 ${ms(r.spread.p99)} ms, max ${ms(r.spread.max)} ms`,
      `  CPU in the window, % of one core: daemon ${int(r.serverCpuPct)}, generator ${int(r.generatorCpuPct)}, other processes ` +
        `${int(Math.max(0, r.machineCpuPct - r.serverCpuPct - r.generatorCpuPct))}; the machine was busy ${int(r.machineCpuPct)} % of ${r.cpus * 100} %, ` +
        `every CPU busy for ${r.saturatedSeconds.toFixed(2)} s of the ${r.seconds.toFixed(0)} s` +
        (r.saturatedSeconds >= 0.5 ? " — the latencies include waiting for a CPU" : ""),
      `  clients received ${int(r.framesPerSecond)} frames/s (${r.mbPerSecond.toFixed(1)} MB/s); generator event-loop delay p99 ${ms(r.generatorLoopDelayP99)} ms, max ${ms(r.generatorLoopDelayMax)} ms; ` +
        `connections closed by the server: ${closes || "none"}`,
    ];
  });
  return [
    table(
      [
        "live events (GET /v1/ws)",
        "clients",
        "sends/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "events received",
        "lost",
        "srv CPU",
        "gen CPU",
        "target",
        "result",
      ],
      rows,
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    ),
    ...notes,
    ...live.filter((row) => row.note).map((row) => `  ${row.note}`),
    "Latency of each (client, send) pair: arrival of the first message.upserted event naming the send's pendingMessageID at that client,",
    "minus the arrival of the send's HTTP response (or the start of its request), both as seen by the generator, which holds every client",
    "and sends in one process. CPU: the measured window only, % of one core. Sends go to every chat but the sandbox Echo chats.",
    "",
  ];
}

export function formatReport(loads: Row[], scalars: Row[], live: LiveRow[] = []): string {
  const loadTable = table(
    ["endpoint", "conc", "p50 ms", "p95 ms", "p99 ms", "req/s", "errors", "srv CPU", "srv RSS", "target", "result"],
    loads.map((row) => {
      const r = row.result!;
      const server = [`${int(row.cpuPct ?? NaN)} %`, `${int(row.rssMB ?? NaN)} MB`];
      return [
        row.name,
        String(r.concurrency),
        ms(r.p50),
        ms(r.p95),
        ms(r.p99),
        int(r.rps),
        String(r.errors),
        ...server,
        row.target ?? "",
        verdict(row),
      ];
    }),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  const scalarTable = table(
    ["measure", "value", "target", "result"],
    scalars.map((row) => [row.name, row.value ?? "", row.target ?? "", verdict(row)]),
    [1],
  );
  const errors = loads
    .filter((row) => row.result!.errors > 0)
    .map((row) => `  ${row.name}: ${JSON.stringify(row.result!.statuses)} first: ${row.result!.firstError}`);
  const misses = [...loads, ...scalars, ...live].filter((row) => row.pass === false).length;
  return [
    ...(loads.length
      ? [
          loadTable,
          "srv CPU: server process CPU time during the phase (incl. warm-up), % of one core; srv RSS: its VmRSS after the phase.",
          "",
        ]
      : []),
    ...liveSection(live),
    scalarTable,
    ...(errors.length ? ["", "Errors (a phase with errors is a MISS):", ...errors] : []),
    "",
    misses ? `${misses} target(s) MISSED` : "all targets met",
  ].join("\n");
}
