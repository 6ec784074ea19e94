/**
 * Parent side of the live-events generator: a child process (bench/fanout-worker.ts) that holds WebSocket clients
 * on GET /v1/ws and sends messages over HTTP, one job at a time.
 */
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { ROOT, track } from "./daemon.ts";

export interface FanoutJob {
  kind: "fanout";
  url: string;
  token: string;
  /** The daemon's PID: the worker reads its CPU time at the edges of the measured window. */
  serverPid: number;
  clients: number;
  /** Sends per second, open loop (paced by schedule, not by responses). */
  rate: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** After the last send, how long to wait for events still missing before counting them lost. */
  drainSeconds: number;
  /** Chat IDs to send to, in turn. */
  chatIDs: string[];
}

/** Percentiles in ms. */
export interface Stats {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export interface FanoutResult {
  clients: number;
  targetRate: number;
  seconds: number;
  /** Sends started in the measured window that were answered 2xx / that failed. */
  sends: number;
  sendErrors: number;
  /** Sends retried once after ECONNRESET on a reused keep-alive socket (they had not reached the server). */
  retries: number;
  firstSendError?: string;
  /** Answered sends per second of the measured window. */
  sendsPerSecond: number;
  /** Largest delay of a send's start behind its schedule (generator lag), ms. */
  maxScheduleLagMs: number;
  /** HTTP latency of the sends themselves (request start → response), ms. */
  sendP50: number;
  sendP99: number;
  /** (client, send) pairs: expected = clients × sends; received = an event naming the send's pendingMessageID. */
  expected: number;
  received: number;
  lost: number;
  /** Event arrival − arrival of the send's HTTP response, ms, over received pairs; negatives count as 0 here. */
  afterResponse: Stats;
  /** The same difference with its sign: median, and the most negative one. */
  signedP50: number;
  earliestMs: number;
  /** Pairs whose event arrived before the send's HTTP response. */
  early: number;
  /** Event arrival − start of the send's HTTP request, ms, over received pairs. */
  afterRequest: Stats;
  /** Per send: last client's arrival − first client's arrival, ms (sends every client received). */
  spread: Stats;
  /** Frames and bytes the clients received in the measured window (all event types), per second. */
  framesPerSecond: number;
  mbPerSecond: number;
  /** CPU use of the daemon and of this generator during the measured window, % of one core. */
  serverCpuPct: number;
  generatorCpuPct: number;
  /** CPU the whole machine spent busy in the window (all processes, incl. steal), % of one core; and its CPU count. */
  machineCpuPct: number;
  cpus: number;
  /** Time of the window during which every CPU of the machine was busy (in cpuTimeline intervals), s. */
  saturatedSeconds: number;
  /** Event-loop delay of the generator in the measured window (ms): how late it got to ready sockets. */
  generatorLoopDelayP99: number;
  generatorLoopDelayMax: number;
  /** Connections the server closed during the job, by close code. */
  closes: Record<string, number>;
  /** Time to open and subscribe all clients, ms. */
  connectMs: number;
  /**
   * Per measured send, ms (2 decimals): its start after the window began, its HTTP latency, and the first and last
   * client's event arrival after its start (null: not every client got it).
   */
  timeline: { start: number[]; http: number[]; firstEvent: (number | null)[]; lastEvent: (number | null)[] };
  /** performance.timeOrigin + the window's start: the epoch (ms) that timeline starts are relative to. */
  windowStartEpochMs: number;
  /** CPU use (% of one core) of the daemon and of the generator in consecutive intervals of the window. */
  cpuTimeline: { intervalMs: number; server: number[]; generator: number[]; machine: number[] };
}

export interface IdleJob {
  kind: "idle-open";
  url: string;
  token: string;
  count: number;
}

export interface IdleResult {
  opened: number;
  connectMs: number;
}

type Reply = { ok: true; value: unknown } | { ok: false; error: string };

export class FanoutGenerator {
  private readonly child: ChildProcess;
  private waiting?: { resolve: (r: unknown) => void; reject: (e: Error) => void };

  constructor() {
    this.child = track(fork(join(ROOT, "bench/fanout-worker.ts"), [], { cwd: ROOT, execArgv: ["--import", "tsx"] }));
    this.child.on("message", (m) => {
      const reply = m as Reply;
      const waiting = this.waiting;
      this.waiting = undefined;
      if (reply.ok) waiting?.resolve(reply.value);
      else waiting?.reject(new Error(reply.error));
    });
    this.child.on("exit", (code) => this.waiting?.reject(new Error(`live-events generator exited with ${code}`)));
  }

  get pid(): number {
    return this.child.pid!;
  }

  private call<T>(message: unknown): Promise<T> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve: resolve as (r: unknown) => void, reject };
      this.child.send(message as object);
    });
  }

  /** Opens clients, subscribes them to "*", sends at the rate, and closes the clients again. */
  fanout(job: Omit<FanoutJob, "kind">): Promise<FanoutResult> {
    return this.call({ ...job, kind: "fanout" });
  }

  /** Opens `count` subscribed clients and keeps them open until closeIdle(). */
  openIdle(job: Omit<IdleJob, "kind">): Promise<IdleResult> {
    return this.call({ ...job, kind: "idle-open" });
  }

  closeIdle(): Promise<{ closed: number }> {
    return this.call({ kind: "idle-close" });
  }

  close(): void {
    if (this.child.exitCode === null) this.child.kill("SIGTERM");
  }
}
