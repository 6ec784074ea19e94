/**
 * npm run bench -- --scale: the daemon at two data-set sizes side by side — 10,000 chats / 1,000,000 messages and
 * 100,000 chats / 10,000,000 messages (`inboxd seed --accounts 3 --seed 11`, bench/scale.ts) — with bare node:http in
 * the same run, and the Worker's Durable Object in workerd at 1M (bench/worker-scale.ts). One size at a time: its data
 * dir is seeded, measured and deleted before the next is seeded (the 10M one takes several GB). Printed by
 * bench/scale-report.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { LoadGenerator } from "./load.ts";
import { runScaleSize, type ScaleSizeFailure, type ScaleSizeResult } from "./scale.ts";
import { RESTARTS, type ScaleSize } from "./scale-common.ts";
import { killWorkerScale, runWorkerScale, type WorkerScaleResult } from "./worker-scale.ts";
import { calibrate, type Calibration } from "./calibration.ts";

/** The --only values of scale mode: the daemon at each size, and the Durable Object in workerd. */
export const SCALE_SECTIONS = ["scale", "worker-scale"] as const;

export interface ScaleRun {
  date: string;
  quick: boolean;
  cpus: number;
  warmupSeconds: number;
  durationSeconds: number;
  restarts: number;
  /** The machine's calibration at the start of the run (each size and the Worker time their own too). */
  calibration?: Calibration;
  sizes: (ScaleSizeResult | ScaleSizeFailure)[];
  worker?: WorkerScaleResult | { size: ScaleSize; error: string };
  seconds: number;
}

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
    calibration: calibrate(),
    sizes: [],
    seconds: 0,
  };
  const generator = new LoadGenerator();
  try {
    for (const size of o.sizes) {
      const dir = o.scaleDir ? join(o.scaleDir, size.key) : tempDir(`inboxd-scale-${size.key}-`);
      o.log(`${size.key}: ${size.chats} chats, ${size.messages} messages in ${dir}`);
      try {
        run.sizes.push(
          await runScaleSize({
            size,
            dir,
            accounts: o.accounts,
            seed: o.seed,
            warmupSeconds: o.warmupSeconds,
            durationSeconds: o.durationSeconds,
            generator,
            log: o.log,
          }),
        );
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
      const persistDir = o.scaleDir
        ? join(o.scaleDir, `worker-${size.key}`)
        : tempDir(`inboxd-scale-worker-${size.key}-`);
      try {
        run.worker = await runWorkerScale({
          size,
          persistDir,
          accounts: o.accounts,
          seed: o.seed,
          warmupSeconds: o.warmupSeconds,
          durationSeconds: o.durationSeconds,
          generator,
          log: o.log,
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
