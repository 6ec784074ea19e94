/**
 * The Worker's Durable Object (adapters/workers/inbox-object.ts) on a large data set, in workerd through Miniflare:
 * GET /v1/chats and the search for two common words, p50/p99 at 4 and 16 connections.
 *
 * The data set gets into the object the supported way: the Worker's INBOXD_SEED var (wrangler.toml), with which the
 * object fills an empty store on its first request after a wake — src/seed/dataset.ts's seedDataset, the same code
 * and options as `inboxd seed`, writing through the object's own storage driver. So the first GET /v1/chats after
 * start waits for the seed; its time is reported as the seed's. The object's storage is SQLite under a persist dir
 * (Miniflare's durableObjectsPersist): a temp dir, or `--scale-dir DIR/worker-<size>`, reused by later runs (a marker
 * file says the seed finished). The bundle is built here as test/harness/workerd.ts builds it, with the same bindings,
 * plus that persist dir.
 */
import { calibrate, formatCalibration, type Calibration } from "./calibration.ts";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { basename, join } from "node:path";
import { randomBytes } from "node:crypto";
import { bundleWorker, workerOptions } from "../test/harness/workerd.ts";
import { sleep } from "../test/kit/common.ts";
import { Miniflare, type MiniflareOptions } from "miniflare";
import { childrenRunning, getOnce, median } from "./daemon.ts";
import type { LoadGenerator } from "./load.ts";
import {
  diskBytes,
  measurePhase,
  RESTARTS,
  scaleWorkload,
  treePeak,
  treeRss,
  type Phase,
  type ScaleSize,
} from "./scale-common.ts";

export interface WorkerScaleResult {
  size: ScaleSize;
  persistDir: string;
  /** Undefined: skipped (a persist dir seeded by an earlier run under --scale-dir). */
  seed?: { seconds: number; workerdPeakMB: number };
  /** ms from `new Miniflare()` to workerd listening, at the first start. */
  firstWorkerdUpMs: number;
  /** Each restart: a new workerd process on the same storage; ms to workerd listening and to the first 200 on GET /v1/chats. */
  restarts: { workerdUpMs: number; readyMs: number }[];
  readyMedianMs: number;
  rss: { afterSeedMB: number; idleMB: number; afterLoadMB: number; peakMB: number };
  diskBytes: number;
  concurrency: number[];
  phases: { chats: Phase[]; search: Phase[] };
  /** The machine's calibration (bench/calibration.ts), timed just before the load phases. */
  calibration?: Calibration;
  loadavg: { before: number; after: number };
  seconds: number;
}

export const WORKER_CONCURRENCY = [4, 16];
const IDLE_SETTLE_MS = 2000;
const MARKER = "inboxd-bench-seeded.json";

/** The workerd processes of the running Miniflare, for killWorkerScale() when the bench is interrupted. */
let workerdPids: number[] = [];

