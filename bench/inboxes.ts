/**
 * Many inboxes in one Worker (INBOXD_TENANCY=multi, docs/many-inboxes.md), in workerd through Miniflare:
 *
 * - writes: 16 clients, each sending `sends` messages one after another — to 16 inboxes (a client each), then the
 *   same 16 clients to one inbox — in pairs of rounds whose order alternates, so that a drift of the machine's load
 *   favours neither side. Reported: each side's wall time (median of the rounds), sends/s, per-send p50/p99, and
 *   workerd's CPU per send (what the cost model in the docs multiplies). Target: the 16-inbox round ≥ 4× faster.
 * - reads: GET /v1/chats and a search for a common word, at 4 connections, in an inbox of the deployment of many and
 *   in a single-device deployment holding the same seeded data, alternating: p50/p99 each (target: unchanged).
 */
import { basename } from "node:path";
import { makeInbox, OPERATOR_TOKEN } from "../test/harness/inboxes.ts";
import { startWorkerd, type WorkerdServer } from "../test/harness/workerd.ts";
import { childrenRunning, cpuSeconds, machineBusySeconds, median } from "./daemon.ts";

export interface InboxesBenchOptions {
  inboxes: number;
  sends: number;
  pairs: number;
  readRequests: number;
  seed: { chats: number; messages: number; accounts: number; seed: number };
  log: (line: string) => void;
}

interface WriteRound {
  side: "many" | "one";
  wallMs: number;
  sendsPerSecond: number;
  p50: number;
  p99: number;
  workerdCpuMsPerSend: number;
  machineBusy: number;
}

interface ReadSide {
  p50: number;
  p99: number;
}

