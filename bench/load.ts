/** Parent side of the load generator: a child process (bench/load-worker.ts) that runs one job at a time. */
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
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
