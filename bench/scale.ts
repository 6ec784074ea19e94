/**
 * The daemon in scale mode (bench/scale-mode.ts), one data-set size at a time, with bare node:http in the same run.
 *
 * Per size: the seed (wall clock of the CLI process, and its peak RSS, VmHWM polled every 200 ms while it lives); a
 * first start, then RESTARTS restarts (ms from spawn to the first 200 on GET /v1/chats, each listed); the RSS of the
 * serving process tree (the daemon and any descendants) idle after the last restart and after the load; GET /v1/chats
 * at 16 connections beside bare node:http answering the same bytes; search for two common words at 4; sends at 16 to
 * one chat and spread over 16 chats (a 13-word text); then how long requests wait while a new chat snapshot is
 * written (bench/resnapshot.ts); the data dir's size on disk. Printed by bench/scale-report.ts.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { sleep } from "../test/kit/common.ts";
import { createToken, median, memory, ROOT, spawnNode, startBaseline, startDaemon, type Daemon } from "./daemon.ts";
import type { LoadGenerator, RequestSpec } from "./load.ts";
import { measureResnapshot, type ResnapshotResult } from "./resnapshot.ts";
import { calibrate, formatCalibration, type Calibration } from "./calibration.ts";
import {
  diskBytes,
  measurePhase,
  mergePhases,
  RESTARTS,
  scaleWorkload,
  treePeak,
  treeRss,
  type Phase,
  type ScaleSize,
} from "./scale-common.ts";
import { segment } from "./workload.ts";

export interface ScaleSizeResult {
  size: ScaleSize;
  dir: string;
  /** Undefined: the seed was skipped (a data dir from an earlier run under --scale-dir). */
  seed?: { seconds: number; peakRssMB: number };
  disk: { afterSeedBytes: number; afterRunBytes: number };
  firstStartMs: number;
  restartsMs: number[];
  readyMedianMs: number;
  rss: { idleMB: number; idleProcesses: number; afterLoadMB: number; daemonPeakMB: number };
  chatsBodyBytes: number;
  sendText: string;
  /** bare and chats: CHAT_LIST_PAIRS alternating rounds each, merged (mergePhases). */
  phases: { bare: Phase; chats: Phase; search: Phase; sendOne: Phase; sendSpread: Phase };
  /** The chat list's req/s as a share of bare node:http's, one per pair of rounds; absent in older results. */
  chatsShares?: number[];
  /** Requests' waits while a new chat snapshot is written (bench/resnapshot.ts); absent in results of older runs. */
  resnapshot?: ResnapshotResult;
  /** The machine's calibration (bench/calibration.ts), timed just before this size's load phases. */
  calibration?: Calibration;
  /** 1-minute load average before and after this size (the machine is shared). */
  loadavg: { before: number; after: number };
  seconds: number;
}

export interface ScaleSizeFailure {
  size: ScaleSize;
  error: string;
}

/** Pause after the last restart before the idle RSS reading. */
const IDLE_SETTLE_MS = 2000;
export const READ_CONCURRENCY = 16;
/** Rounds of bare node:http and of GET /v1/chats, alternating (see runScaleSize). */
export const CHAT_LIST_PAIRS = 3;
export const SEARCH_CONCURRENCY = 4;
export const SEND_CONCURRENCY = 16;
export const SPREAD_CHATS = 16;
/** 13 words, the counter included. */
export const SEND_TEXT = "bench message {n}: see you at the station tomorrow morning before the train";
const CLI = join(ROOT, "adapters/node/cli.ts");

/** `inboxd seed` as a child process; its VmHWM is read every 200 ms while it lives (the last reading is its peak). */
async function seed(dir: string, size: ScaleSize, accounts: number, seedValue: number, log: (line: string) => void) {
  const args = [
    "seed",
    "--data-dir",
    dir,
    "--chats",
    String(size.chats),
    "--messages",
    String(size.messages),
    "--accounts",
    String(accounts),
    "--seed",
    String(seedValue),
  ];
  log(`inboxd ${args.join(" ")}`);
  const started = performance.now();
  const child = spawnNode(CLI, args);
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    for (const line of chunk.toString().split("\n")) if (line.trim()) log(`  seed: ${line.trim()}`);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  let peakMB = 0;
  const poll = () => {
    if (child.pid && child.exitCode === null) peakMB = Math.max(peakMB, treePeak(child.pid));
  };
  const timer = setInterval(poll, 200);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearInterval(timer);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0)
    throw new Error(
      `inboxd seed exited with ${code} after ${seconds.toFixed(1)} s (peak RSS ${peakMB.toFixed(0)} MB):\n${output}`,
    );
  return { seconds, peakRssMB: peakMB };
}