export function killWorkerScale(): void {
  for (const pid of workerdPids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  workerdPids = [];
}

export async function runWorkerScale(o: {
  size: ScaleSize;
  persistDir: string;
  accounts: number;
  seed: number;
  warmupSeconds: number;
  durationSeconds: number;
  generator: LoadGenerator;
  log: (line: string) => void;
}): Promise<WorkerScaleResult> {
  const log = (line: string) => o.log(`worker ${o.size.key}: ${line}`);
  const started = performance.now();
  const loadBefore = os.loadavg()[0];
  const marker = join(o.persistDir, MARKER);
  const reused = existsSync(marker);
  if (!reused && existsSync(o.persistDir) && readdirSync(o.persistDir).length) {
    log(`${o.persistDir} holds an unfinished seed; starting over`);
    rmSync(o.persistDir, { recursive: true, force: true });
  }
  mkdirSync(o.persistDir, { recursive: true });
  const outdir = mkdtempSync(join(os.tmpdir(), "inboxd-scale-workerd-"));
  const token = randomBytes(24).toString("base64url");
  let mf: Miniflare | undefined;
  try {
    await bundleWorker(outdir);
    const config: MiniflareOptions = {
      ...(await workerOptions(outdir)),
      bindings: {
        INBOXD_ADMIN_TOKEN: token,
        INBOXD_SEED: JSON.stringify({
          chats: o.size.chats,
          messages: o.size.messages,
          accounts: o.accounts,
          seed: o.seed,
        }),
        INBOXD_RATE_LIMIT: "off",
      },
      durableObjectsPersist: o.persistDir,
      handleStructuredLogs: ({ level, message }: { level: string; message: string }) =>
        void log(`workerd ${level}: ${message.trim().slice(0, 2000)}`),
    };
    /** A new workerd on the persisted storage: ms to listening, and its URL. */
    const start = async () => {
      const t0 = performance.now();
      mf = new Miniflare(config);
      const url = (await mf.ready).toString().replace(/\/$/, "");
      workerdPids = childrenRunning((argv) => basename(argv[0]) === "workerd");
      if (!workerdPids.length) throw new Error("workerd was not found among the bench's child processes");
      return { url, t0, upMs: performance.now() - t0 };
    };
    const firstChats = async (url: string) => {
      const r = await getOnce(`${url}/v1/chats`, token);
      if (r.status !== 200) throw new Error(`GET /v1/chats answered ${r.status}: ${r.body.toString().slice(0, 500)}`);
    };

    let { url, upMs: firstWorkerdUpMs } = await start();
    log(
      `workerd up in ${firstWorkerdUpMs.toFixed(0)} ms at ${url} (pid ${workerdPids.join(", ")}), storage in ${o.persistDir}`,
    );
    let seed: WorkerScaleResult["seed"];
    {
      log(
        reused
          ? "reusing the seeded storage (no seed): first request"
          : `seeding ${o.size.chats} chats, ${o.size.messages} messages inside the Durable Object (INBOXD_SEED, first request)`,
      );
      const t0 = performance.now();
      let peakMB = 0,
        lastLog = t0;
      const timer = setInterval(() => {
        peakMB = Math.max(peakMB, treePeak(...workerdPids));
        if (performance.now() - lastLog > 30_000) {
          lastLog = performance.now();
          log(
            `  still seeding after ${((lastLog - t0) / 1000).toFixed(0)} s: workerd RSS ${treeRss(...workerdPids).mb.toFixed(0)} MB, storage ${(diskBytes(o.persistDir) / 2 ** 20).toFixed(0)} MB`,
          );
        }
      }, 500);
      try {
        await firstChats(url);
      } finally {
        clearInterval(timer);
      }
      peakMB = Math.max(peakMB, treePeak(...workerdPids));
      const seconds = (performance.now() - t0) / 1000;
      if (!reused) {
        seed = { seconds, workerdPeakMB: peakMB };
        writeFileSync(
          marker,
          JSON.stringify({ ...o.size, accounts: o.accounts, seed: o.seed, seconds, date: new Date().toISOString() }),
        );
        log(
          `seeded in ${seconds.toFixed(1)} s (first GET /v1/chats answered), workerd peak RSS ${peakMB.toFixed(0)} MB`,
        );
      } else log(`first GET /v1/chats answered after ${(seconds * 1000).toFixed(0)} ms`);
    }
    const afterSeedMB = treeRss(...workerdPids).mb;

    const restarts: WorkerScaleResult["restarts"] = [];
    for (let i = 0; i < RESTARTS; i++) {
      await mf!.dispose();
      mf = undefined;
      workerdPids = [];
      const s = await start();
      url = s.url;
      await firstChats(url);
      const readyMs = performance.now() - s.t0;
      restarts.push({ workerdUpMs: s.upMs, readyMs });
      log(
        `restart ${i + 1}/${RESTARTS}: workerd up in ${s.upMs.toFixed(0)} ms, first 200 on GET /v1/chats after ${readyMs.toFixed(0)} ms`,
      );
    }
    await sleep(IDLE_SETTLE_MS);
    const idleMB = treeRss(...workerdPids).mb;
    log(`workerd RSS idle after the last restart: ${idleMB.toFixed(0)} MB`);

    const calibration = calibrate();
    log(formatCalibration(calibration));
    const work = await scaleWorkload(url, token);
    const phases: WorkerScaleResult["phases"] = { chats: [], search: [] };
    const phase = (name: string, requests: typeof work.requests.chats, concurrency: number) =>
      measurePhase(o.generator, {
        name: `Worker ${name}`,
        serverPids: workerdPids,
        url,
        token,
        requests,
        concurrency,
        warmupSeconds: o.warmupSeconds,
        durationSeconds: o.durationSeconds,
        log,
      });
    for (const c of WORKER_CONCURRENCY) phases.chats.push(await phase("GET /v1/chats", work.requests.chats, c));
    for (const c of WORKER_CONCURRENCY)
      phases.search.push(await phase("search: two common words", work.requests.searchCommon, c));
    const afterLoadMB = treeRss(...workerdPids).mb;
    const peakMB = treePeak(...workerdPids);
    await mf!.dispose();
    mf = undefined;
    workerdPids = [];
    return {
      size: o.size,
      persistDir: o.persistDir,
      seed,
      firstWorkerdUpMs,
      restarts,
      readyMedianMs: median(restarts.map((r) => r.readyMs)),
      rss: { afterSeedMB, idleMB, afterLoadMB, peakMB },
      diskBytes: diskBytes(o.persistDir),
      concurrency: WORKER_CONCURRENCY,
      phases,
      calibration,
      loadavg: { before: loadBefore, after: os.loadavg()[0] },
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await mf?.dispose().catch(() => undefined);
    killWorkerScale();
    rmSync(outdir, { recursive: true, force: true });
  }
}
