/** Parent side of the load generator: a child process (bench/load-worker.ts) that runs one job at a time. */
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import * as hdr from "hdr-histogram-js";
import { ROOT, track } from "./daemon.ts";

export interface RequestSpec {
  method: "GET" | "POST";
  path: string;
  /** JSON body; every "{n}" is replaced with a per-request counter. */
  body?: string;
  /** Extra request headers (MCP's Accept and protocol version). */
  headers?: Record<string, string>;
}

export interface Job {
  url: string;
  token?: string;
  requests: RequestSpec[];
  concurrency: number;
  warmupSeconds: number;
  durationSeconds: number;
}

export interface LoadResult {
  concurrency: number;
  requests: number;
  errors: number;
  /** Count per HTTP status ("ERR" for connection errors). */
  statuses: Record<string, number>;
  firstError?: string;
  seconds: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  meanBytes: number;
  /** The latencies (µs) as an HDR histogram, compressed and base64-encoded: what mergeResults() adds up. */
  histogram?: string;
}

/** The histogram of a run's latencies in µs (bench/load-worker.ts), and of merged runs: 1 µs to 120 s, 3 digits. */
export const latencyHistogram = () =>
  hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });

/** Several runs of one kind of load as one: requests and seconds summed, percentiles from the summed histograms. */
export function mergeResults(results: LoadResult[]): LoadResult {
  const sum = latencyHistogram();
  const statuses: Record<string, number> = {};
  for (const r of results) {
    if (!r.histogram) throw new Error("mergeResults: a result without its histogram");
    const one = hdr.decodeFromCompressedBase64(r.histogram);
    sum.add(one);
    one.destroy();
    for (const [status, n] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  }
  const total = (f: (r: LoadResult) => number) => results.reduce((s, r) => s + f(r), 0);
  const requests = total((r) => r.requests),
    seconds = total((r) => r.seconds);
  const ms = (p: number) => sum.getValueAtPercentile(p) / 1000;
  const merged: LoadResult = {
    concurrency: results[0].concurrency,
    requests,
    errors: total((r) => r.errors),
    statuses,
    firstError: results.find((r) => r.firstError)?.firstError,
    seconds,
    rps: requests / seconds,
    p50: ms(50),
    p95: ms(95),
    p99: ms(99),
    max: sum.maxValue / 1000,
    meanBytes: requests ? total((r) => r.meanBytes * r.requests) / requests : 0,
    histogram: hdr.encodeIntoCompressedBase64(sum),
  };
  sum.destroy();
  return merged;
}

export class LoadGenerator {
  private readonly child: ChildProcess;
  private waiting?: { resolve: (r: LoadResult) => void; reject: (e: Error) => void };

  constructor() {
    this.child = track(fork(join(ROOT, "bench/load-worker.ts"), [], { cwd: ROOT, execArgv: ["--import", "tsx"] }));
    this.child.on("message", (m) => this.waiting?.resolve(m as LoadResult));
    this.child.on("exit", (code) => this.waiting?.reject(new Error(`load generator exited with ${code}`)));
  }

  /** Warms up, then measures for durationSeconds; latencies in ms. */
  run(job: Job): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.child.send(job);
    });
  }

  close(): void {
    if (this.child.exitCode === null) this.child.kill("SIGTERM");
  }
}
