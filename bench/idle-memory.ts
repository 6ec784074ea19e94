/**
 * Memory per idle WebSocket connection: the daemon (started with --inspect) is read with no client and with N
 * subscribed, idle clients, over a few rounds. Each reading waits a settle delay and reads VmRSS, then forces two
 * full GCs through the inspector and reads VmRSS and the V8 heap in use again. A first round opens and closes the
 * clients unmeasured, so that one-time costs (code compiled on first use, allocator pools) are not charged to
 * the connections, and is followed by a pause in which V8 returns its start-up memory to the system. Per connection = (reading with N − the reading with none just before it) / N; the median of
 * the rounds is reported.
 */
import { sleep } from "../test/kit/common.ts";
import { median, memory, type Daemon } from "./daemon.ts";
import { FanoutGenerator } from "./fanout.ts";
import { connectInspector } from "./inspector.ts";

export interface MemoryReading {
  /** VmRSS after the settle delay, before any forced GC. */
  settledMB: number;
  /** VmRSS after two forced full GCs. */
  afterGcMB: number;
  /** V8 heap in use after them. */
  heapUsedMB: number;
}

export interface IdleMemoryResult {
  connections: number;
  rounds: number;
  settleMs: number;
  /** Time to open and subscribe the clients, per round, ms. */
  connectMs: number[];
  /** Readings: none (after the unmeasured round), then per round with N and with none again. */
  readings: { clients: number; reading: MemoryReading }[];
  /**
   * Per connection, KB: the median over the rounds, and each round. rssSettled compares readings taken before the
   * forced GCs, which depend on when the daemon last collected; rss (after the GCs) is the figure to quote.
   */
  perConnectionKB: { rss: number; rssSettled: number; heap: number };
  roundsKB: { rss: number; rssSettled: number; heap: number }[];
}

const STARTUP_SETTLE_MS = 8000;

export async function measureIdleMemory(
  daemon: Daemon,
  token: string,
  connections: number,
  rounds: number,
  settleMs: number,
  log: (line: string) => void,
): Promise<IdleMemoryResult> {
  if (daemon.inspectPort === undefined) throw new Error("the daemon needs to be started with { inspect: true }");
  const inspector = await connectInspector(daemon.inspectPort);
  // A generator process of its own, so that the fan-out's generator starts without the garbage of these clients.
  const generator = new FanoutGenerator();
  try {
    const read = async (): Promise<MemoryReading> => {
      await sleep(settleMs);
      const settledMB = memory(daemon.pid).rssMB;
      await inspector.collectGarbage();
      await inspector.collectGarbage();
      await sleep(500);
      const heap = await inspector.heapUsage();
      return { settledMB, afterGcMB: memory(daemon.pid).rssMB, heapUsedMB: heap.usedSize / 2 ** 20 };
    };
    const readings: IdleMemoryResult["readings"] = [];
    const connectMs: number[] = [];
    const roundsKB: IdleMemoryResult["roundsKB"] = [];
    await generator.openIdle({ url: daemon.url, token, count: connections });
    await generator.closeIdle();
    // V8 gives memory back to the system some seconds after start-up and after the first full GCs: let that pass
    // before the first reading, so that it does not land inside a round.
    await inspector.collectGarbage();
    await sleep(STARTUP_SETTLE_MS);
    let before = await read();
    readings.push({ clients: 0, reading: before });
    for (let round = 1; round <= rounds; round++) {
      connectMs.push((await generator.openIdle({ url: daemon.url, token, count: connections })).connectMs);
      const idle = await read();
      await generator.closeIdle();
      const after = await read();
      readings.push({ clients: connections, reading: idle }, { clients: 0, reading: after });
      const kb = (key: keyof MemoryReading) => ((idle[key] - before[key]) * 1024) / connections;
      roundsKB.push({ rss: kb("afterGcMB"), rssSettled: kb("settledMB"), heap: kb("heapUsedMB") });
      log(
        `  round ${round}: RSS ${before.afterGcMB.toFixed(1)} → ${idle.afterGcMB.toFixed(1)} → ${after.afterGcMB.toFixed(1)} MB after GC (${roundsKB.at(-1)!.rss.toFixed(1)} KB per connection)`,
      );
      before = after;
    }
    return {
      connections,
      rounds,
      settleMs,
      connectMs,
      readings,
      perConnectionKB: {
        rss: median(roundsKB.map((r) => r.rss)),
        rssSettled: median(roundsKB.map((r) => r.rssSettled)),
        heap: median(roundsKB.map((r) => r.heap)),
      },
      roundsKB,
    };
  } finally {
    generator.close();
    inspector.close();
  }
}