export interface InboxesBenchResult {
  options: Omit<InboxesBenchOptions, "log">;
  rounds: WriteRound[];
  many: { wallMs: number; sendsPerSecond: number; p50: number; p99: number; workerdCpuMsPerSend: number };
  one: { wallMs: number; sendsPerSecond: number; p50: number; p99: number; workerdCpuMsPerSend: number };
  speedup: number;
  reads: { chats: { inbox: ReadSide; device: ReadSide }; search: { inbox: ReadSide; device: ReadSide } };
  loadavg: { before: number; after: number };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

async function firstQuietChat(url: string, token: string): Promise<string> {
  const res = await fetch(`${url}/v1/chats?limit=20`, { headers: { authorization: `Bearer ${token}` } });
  const { items } = (await res.json()) as { items: { id: string; title: string }[] };
  // Not Echo's chat: Echo answers every message, which would add the network's own writes to the measured ones.
  const chat = items.find((c) => !/echo/i.test(c.title));
  if (!chat) throw new Error("no chat to send to");
  return chat.id;
}

/** `clients` loops, each sending `sends` messages to its own (token, chat) in turn; answers each send's latency. */
async function sendRound(url: string, targets: { token: string; chatID: string }[], sends: number) {
  const latencies: number[] = [];
  await Promise.all(
    targets.map(async ({ token, chatID }, client) => {
      for (let i = 0; i < sends; i++) {
        const started = performance.now();
        const res = await fetch(`${url}/v1/chats/${encodeURIComponent(chatID)}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ text: `bench ${client}.${i}` }),
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`send → ${res.status}`);
        latencies.push(performance.now() - started);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

async function readLatencies(url: string, token: string, path: string, requests: number): Promise<ReadSide> {
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next++ < requests) {
        const started = performance.now();
        const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${path} → ${res.status}`);
        latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

export async function runInboxesBench(options: InboxesBenchOptions): Promise<InboxesBenchResult> {
  const { log } = options;
  const loadBefore = (await import("node:os")).loadavg()[0];
  let many: WorkerdServer | undefined;
  let single: WorkerdServer | undefined;
  try {
    many = await startWorkerd({ operatorToken: OPERATOR_TOKEN });
    const workerd = () => childrenRunning((argv) => basename(argv[0]) === "workerd");
    const targets: { token: string; chatID: string }[] = [];
    for (let i = 0; i < options.inboxes; i++) {
      const asked = `bench-${i}`;
      const tokens = await makeInbox(many.url, `bench-${i}`, {
        seed: { ...options.seed, seed: options.seed.seed + i },
        tokens: [{ token: asked, scopes: ["read", "write"] }],
      });
      targets.push({ token: tokens[asked], chatID: await firstQuietChat(many.url, tokens[asked]) });
    }
    log(`inboxes: ${options.inboxes} inboxes made in one deployment (workerd pid ${workerd().join(", ")})`);
    // Warm every object (and the one inbox's own path) before measuring.
    await sendRound(many.url, targets, 3);
    const oneInbox = targets.map(() => targets[0]);
    await sendRound(many.url, oneInbox, 3);

    const rounds: WriteRound[] = [];
    for (let pair = 0; pair < options.pairs; pair++) {
      const order: ("many" | "one")[] = pair % 2 === 0 ? ["many", "one"] : ["one", "many"];
      for (const side of order) {
        const pids = workerd();
        const cpu0 = pids.reduce((s, pid) => s + cpuSeconds(pid), 0);
        const busy0 = machineBusySeconds();
        const started = performance.now();
        const latencies = await sendRound(many.url, side === "many" ? targets : oneInbox, options.sends);
        const wallMs = performance.now() - started;
        const cpu = pids.reduce((s, pid) => s + cpuSeconds(pid), 0) - cpu0;
        const round: WriteRound = {
          side,
          wallMs,
          sendsPerSecond: (latencies.length / wallMs) * 1000,
          p50: quantile(latencies, 0.5),
          p99: quantile(latencies, 0.99),
          workerdCpuMsPerSend: (cpu * 1000) / latencies.length,
          machineBusy: machineBusySeconds() - busy0,
        };
        rounds.push(round);
        log(
          `inboxes: ${side === "many" ? `${options.inboxes} inboxes` : "one inbox"}: ${latencies.length} sends in ${Math.round(wallMs)} ms (p50 ${round.p50.toFixed(1)} ms, p99 ${round.p99.toFixed(1)} ms, workerd ${round.workerdCpuMsPerSend.toFixed(2)} CPU-ms/send)`,
        );
      }
    }
    const summary = (side: "many" | "one") => {
      const of = rounds.filter((r) => r.side === side);
      return {
        wallMs: median(of.map((r) => r.wallMs)),
        sendsPerSecond: median(of.map((r) => r.sendsPerSecond)),
        p50: median(of.map((r) => r.p50)),
        p99: median(of.map((r) => r.p99)),
        workerdCpuMsPerSend: median(of.map((r) => r.workerdCpuMsPerSend)),
      };
    };

    // Reads: an inbox of the deployment of many beside a single device with the same data, alternating.
    single = await startWorkerd({ token: "inbx_bench-single-device", seed: options.seed });
    const reader = targets[0].token;
    const reads = {
      chats: { inbox: [] as ReadSide[], device: [] as ReadSide[] },
      search: { inbox: [] as ReadSide[], device: [] as ReadSide[] },
    };
    const paths = { chats: "/v1/chats?limit=25", search: "/v1/messages/search?query=the&limit=20" };
    // The single device's first request waits for its seed; then both are warmed alike.
    for (const kind of ["chats", "search"] as const) {
      await readLatencies(single.url, "inbx_bench-single-device", paths[kind], 20);
      await readLatencies(many.url, reader, paths[kind], 20);
    }
    for (let pair = 0; pair < options.pairs; pair++)
      for (const kind of ["chats", "search"] as const) {
        const inboxFirst = pair % 2 === 0;
        const measure = (where: "inbox" | "device") =>
          where === "inbox"
            ? readLatencies(many!.url, reader, paths[kind], options.readRequests)
            : readLatencies(single!.url, "inbx_bench-single-device", paths[kind], options.readRequests);
        for (const where of inboxFirst ? (["inbox", "device"] as const) : (["device", "inbox"] as const))
          reads[kind][where].push(await measure(where));
      }
    const mid = (sides: ReadSide[]) => ({ p50: median(sides.map((s) => s.p50)), p99: median(sides.map((s) => s.p99)) });
    const manySide = summary("many");
    const oneSide = summary("one");
    return {
      options: { ...options, log: undefined } as unknown as Omit<InboxesBenchOptions, "log">,
      rounds,
      many: manySide,
      one: oneSide,
      speedup: oneSide.wallMs / manySide.wallMs,
      reads: {
        chats: { inbox: mid(reads.chats.inbox), device: mid(reads.chats.device) },
        search: { inbox: mid(reads.search.inbox), device: mid(reads.search.device) },
      },
      loadavg: { before: loadBefore, after: (await import("node:os")).loadavg()[0] },
    };
  } finally {
    await many?.stop();
    await single?.stop();
  }
}

export function formatInboxes(r: InboxesBenchResult): string {
  const ms = (n: number) => `${n.toFixed(1)} ms`;
  const o = r.options;
  const lines = [
    `Many inboxes in one Worker (workerd through Miniflare): ${o.inboxes} clients × ${o.sends} sends, ${o.pairs} pairs of rounds (order alternating), medians`,
    `  ${o.inboxes} inboxes, a client each: ${Math.round(r.many.wallMs)} ms, ${Math.round(r.many.sendsPerSecond)} sends/s, p50 ${ms(r.many.p50)}, p99 ${ms(r.many.p99)}, workerd ${r.many.workerdCpuMsPerSend.toFixed(2)} CPU-ms/send`,
    `  one inbox, the same ${o.inboxes} clients: ${Math.round(r.one.wallMs)} ms, ${Math.round(r.one.sendsPerSecond)} sends/s, p50 ${ms(r.one.p50)}, p99 ${ms(r.one.p99)}, workerd ${r.one.workerdCpuMsPerSend.toFixed(2)} CPU-ms/send`,
    `  speedup ${r.speedup.toFixed(2)}× (target ≥ 4×: ${r.speedup >= 4 ? "met" : "MISS"})`,
    `  reads at 4 connections, ${o.readRequests} requests a round (an inbox of many | a single device with the same data):`,
    `    GET /v1/chats       p50 ${ms(r.reads.chats.inbox.p50)} | ${ms(r.reads.chats.device.p50)}, p99 ${ms(r.reads.chats.inbox.p99)} | ${ms(r.reads.chats.device.p99)}`,
    `    search "the"        p50 ${ms(r.reads.search.inbox.p50)} | ${ms(r.reads.search.device.p50)}, p99 ${ms(r.reads.search.inbox.p99)} | ${ms(r.reads.search.device.p99)}`,
    `  load average ${r.loadavg.before.toFixed(2)} before, ${r.loadavg.after.toFixed(2)} after`,
  ];
  return lines.join("\n");
}
