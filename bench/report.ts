/** The printed tables. */
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

const ms = (x: number) => x.toFixed(2);
const int = (x: number) => Math.round(x).toLocaleString("en-US");
const verdict = (row: Row) => (row.pass === undefined ? "" : row.pass ? "PASS" : "MISS  <<<");

function table(header: string[], rows: string[][], rightAligned: number[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join("  ").trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export function formatReport(loads: Row[], scalars: Row[]): string {
  const loadTable = table(
    ["endpoint", "conc", "p50 ms", "p95 ms", "p99 ms", "req/s", "errors", "srv CPU", "srv RSS", "target", "result"],
    loads.map((row) => {
      const r = row.result!;
      const server = [`${int(row.cpuPct ?? NaN)} %`, `${int(row.rssMB ?? NaN)} MB`];
      return [row.name, String(r.concurrency), ms(r.p50), ms(r.p95), ms(r.p99), int(r.rps), String(r.errors), ...server, row.target ?? "", verdict(row)];
    }),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  const scalarTable = table(
    ["measure", "value", "target", "result"],
    scalars.map((row) => [row.name, row.value ?? "", row.target ?? "", verdict(row)]),
    [1],
  );
  const errors = loads.filter((row) => row.result!.errors > 0).map((row) => `  ${row.name}: ${JSON.stringify(row.result!.statuses)} first: ${row.result!.firstError}`);
  const misses = [...loads, ...scalars].filter((row) => row.pass === false).length;
  return [
    loadTable,
    "srv CPU: server process CPU time during the phase (incl. warm-up), % of one core; srv RSS: its VmRSS after the phase.",
    "",
    scalarTable,
    ...(errors.length ? ["", "Errors (a phase with errors is a MISS):", ...errors] : []),
    "",
    misses ? `${misses} target(s) MISSED` : "all targets met",
  ].join("\n");
}