/** One size: seed (unless reused), restarts, memory, load phases, disk. */
export async function runScaleSize(o: {
  size: ScaleSize;
  dir: string;
  accounts: number;
  seed: number;
  warmupSeconds: number;
  durationSeconds: number;
  generator: LoadGenerator;
  log: (line: string) => void;
}): Promise<ScaleSizeResult> {
  const log = (line: string) => o.log(`${o.size.key}: ${line}`);
  const started = performance.now();
  const loadBefore = os.loadavg()[0];
  let seedResult: ScaleSizeResult["seed"];
  if (existsSync(join(o.dir, "inboxd.sqlite3"))) log(`reusing ${o.dir} (no seed)`);
  else {
    mkdirSync(o.dir, { recursive: true });
    seedResult = await seed(o.dir, o.size, o.accounts, o.seed, log);
    log(`seeded in ${seedResult.seconds.toFixed(1)} s, peak RSS ${seedResult.peakRssMB.toFixed(0)} MB`);
  }
  const afterSeedBytes = diskBytes(o.dir);
  const token = await createToken(o.dir);
  let daemon: Daemon | undefined = await startDaemon(o.dir, token);
  try {
    const firstStartMs = daemon.readyMs;
    log(`first start: ready in ${firstStartMs.toFixed(0)} ms (pid ${daemon.pid})`);
    const restartsMs: number[] = [];
    for (let i = 0; i < RESTARTS; i++) {
      await daemon.stop();
      daemon = undefined;
      daemon = await startDaemon(o.dir, token);
      restartsMs.push(daemon.readyMs);
      log(`restart ${i + 1}/${RESTARTS}: ready in ${daemon.readyMs.toFixed(0)} ms (pid ${daemon.pid})`);
    }
    await sleep(IDLE_SETTLE_MS);
    const idle = treeRss(daemon.pid);
    log(
      `idle RSS of the daemon's process tree: ${idle.mb.toFixed(0)} MB (${idle.processes} process${idle.processes === 1 ? "" : "es"})`,
    );

    const calibration = calibrate();
    log(formatCalibration(calibration));
    const work = await scaleWorkload(daemon.url, token);
    const targets = work.chatIDs.filter((id) => !work.echoChatIDs.includes(id));
    if (targets.length < SPREAD_CHATS)
      throw new Error(`only ${targets.length} chats besides the Echo chats; the spread sends need ${SPREAD_CHATS}`);
    const body = JSON.stringify({ text: SEND_TEXT });
    const send = (id: string): RequestSpec => ({ method: "POST", path: `/v1/chats/${segment(id)}/messages`, body });
    const phase = (
      name: string,
      pids: number[],
      url: string,
      requests: RequestSpec[],
      concurrency: number,
      auth = true,
    ) =>
      measurePhase(o.generator, {
        name,
        serverPids: pids,
        url,
        token: auth ? token : undefined,
        requests,
        concurrency,
        warmupSeconds: o.warmupSeconds,
        durationSeconds: o.durationSeconds,
        log,
      });

    // Bare node:http and the chat list in alternating rounds: on a shared machine whose speed drifts within minutes
    // (the calibration moves by a third within a run), one round of each compared the list with bare at another
    // speed. Each pair is measured back to back; the share is the median of the pairs' shares.
    const bodyFile = join(os.tmpdir(), `inboxd-scale-body-${process.pid}.json`);
    writeFileSync(bodyFile, work.chatsBody);
    const pid = [daemon.pid];
    const bareRounds: Phase[] = [],
      chatsRounds: Phase[] = [];
    try {
      const baseline = await startBaseline(bodyFile);
      try {
        for (let round = 1; round <= CHAT_LIST_PAIRS; round++) {
          const of = `round ${round} of ${CHAT_LIST_PAIRS}`;
          bareRounds.push(
            await phase(
              `bare node:http, same ${work.chatsBody.length} B body, ${of}`,
              [baseline.pid],
              baseline.url,
              [{ method: "GET", path: "/" }],
              READ_CONCURRENCY,
              false,
            ),
          );
          chatsRounds.push(await phase(`GET /v1/chats, ${of}`, pid, daemon.url, work.requests.chats, READ_CONCURRENCY));
          const share = chatsRounds.at(-1)!.result.rps / bareRounds.at(-1)!.result.rps;
          log(`  share of bare in ${of}: ${(share * 100).toFixed(0)} %`);
        }
      } finally {
        await baseline.stop();
      }
    } finally {
      rmSync(bodyFile, { force: true });
    }
    const bare = mergePhases("bare node:http", bareRounds);
    const chats = mergePhases("GET /v1/chats", chatsRounds);
    const chatsShares = chatsRounds.map((c, i) => c.result.rps / bareRounds[i].result.rps);
    const search = await phase(
      "search: two common words",
      pid,
      daemon.url,
      work.requests.searchCommon,
      SEARCH_CONCURRENCY,
    );
    const sendOne = await phase("POST send, one chat", pid, daemon.url, [send(targets[0])], SEND_CONCURRENCY);
    const sendSpread = await phase(
      `POST send, ${SPREAD_CHATS} chats`,
      pid,
      daemon.url,
      targets.slice(0, SPREAD_CHATS).map(send),
      SEND_CONCURRENCY,
    );
    const afterLoad = treeRss(daemon.pid);
    const daemonPeakMB = memory(daemon.pid).peakMB;
    // After the RSS figures: it is not part of the load they are judged on.
    const resnapshot = await measureResnapshot(daemon.url, token, SEND_TEXT);
    log(
      `re-snapshot: ${resnapshot.chats} chats changed in ${resnapshot.sendSeconds.toFixed(1)} s; longest wait ${resnapshot.max.toFixed(1)} ms`,
    );
    await daemon.stop();
    daemon = undefined;
    const result: ScaleSizeResult = {
      size: o.size,
      dir: o.dir,
      seed: seedResult,
      disk: { afterSeedBytes, afterRunBytes: diskBytes(o.dir) },
      firstStartMs,
      restartsMs,
      readyMedianMs: median(restartsMs),
      rss: { idleMB: idle.mb, idleProcesses: idle.processes, afterLoadMB: afterLoad.mb, daemonPeakMB },
      chatsBodyBytes: work.chatsBody.length,
      sendText: SEND_TEXT,
      phases: { bare, chats, search, sendOne, sendSpread },
      chatsShares,
      resnapshot,
      calibration,
      loadavg: { before: loadBefore, after: os.loadavg()[0] },
      seconds: (performance.now() - started) / 1000,
    };
    return result;
  } finally {
    await daemon?.stop();
  }
}
