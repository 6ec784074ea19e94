/**
 * npm run bench: seeds a data set, starts the daemon, measures each endpoint next to a bare node:http server
 * answering a same-size body, and prints p50/p95/p99 latency, requests/s and the targets of the issue.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  cpuSeconds,
  createToken,
  daemonNodeVersion,
  killAll,
  median,
  memory,
  runCli,
  startBaseline,
  startDaemon,
  useNode,
  type Daemon,
} from "./daemon.ts";
import { FanoutGenerator, type FanoutResult } from "./fanout.ts";
import { measureAssetMemory } from "./asset-memory.ts";
import { LoadGenerator, type LoadResult, type RequestSpec } from "./load.ts";
import { measureIdleMemory } from "./idle-memory.ts";
import { formatReport, type LiveRow, type Row } from "./report.ts";
import { compareBindings, formatBindings } from "./sqlite-bindings.ts";
import { checkMcpSearch, mcpModernSearchRequests, mcpSearchRequests, measureSseSessionMemory } from "./mcp.ts";
import { buildWorkload, listChatIDs, type Workload } from "./workload.ts";
import { killXmpp, runXmppBench } from "./xmpp.ts";
import { RateLimiter } from "../src/http/rate-limit.ts";
import { formatXmpp } from "./xmpp-report.ts";
import { killMatrix, runMatrixBench } from "./matrix.ts";
import { formatMatrix } from "./matrix-report.ts";
import { formatE2ee, killE2ee, runE2eeBench } from "./matrix-e2ee.ts";
import { killUpstream, runUpstreamBench } from "./upstream.ts";
import { formatUpstream } from "./upstream-report.ts";
import { runWebBench, webRows } from "./web.ts";
import { formatEvents, runEventsBench } from "./events.ts";
import { formatRelay, killRelay, runRelayBench } from "./relay.ts";
import { formatInboxes, runInboxesBench } from "./inboxes.ts";
import { parseSize } from "./scale-common.ts";
import { cleanupScale, runScaleBench, SCALE_SECTIONS } from "./scale-mode.ts";
import { formatScale } from "./scale-report.ts";

const HELP = `Usage: npm run bench -- [options]

Seeds a data set, starts inboxd, and measures each endpoint (p50/p95/p99 latency, requests/s) next to a bare
node:http server answering a body of the same size, against the targets for 10,000 chats / 1,000,000 messages.
Then live events on a freshly started daemon: the fan-out of message events to WebSocket clients subscribed to
every chat while messages are sent at a fixed rate, and the daemon's memory per idle WebSocket connection. (A
fan-out window during which other processes took over 30 % of a core, or every CPU was busy for 0.5 s or more,
is measured again, up to 3 times in all; the quietest attempt is reported.)

  --chats N          chats to seed (default 10000)
  --messages N       messages to seed (default 1000000)
  --accounts N       accounts to seed (default 2; --scale: 3)
  --quick            smoke run: 1000 chats, 50000 messages, 2 s per measurement (unless given explicitly)
  --duration S       seconds measured per endpoint (default 5)
  --warmup S         seconds of discarded warm-up per endpoint (default 1)
  --concurrency N    concurrent clients for the read endpoints (default 8)
  --only LIST        run only these sections, comma-separated: bindings (the SQLite bindings of Node 20, 22 and
                     24 side by side), endpoints (the HTTP endpoints, restarts, seed and RSS figures), mcp (MCP
                     tools/call search_messages beside the same REST search, memory per open /v0/sse session),
                     fanout (live events), assets (memory during a large upload + download), xmpp (a real Prosody:
                     backfill of archived messages at login, send → other client latency beside a plain client),
                     matrix (a real Synapse 1.67: backfill of one room's messages at login, send → other client
                     latency, catch-up of messages sent while the daemon was down, one sync of 1,000 events
                     ingested (timed at a proxy), RSS of an idle connected account; each beside a plain Matrix
                     client doing the same work), matrix-e2ee (the same Synapse work in an encrypted room beside
                     a plain one: catch-up of --matrix-messages messages sent while the daemon was down, and send
                     → the other client, matrix-js-sdk with its Rust crypto),
                     upstream (the desktop-api connector against a second inboxd with one sandbox chat of
                     --upstream-messages: its backfill at login and paging back through fetchHistory, each beside a
                     plain client paging the upstream's API, and send → Echo's answer on /v1/ws through inboxd beside
                     the same round trip straight to the upstream),
                     ratelimit (GET /v1/chats with the rate limiter on and off, alternating rounds), web (the web
                     inbox in Debian's chromium: first chat rows painted, cold and warm loads, scrolling the chat
                     list through every chat, the bundle's size), events (the durable event log on a data set of its
                     own, a tenth of --chats/--messages: replay to a resuming client over /v1/ws, SSE and JSON pages;
                     sends/s at 16 clients with and without the log, alternating rounds; bytes stored per event),
                     relay (GET /v1/chats direct to a daemon and through the relay Worker in workerd it dials in to,
                     at 1 and --concurrency clients, alternating rounds; on its own data set, a tenth of
                     --chats/--messages; target ≤ 2 ms added at p50), inboxes (many inboxes in one Worker, in
                     workerd: 16 clients sending to 16 inboxes beside the same 16 sending to one, alternating rounds,
                     target ≥ 4× faster; GET /v1/chats and search in an inbox of many beside a single device with the
                     same data)
  --inbox-sends N    sends per client per round of the inboxes section (default 200; --quick: 50)
  --node V           run inboxd (seed, daemon) and the bare baseline server on Node V: 20, 22, 24 (installed by
                     .ci/with-node on first use) or system (default: the node running the bench)
  --binding-rounds N rounds of the bindings comparison, median reported (default 3; --quick: 1); it uses a tenth
                     of --chats and --messages
  --asset-mb N       size of the file uploaded and served by the assets section (default 500; --quick: 100)
  --fanout-clients N WebSocket clients subscribed to "*" during the fan-out (default 100)
  --fanout-rate N    sends per second during the fan-out, open loop (default 200)
  --fanout-seconds S seconds measured for the fan-out, after the warm-up (default 10; --quick: 5)
  --idle-connections N  idle subscribed connections for the memory per connection (default 1000)
  --mcp-sessions N   open, initialized /v0/sse sessions for the memory per session (default 200, the server's cap)
  --xmpp-messages N  archived messages each XMPP backfill round reads at login (default 10000; --quick: 1000)
  --xmpp-sends N     measured sends of each XMPP latency path, after 20 warm-up ones (default 500; --quick: 100)
  --xmpp-cpu-prof DIR  start the XMPP section's daemons with --cpu-prof, writing their profiles into DIR
  --matrix-messages N  messages in the Matrix backfill room, all loaded at login (default 10000; --quick: 1000)
  --matrix-sends N   measured sends of each Matrix latency path, after 30 warm-up ones (default 300; --quick: 100)
  --matrix-catchup N messages sent while the daemon is down, per Matrix catch-up round (default 1000)
  --matrix-ingest N  events of the one Matrix sync whose ingestion is timed, over 20 rooms (default 1000)
  --matrix-synapse lean|default  the benchmark's Synapse: lean (default: housekeeping off, database on /dev/shm)
                     or as the tests run it
  --matrix-cpu-prof DIR  start the Matrix section's daemons with --cpu-prof, writing their profiles into DIR
  --upstream-messages N  messages of the upstream's one chat, backfilled at login and paged back (default 10000;
                     --quick: 1000)
  --upstream-sends N measured round trips of each upstream path, after 30 warm-up ones (default 300; --quick: 100)
  --upstream-cpu-prof DIR  start the upstream section's daemons under test (not the upstream) with --cpu-prof, writing
                     their profiles into DIR
  --replay-events N  events the events section logs and replays (default 100000; --quick: 10000)
  --web-loads N      cold page loads of the web section, each in a fresh browser context and followed by a warm one
                     (default 20; --quick: 5)
  --scale            scale mode instead of the sections above: the daemon at 10,000 chats / 1,000,000 messages and at
                     100,000 chats / 10,000,000 messages side by side (seed time and peak RSS, ready after restart,
                     RSS of the serving process tree, GET /v1/chats at 16 connections beside bare node:http, search
                     for two common words at 4, sends at 16 to one chat and over 16 chats, data on disk), each size
                     seeded, measured and deleted before the next; then the Worker's Durable Object in workerd
                     (Miniflare), seeded through INBOXD_SEED at 1M: GET /v1/chats and search at 4 and 16 connections.
                     --only scale (the daemon) or --only worker-scale (the Worker) runs one part, without --scale too.
                     --quick: 2,000 / 50,000 and 20,000 / 500,000, the Worker at the smaller
  --scale-sizes LIST the daemon's sizes, comma-separated: 1m, 10m or CHATSxMESSAGES (default 1m,10m)
  --scale-worker-size SIZE  the Worker's size, the same forms (default 1m)
  --scale-dir DIR    keep each size's data in DIR/<size> (the Worker's in DIR/worker-<size>) and reuse it on later runs
                     instead of seeding (the seed is then reported as skipped; sends of earlier runs stay in it)
  --keep DIR         seed into DIR and keep it; if DIR already holds inboxd.sqlite3, skip the seed and reuse it
                     (sends of earlier runs stay in it)
  --json FILE        also write the results as JSON
  -h, --help         this help

Exit code is 0 whether or not targets are met (MISS rows are marked); non-zero only if the benchmark fails.`;

const { values: opts } = parseArgs({
  options: {
    chats: { type: "string" },
    messages: { type: "string" },
    accounts: { type: "string" },
    quick: { type: "boolean", default: false },
    duration: { type: "string" },
    warmup: { type: "string", default: "1" },
    concurrency: { type: "string", default: "8" },
    keep: { type: "string" },
    only: { type: "string" },
    "fanout-clients": { type: "string" },
    "asset-mb": { type: "string" },
    "fanout-rate": { type: "string" },
    "fanout-seconds": { type: "string" },
    "idle-connections": { type: "string" },
    "mcp-sessions": { type: "string" },
    "xmpp-messages": { type: "string" },
    "xmpp-sends": { type: "string" },
    "xmpp-cpu-prof": { type: "string" },
    "matrix-messages": { type: "string" },
    "matrix-sends": { type: "string" },
    "matrix-catchup": { type: "string" },
    "matrix-ingest": { type: "string" },
    "matrix-synapse": { type: "string" },
    "matrix-cpu-prof": { type: "string" },
    "upstream-messages": { type: "string" },
    "upstream-sends": { type: "string" },
    "upstream-cpu-prof": { type: "string" },
    "web-loads": { type: "string" },
    "replay-events": { type: "string" },
    "inbox-sends": { type: "string" },
    node: { type: "string" },
    "binding-rounds": { type: "string" },
    json: { type: "string" },
    scale: { type: "boolean", default: false },
    "scale-sizes": { type: "string" },
    "scale-worker-size": { type: "string" },
    "scale-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (opts.help) {
  console.log(HELP);
  process.exit(0);
}
const num = (raw: string | undefined, fallback: number) => {
  const n = raw === undefined ? fallback : Number(raw);
  if (!(n > 0)) throw new Error(`expected a positive number, got ${raw}`);
  return n;
};
const chats = num(opts.chats, opts.quick ? 1000 : 10_000);
const messages = num(opts.messages, opts.quick ? 50_000 : 1_000_000);
const accounts = num(opts.accounts, 2);
const duration = num(opts.duration, opts.quick ? 2 : 5);
const warmup = num(opts.warmup, 1);
const readConcurrency = num(opts.concurrency, 8);
const fanoutClients = num(opts["fanout-clients"], 100);
const fanoutRate = num(opts["fanout-rate"], 200);
const fanoutSeconds = num(opts["fanout-seconds"], opts.quick ? 5 : 10);
const assetMB = num(opts["asset-mb"], opts.quick ? 100 : 500);
const idleConnections = num(opts["idle-connections"], 1000);
const mcpSessions = num(opts["mcp-sessions"], 200);
const bindingRounds = num(opts["binding-rounds"], opts.quick ? 1 : 3);
const xmppMessages = num(opts["xmpp-messages"], opts.quick ? 1000 : 10_000);
const xmppSends = num(opts["xmpp-sends"], opts.quick ? 100 : 500);
const matrixMessages = num(opts["matrix-messages"], opts.quick ? 1000 : 10_000);
const matrixSends = num(opts["matrix-sends"], opts.quick ? 100 : 300);
const matrixCatchup = num(opts["matrix-catchup"], 1000);
const matrixIngest = num(opts["matrix-ingest"], 1000);
const matrixSynapse = (opts["matrix-synapse"] ?? "lean") as "lean" | "default";
if (matrixSynapse !== "lean" && matrixSynapse !== "default") {
  console.error(`--matrix-synapse must be lean or default, not ${matrixSynapse}`);
  process.exit(2);
}
const upstreamMessages = num(opts["upstream-messages"], opts.quick ? 1000 : 10_000);
const upstreamSends = num(opts["upstream-sends"], opts.quick ? 100 : 300);
const webLoads = num(opts["web-loads"], opts.quick ? 5 : 20);
const replayEvents = num(opts["replay-events"], opts.quick ? 10_000 : 100_000);
const SECTIONS = [
  "bindings",
  "endpoints",
  "ratelimit",
  "mcp",
  "web",
  "fanout",
  "assets",
  "xmpp",
  "matrix",
  "matrix-e2ee",
  "upstream",
  "events",
  "relay",
  "inboxes",
];
/** Sections that need neither the seeded data set nor its daemon. */
const STANDALONE = ["bindings", "xmpp", "matrix", "matrix-e2ee", "upstream", "events", "relay", "inboxes"];
const onlyList = opts.only?.split(",").map((s) => s.trim());
/** Scale mode (--scale, or --only scale / worker-scale): its own run (bench/scale.ts), none of the sections above. */
const scaleParts =
  opts.scale || onlyList?.some((s) => (SCALE_SECTIONS as readonly string[]).includes(s))
    ? new Set<string>(onlyList ?? SCALE_SECTIONS)
    : undefined;
for (const s of scaleParts ?? [])
  if (!(SCALE_SECTIONS as readonly string[]).includes(s))
    throw new Error(`--only: ${s} is not a part of scale mode (expected ${SCALE_SECTIONS.join(", ")})`);
const sections = new Set(scaleParts ? [] : (onlyList ?? SECTIONS));
for (const s of sections)
  if (!SECTIONS.includes(s)) throw new Error(`--only: unknown section ${s} (expected ${SECTIONS.join(", ")})`);

const RESTARTS = 3;
/** Wait before each RSS reading of the memory per idle connection (lets the daemon's GC and allocator settle). */
const IDLE_SETTLE_MS = 2000;
/** Measured rounds of opening and closing the idle connections (the median is reported). */
const IDLE_ROUNDS = 5;
/** Measured rounds of opening and closing the /v0/sse sessions (the median is reported). */
const MCP_SESSION_ROUNDS = 3;
/** Alternating pairs of the 2025-11-25 and 2026-07-28 MCP calls (the median ratio is reported). */
const MCP_PAIRS = 3;
/** After the last fan-out send: how long events may still arrive before they count as lost. */
const FANOUT_DRAIN_S = 2;
/** A fan-out window during which other processes used more than this (% of one core) is measured again... */
const FANOUT_NOISE_PCT = 30;
/** ...up to this many times in all. */
const FANOUT_ATTEMPTS = 3;
/** XMPP backfill rounds (fresh user and data dir each; the median is reported), and unmeasured sends before each latency path. */
const XMPP_ROUNDS = 3;
const XMPP_WARMUP_SENDS = 20;
/** Matrix backfill and catch-up rounds (each a pair: inboxd and a plain client; medians reported), and unmeasured sends before the latency. */
const MATRIX_ROUNDS = 3;
const MATRIX_WARMUP_SENDS = 30;
/** Upstream backfill and paging rounds (each a pair: inboxd and a plain client; medians reported), and unmeasured round trips before the latency. */
const UPSTREAM_ROUNDS = 3;
const UPSTREAM_WARMUP_SENDS = 30;
/**
 * Every daemon the bench starts runs the rate limiter with a budget no load here reaches: the rows measure what one
 * token can get through, which the default budget (100/s) would cap. The ratelimit section compares it with the
 * limiter off: the same bookkeeping runs on every request whatever the budget.
 */
process.env.INBOXD_RATE_LIMIT ??= "1000000";
/** Pairs of rounds of the ratelimit section (off, on, off, on…); the median pair is reported. */
const RATE_LIMIT_ROUNDS = 5;
const RATE_LIMIT_CONCURRENCY = 16;
/** Replay rounds per path of the events section (the median is reported), and its pairs of send rounds (log off, on). */
const EVENT_REPLAY_ROUNDS = 3;
const EVENT_LOG_PAIRS = opts.quick ? 3 : 5;
/** Pairs of rounds (direct, relay) of the relay section at each concurrency. */
const RELAY_PAIRS = opts.quick ? 3 : 5;
const log = (line: string) => console.error(`[bench] ${line}`);
/** The command line of this run, printed with the figures of the sections that say how they were measured. */
const command = [
  process.env.INBOXD_RATE_LIMIT ? `INBOXD_RATE_LIMIT=${process.env.INBOXD_RATE_LIMIT}` : "",
  "npm run bench --",
  ...process.argv.slice(2),
]
  .filter(Boolean)
  .join(" ");
const dir = opts.keep ? resolve(opts.keep) : mkdtempSync(join(os.tmpdir(), "inboxd-bench-"));
const bodyFile = join(os.tmpdir(), `inboxd-bench-body-${process.pid}.json`);
/** The events section's own data set. */
const eventsDir = join(os.tmpdir(), `inboxd-bench-events-${process.pid}`);
/** The relay section's own data set. */
const relayDir = join(os.tmpdir(), `inboxd-bench-relay-${process.pid}`);
let daemon: Daemon | undefined;
let generator: LoadGenerator | undefined;
let fanoutGenerator: FanoutGenerator | undefined;
const _sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cleanup() {
  generator?.close();
  fanoutGenerator?.close();
  killXmpp();
  killMatrix();
  killE2ee();
  killUpstream();
  killRelay();
  cleanupScale();
  killAll();
  rmSync(bodyFile, { force: true });
  rmSync(eventsDir, { recursive: true, force: true });
  rmSync(relayDir, { recursive: true, force: true });
  if (!opts.keep) rmSync(dir, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.once(signal, () => {
    cleanup();
    process.exit(130);
  });

async function main() {
  const json: Record<string, unknown> = { date: new Date().toISOString() };
  let bindingsReport: string | undefined;
  if (sections.has("bindings")) {
    const [bChats, bMessages] = [Math.max(10, Math.round(chats / 10)), Math.max(100, Math.round(messages / 10))];
    const results = await compareBindings({ chats: bChats, messages: bMessages, rounds: bindingRounds, log });
    bindingsReport = formatBindings(results, bindingRounds, bChats, bMessages);
    json.bindings = results;
  }
  let xmppReport: string | undefined;
  if (sections.has("xmpp")) {
    if (opts.node) useNode(opts.node);
    const result = await runXmppBench({
      messages: xmppMessages,
      rounds: XMPP_ROUNDS,
      sends: xmppSends,
      warmupSends: XMPP_WARMUP_SENDS,
      cpuProfDir: opts["xmpp-cpu-prof"] && resolve(opts["xmpp-cpu-prof"]),
      log,
    }).catch((error: Error) => {
      // Without Prosody (and no root to install it) a full run goes on without this section; --only xmpp fails.
      if (opts.only || !/Prosody.*not installed|installing Prosody failed/.test(error.message)) throw error;
      xmppReport = `XMPP: not measured: ${error.message}`;
    });
    if (result) {
      xmppReport = formatXmpp(result);
      json.xmpp = result;
    }
  }
  let matrixReport: string | undefined;
  if (sections.has("matrix")) {
    if (opts.node) useNode(opts.node);
    const result = await runMatrixBench({
      messages: matrixMessages,
      rounds: MATRIX_ROUNDS,
      sends: matrixSends,
      warmupSends: MATRIX_WARMUP_SENDS,
      catchup: matrixCatchup,
      ingest: matrixIngest,
      synapse: matrixSynapse,
      cpuProfDir: opts["matrix-cpu-prof"] && resolve(opts["matrix-cpu-prof"]),
      node: opts.node,
      command,
      log,
    }).catch((error: Error) => {
      // Without Synapse (its source, or its Python libraries and no root to install them) a full run goes on without
      // this section; --only matrix fails.
      if (
        opts.only ||
        !/Synapse 1\.67\.0 source is needed|INBOXD_SYNAPSE_SOURCE|Missing for Synapse|installing Synapse's Python libraries failed/.test(
          error.message,
        )
      )
        throw error;
      matrixReport = `Matrix: not measured: ${error.message}`;
    });
    if (result) {
      matrixReport = formatMatrix(result);
      json.matrix = result;
    }
  }
  let e2eeReport: string | undefined;
  if (sections.has("matrix-e2ee")) {
    if (opts.node) useNode(opts.node);
    const result = await runE2eeBench({
      messages: matrixMessages,
      rounds: opts.quick ? 1 : 2,
      sends: matrixSends,
      warmupSends: MATRIX_WARMUP_SENDS,
      command,
      log,
    }).catch((error: Error) => {
      // As the matrix section: without Synapse a full run goes on without it; --only fails.
      if (
        opts.only ||
        !/Synapse 1\.67\.0 source is needed|INBOXD_SYNAPSE_SOURCE|Missing for Synapse/.test(error.message)
      )
        throw error;
      e2eeReport = `Matrix end-to-end encryption: not measured: ${error.message}`;
    });
    if (result) {
      e2eeReport = formatE2ee(result);
      json.matrixE2ee = result;
    }
  }
  let upstreamReport: string | undefined;
  if (sections.has("upstream")) {
    if (opts.node) useNode(opts.node);
    const result = await runUpstreamBench({
      messages: upstreamMessages,
      rounds: UPSTREAM_ROUNDS,
      sends: upstreamSends,
      warmupSends: UPSTREAM_WARMUP_SENDS,
      cpuProfDir: opts["upstream-cpu-prof"] && resolve(opts["upstream-cpu-prof"]),
      command,
      log,
    });
    upstreamReport = formatUpstream(result);
    json.upstream = result;
  }
  let eventsReport: string | undefined;
  if (sections.has("events")) {
    if (opts.node) useNode(opts.node);
    mkdirSync(eventsDir, { recursive: true });
    const result = await runEventsBench({
      dir: eventsDir,
      chats: Math.max(10, Math.round(chats / 10)),
      messages: Math.max(100, Math.round(messages / 10)),
      accounts,
      events: replayEvents,
      rounds: EVENT_REPLAY_ROUNDS,
      pairs: EVENT_LOG_PAIRS,
      warmupSeconds: warmup,
      roundSeconds: duration,
      log,
    });
    rmSync(eventsDir, { recursive: true, force: true });
    eventsReport = formatEvents(result);
    json.events = result;
  }
  let relayReport: string | undefined;
  if (sections.has("relay")) {
    if (opts.node) useNode(opts.node);
    const result = await runRelayBench({
      dir: relayDir,
      chats: Math.max(30, Math.round(chats / 10)),
      messages: Math.max(300, Math.round(messages / 10)),
      accounts,
      concurrency: [...new Set([1, readConcurrency])],
      pairs: RELAY_PAIRS,
      warmupSeconds: warmup,
      roundSeconds: duration,
      log,
    });
    rmSync(relayDir, { recursive: true, force: true });
    relayReport = formatRelay(result);
    json.relay = result;
  }
  let inboxesReport: string | undefined;
  if (sections.has("inboxes")) {
    const result = await runInboxesBench({
      inboxes: 16,
      sends: num(opts["inbox-sends"], opts.quick ? 50 : 200),
      pairs: 3,
      readRequests: opts.quick ? 100 : 400,
      seed: { chats: 200, messages: 4000, accounts: 1, seed: 40 },
      log,
    });
    inboxesReport = formatInboxes(result);
    json.inboxes = result;
  }
  if ([...sections].every((s) => STANDALONE.includes(s))) {
    if (xmppReport || matrixReport || e2eeReport || upstreamReport || eventsReport || relayReport || inboxesReport)
      console.log(
        `\ninboxd benchmark: ${os.cpus().length} CPUs, node ${process.version} (inboxd on ${daemonNodeVersion()})`,
      );
    if (xmppReport) console.log(`\n${xmppReport}`);
    if (matrixReport) console.log(`\n${matrixReport}`);
    if (e2eeReport) console.log(`\n${e2eeReport}`);
    if (upstreamReport) console.log(`\n${upstreamReport}`);
    if (eventsReport) console.log(`\n${eventsReport}`);
    if (relayReport) console.log(`\n${relayReport}`);
    if (inboxesReport) console.log(`\n${inboxesReport}`);
    if (bindingsReport) console.log(`\n${bindingsReport}`);
    if (opts.json) writeFileSync(opts.json, JSON.stringify(json, null, 2));
    return;
  }
  if (opts.node) useNode(opts.node);
  // Seed (wall clock of the CLI command), token, first start.
  let seedSeconds: number | undefined;
  if (existsSync(join(dir, "inboxd.sqlite3"))) log(`reusing ${dir} (no seed)`);
  else {
    log(`seeding ${chats} chats, ${messages} messages, ${accounts} accounts into ${dir}`);
    const args = [
      "seed",
      "--data-dir",
      dir,
      "--chats",
      String(chats),
      "--messages",
      String(messages),
      "--accounts",
      String(accounts),
      "--seed",
      "1",
    ];
    seedSeconds = (await runCli(args)).seconds;
    log(`seeded in ${seedSeconds.toFixed(1)} s`);
  }
  const token = await createToken(dir);
  daemon = await startDaemon(dir, token);
  const firstReadyMs = daemon.readyMs;
  log(`daemon pid ${daemon.pid} ready in ${firstReadyMs.toFixed(0)} ms at ${daemon.url}`);

  const loads: Row[] = [];
  const scalars: Row[] = [];
  const live: LiveRow[] = [];
  Object.assign(json, {
    options: {
      chats,
      messages,
      accounts,
      duration,
      warmup,
      readConcurrency,
      sections: [...sections],
      reusedDir: seedSeconds === undefined,
    },
    seedSeconds,
  });
  let chatIDs: string[], echoChatIDs: string[];

  /** Runs one phase; the row also gets the server's CPU use (% of one core) and RSS after the phase. */
  const measure = async (
    name: string,
    pid: number,
    url: string,
    requests: RequestSpec[],
    concurrency: number,
    auth = true,
  ) => {
    log(`${name} (c=${concurrency}, ${warmup} s warm-up + ${duration} s)`);
    generator ??= new LoadGenerator();
    const cpu = cpuSeconds(pid),
      started = performance.now();
    const result = await generator.run({
      url,
      token: auth ? token : undefined,
      requests,
      concurrency,
      warmupSeconds: warmup,
      durationSeconds: duration,
    });
    const cpuPct = ((cpuSeconds(pid) - cpu) / ((performance.now() - started) / 1000)) * 100;
    return { name, result, cpuPct, rssMB: memory(pid).rssMB };
  };
  const add = (row: Row, target: string, pass: boolean) =>
    loads.push({ ...row, target, pass: pass && row.result!.errors === 0 });
  const p99 = (limit: number) => (x: LoadResult) => x.p99 <= limit;
  const p95 = (limit: number) => (x: LoadResult) => x.p95 <= limit;
  let work: Workload | undefined;

  if (sections.has("endpoints")) {
    work = await buildWorkload(daemon.url, token);
    ({ chatIDs, echoChatIDs } = work);
    log(
      `workload: ${work.chatIDs.length} chats, ${work.rareWords.length} rare words (of ${work.rareTries} tried: ${work.rareWords
        .slice(0, 6)
        .map((w) => `${w.word}×${w.hits}${w.more ? "+" : ""}`)
        .join(" ")} …), account ${work.accountID}, dateAfter ${work.dateAfter}`,
    );
    writeFileSync(bodyFile, work.chatsBody);
    const baselineServer = await startBaseline(bodyFile);
    const bare = await measure(
      `  bare node:http, same ${work.chatsBody.length} B body`,
      baselineServer.pid,
      baselineServer.url,
      [{ method: "GET", path: "/" }],
      readConcurrency,
      false,
    );
    await baselineServer.stop();

    const r = work.requests;
    const chatsList = await measure("GET /v1/chats", daemon.pid, daemon.url, r.chats, readConcurrency);
    const share = chatsList.result.rps / bare.result.rps;
    add(
      chatsList,
      `p99 ≤ 10 ms, ≥ 30 % of bare (${(share * 100).toFixed(0)} %)`,
      chatsList.result.p99 <= 10 && share >= 0.3,
    );
    loads.push(bare);
    const phases: [string, RequestSpec[], number, string, (x: LoadResult) => boolean][] = [
      ["GET /v1/chats/{id}/messages", r.messages, readConcurrency, "p99 ≤ 10 ms", p99(10)],
      ["GET /v1/chats/{id}", r.chat, readConcurrency, "p99 ≤ 10 ms", p99(10)],
      ["search: one rare word", r.searchRare, readConcurrency, "p95 ≤ 20 ms", p95(20)],
      ["search: two common words", r.searchCommon, readConcurrency, "p95 ≤ 50 ms", p95(50)],
      ["search: word + accountIDs + dateAfter", r.searchFiltered, readConcurrency, "p95 ≤ 50 ms", p95(50)],
      ["POST send, alone", r.send, 1, "p99 ≤ 20 ms", p99(20)],
      ["POST send, 16 clients", r.send, 16, "≥ 1,000 sends/s", (x) => x.rps >= 1000],
    ];
    for (const [name, requests, concurrency, target, ok] of phases) {
      const row = await measure(name, daemon.pid, daemon.url, requests, concurrency);
      add(row, target, ok(row.result));
    }
    const afterLoad = memory(daemon.pid);

    // Restarts: SIGTERM, spawn again, time to the first answered GET /v1/chats; the median of RESTARTS (noisy machine).
    // The daemon of the last restart stays up for the live-events section.
    const restartsMs: number[] = [];
    let atReady = afterLoad;
    for (let i = 0; i < RESTARTS; i++) {
      log(`restarting the daemon (${i + 1}/${RESTARTS})`);
      await daemon.stop();
      daemon = await startDaemon(dir, token);
      restartsMs.push(daemon.readyMs);
      if (i === 0) atReady = memory(daemon.pid);
    }
    const readyMs = [...restartsMs].sort((a, b) => a - b)[Math.floor(RESTARTS / 2)];

    const mb = (x: number) => `${x.toFixed(0)} MB`;
    scalars.push(
      seedSeconds === undefined
        ? { name: "seed", value: "skipped (--keep)" }
        : {
            name: `seed ${chats} chats / ${messages} messages`,
            value: `${seedSeconds.toFixed(1)} s`,
            target: "≤ 120 s",
            pass: seedSeconds <= 120,
          },
      {
        name: `daemon ready after restart, median of ${RESTARTS}`,
        value: `${readyMs.toFixed(0)} ms`,
        target: "≤ 2 s",
        pass: readyMs <= 2000,
      },
      { name: "  each restart", value: `${restartsMs.map((x) => x.toFixed(0)).join(" / ")} ms` },
      { name: "daemon ready, first start", value: `${firstReadyMs.toFixed(0)} ms` },
      {
        name: "RSS peak during load (VmHWM)",
        value: mb(afterLoad.peakMB),
        target: "≤ 400 MB",
        pass: afterLoad.peakMB <= 400,
      },
      { name: "RSS after load (VmRSS)", value: mb(afterLoad.rssMB), target: "≤ 400 MB", pass: afterLoad.rssMB <= 400 },
      { name: "RSS after the first restart, ready", value: mb(atReady.rssMB) },
    );
    Object.assign(json, {
      readyMs: { firstStart: firstReadyMs, restartMedian: readyMs, restarts: restartsMs },
      memoryMB: { afterLoad, atReady },
      workload: {
        chats: work.chatIDs.length,
        rareWords: work.rareWords,
        accountID: work.accountID,
        dateAfter: work.dateAfter,
        chatsBodyBytes: work.chatsBody.length,
      },
      endpoints: loads.map(({ name, result, target, pass, cpuPct, rssMB }) => ({
        name: name.trim(),
        target,
        pass,
        serverCpuPct: cpuPct,
        serverRssMB: rssMB,
        ...result,
      })),
    });
  } else ({ chatIDs, echoChatIDs } = await listChatIDs(daemon.url, token));

  if (sections.has("ratelimit")) {
    // The same daemon and data, restarted with and without the limiter in alternating rounds; each pair's ratio is
    // taken, so that load from other processes, which drifts, hits both sides of a pair alike. GET /v1/chats at 16
    // connections, all on one token.
    work ??= await buildWorkload(daemon.url, token);
    const rounds: Record<"on" | "off", Row[]> = { on: [], off: [] };
    for (let i = 0; i < RATE_LIMIT_ROUNDS * 2; i++) {
      const variant = i % 2 ? "on" : "off";
      await daemon.stop();
      daemon = await startDaemon(dir, token, variant === "off" ? { args: ["--rate-limit", "off"] } : {});
      rounds[variant].push(
        await measure(
          `GET /v1/chats, rate limiter ${variant} (round ${Math.floor(i / 2) + 1})`,
          daemon.pid,
          daemon.url,
          work.requests.chats,
          RATE_LIMIT_CONCURRENCY,
        ),
      );
    }
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const rps = (rows: Row[]) => rows.map((r) => r.result!.rps);
    const byRps = (rows: Row[]) => rows.find((r) => r.result!.rps === mid(rps(rows)))!;
    const apart = (mid(rounds.on.map((r, i) => r.result!.rps / rounds.off[i].result!.rps)) - 1) * 100;
    const cpuUs = (r: Row) => ((r.cpuPct! / 100) * 1e6) / r.result!.rps; // CPU s per wall s, over requests per wall s
    const spendNs = measureSpend();
    add(
      {
        ...byRps(rounds.on),
        name: `GET /v1/chats, rate limiter on (budget ${process.env.INBOXD_RATE_LIMIT}/s), median of ${RATE_LIMIT_ROUNDS}`,
      },
      `within 5 % of off (median pair: ${apart >= 0 ? "+" : ""}${apart.toFixed(1)} %)`,
      Math.abs(apart) < 5,
    );
    loads.push({ ...byRps(rounds.off), name: "  rate limiter off (--rate-limit off), median" });
    const each = (rows: Row[]) =>
      rps(rows)
        .map((x) => Math.round(x))
        .join(" / ");
    scalars.push(
      { name: "GET /v1/chats req/s per round, limiter on | off", value: `${each(rounds.on)} | ${each(rounds.off)}` },
      {
        name: "  daemon CPU per request, median, on | off",
        value: `${mid(rounds.on.map(cpuUs)).toFixed(0)} | ${mid(rounds.off.map(cpuUs)).toFixed(0)} µs`,
      },
      { name: "  RateLimiter.spend() alone, in this process", value: `${spendNs.toFixed(0)} ns a call` },
    );
    json.rateLimit = {
      concurrency: RATE_LIMIT_CONCURRENCY,
      budget: process.env.INBOXD_RATE_LIMIT,
      apartPct: apart,
      spendNs,
      on: rounds.on.map((r) => r.result),
      off: rounds.off.map((r) => r.result),
    };
  }

  if (sections.has("mcp")) {
    // The same rare words as the REST search row, asked as an MCP client asks (stateless POST /v0/mcp, SSE answer).
    work ??= await buildWorkload(daemon.url, token);
    const words = work.rareWords.map((w) => w.word);
    await checkMcpSearch(daemon.url, token, words[0]);
    await checkMcpSearch(daemon.url, token, words[0], true);
    // The 2026-07-28 call carries its envelope on every request instead of a handshake before it. The target is its
    // p50 within 1.2x of the 2025-11-25 call's on the same daemon and words; on a noisy machine the later of two
    // phases is often the faster, so they run in MCP_PAIRS pairs of alternating order and the ratio is the pairs'
    // median.
    const legacyName = "MCP tools/call search_messages, 2025-11-25 (after initialize): one rare word";
    const modernName = "MCP tools/call search_messages, 2026-07-28 (stateless, _meta envelope): the same words";
    const pairs: { legacy: Row; modern: Row; ratio: number }[] = [];
    const measured = daemon;
    for (let pair = 0; pair < MCP_PAIRS; pair++) {
      const run = (modern: boolean) =>
        measure(
          modern ? modernName : legacyName,
          measured.pid,
          measured.url,
          (modern ? mcpModernSearchRequests : mcpSearchRequests)(words),
          readConcurrency,
        );
      const first = await run(pair % 2 === 1);
      const second = await run(pair % 2 === 0);
      const [legacy, modern] = pair % 2 === 1 ? [second, first] : [first, second];
      pairs.push({ legacy, modern, ratio: modern.result!.p50 / legacy.result!.p50 });
    }
    const ratio = median(pairs.map((p) => p.ratio));
    const middle = pairs.find((p) => p.ratio === ratio) ?? pairs[0];
    const mcpSearch = middle.legacy;
    const modernSearch = middle.modern;
    add(mcpSearch, "p95 ≤ 20 ms", p95(20)(mcpSearch.result!));
    add(modernSearch, "p50 ≤ 1.2× the 2025-11-25 call", ratio <= 1.2);
    scalars.push({
      name: `  2026-07-28 / 2025-11-25 p50, median of ${MCP_PAIRS} alternating pairs (the pair shown above)`,
      value: `${ratio.toFixed(2)}× (pairs: ${pairs.map((p) => p.ratio.toFixed(2)).join(" / ")})`,
    });
    if (!sections.has("endpoints"))
      loads.push(
        await measure(
          "  REST search, the same words (for reference)",
          daemon.pid,
          daemon.url,
          work.requests.searchRare,
          readConcurrency,
        ),
      );
    // Memory per open, initialized /v0/sse session, on a daemon started with --inspect (to force GCs before readings).
    await daemon.stop();
    daemon = await startDaemon(dir, token, { inspect: true });
    log(
      `memory per /v0/sse session: daemon pid ${daemon.pid}, ${MCP_SESSION_ROUNDS} rounds of 0 / ${mcpSessions} open sessions after an unmeasured one`,
    );
    const sessions = await measureSseSessionMemory(daemon, token, mcpSessions, MCP_SESSION_ROUNDS, IDLE_SETTLE_MS, log);
    const rounds = (key: "rss" | "heap") => ` (rounds: ${sessions.roundsKB.map((r) => r[key].toFixed(1)).join(" / ")})`;
    scalars.push(
      {
        name: `memory per open /v0/sse session (${mcpSessions} initialized, idle): RSS, median`,
        value: `${sessions.perSessionKB.rss.toFixed(1)} KB${rounds("rss")}`,
        target: "stated",
      },
      { name: "  V8 heap in use", value: `${sessions.perSessionKB.heap.toFixed(1)} KB${rounds("heap")}` },
    );
    json.mcp = {
      search: { words: words.length, ...mcpSearch.result, serverCpuPct: mcpSearch.cpuPct },
      modernSearch: {
        ...modernSearch.result,
        serverCpuPct: modernSearch.cpuPct,
        p50Ratio: ratio,
        pairRatios: pairs.map((p) => p.ratio),
      },
      sessions,
    };
    await daemon.stop();
    daemon = await startDaemon(dir, token);
  }

  if (sections.has("web")) {
    // On a freshly started daemon, whichever sections ran before: its first page load is reported apart.
    await daemon.stop();
    daemon = await startDaemon(dir, token);
    const outcome = await runWebBench({ url: daemon.url, token, loads: webLoads, log });
    scalars.push(...webRows(outcome, webLoads));
    json.web = outcome;
  }

  if (sections.has("fanout")) {
    // Memory per idle connection, on a daemon of its own started with --inspect (to force GCs before readings).
    await daemon.stop();
    daemon = await startDaemon(dir, token, { inspect: true });
    log(
      `memory per idle connection: daemon pid ${daemon.pid}, ${IDLE_ROUNDS} rounds of 0 / ${idleConnections} subscribed clients after an unmeasured one (${IDLE_SETTLE_MS / 1000} s settle, then forced GC)`,
    );
    const idleMemory = await measureIdleMemory(daemon, token, idleConnections, IDLE_ROUNDS, IDLE_SETTLE_MS, log);

    // Fan-out, on a plain daemon; not to the Echo chats, whose replies would add a second message per send.
    await daemon.stop();
    daemon = await startDaemon(dir, token);
    const sendTo = chatIDs.filter((id) => !echoChatIDs.includes(id));
    log(
      `fan-out: daemon pid ${daemon.pid}, ${fanoutClients} clients, ${fanoutRate} sends/s over ${sendTo.length} chats (not the ${echoChatIDs.length} Echo chats), ${warmup} s warm-up + ${fanoutSeconds} s`,
    );
    // This machine is shared: when other processes took more than FANOUT_NOISE_PCT of a core during the window, or
    // every CPU was busy for half a second or more of it, the latencies are mostly waiting for a CPU. Such a run is
    // repeated (up to FANOUT_ATTEMPTS), and the quietest is kept.
    const others = (r: FanoutResult) => Math.max(0, r.machineCpuPct - r.serverCpuPct - r.generatorCpuPct);
    const noisy = (r: FanoutResult) => others(r) > FANOUT_NOISE_PCT || r.saturatedSeconds >= 0.5;
    const noise = (r: FanoutResult) =>
      `${others(r).toFixed(0)} % of a core, ${r.saturatedSeconds.toFixed(2)} s saturated`;
    const attempts: FanoutResult[] = [];
    for (let attempt = 1; attempt <= FANOUT_ATTEMPTS; attempt++) {
      fanoutGenerator = new FanoutGenerator();
      const r = await fanoutGenerator.fanout({
        url: daemon.url,
        token,
        serverPid: daemon.pid,
        clients: fanoutClients,
        rate: fanoutRate,
        warmupSeconds: warmup,
        durationSeconds: fanoutSeconds,
        drainSeconds: FANOUT_DRAIN_S,
        chatIDs: sendTo,
      });
      fanoutGenerator.close();
      attempts.push(r);
      if (!noisy(r)) break;
      log(
        `  other processes during the fan-out window: ${noise(r)}` +
          (attempt < FANOUT_ATTEMPTS ? "; measuring again" : ""),
      );
    }
    const quieter = (a: FanoutResult, b: FanoutResult) =>
      a.saturatedSeconds < b.saturatedSeconds || (a.saturatedSeconds === b.saturatedSeconds && others(a) < others(b));
    const result = attempts.reduce((best, r) => (quieter(r, best) ? r : best));
    const kept = attempts.indexOf(result) + 1;
    const attemptNote =
      attempts.length === 1
        ? ""
        : `fan-out measured ${attempts.length} times because other processes took CPU ` +
          `(${attempts.map(noise).join("; ")}); the figures above are attempt ${kept}, the quietest`;
    const target = "p99 ≤ 50 ms, none lost";
    const pass =
      result.afterResponse.p99 <= 50 &&
      result.lost === 0 &&
      result.sendErrors === 0 &&
      Object.keys(result.closes).length === 0 &&
      result.sendsPerSecond >= fanoutRate * 0.95;
    live.push(
      {
        name: "send's HTTP response → event, every client",
        result,
        stats: result.afterResponse,
        target,
        pass,
        note: attemptNote,
      },
      { name: "  send's request start → event (for reference)", result, stats: result.afterRequest },
    );
    const n = idleConnections.toLocaleString("en-US");
    const kb = (x: number) => `${x.toFixed(1)} KB`;
    const { perConnectionKB: per, roundsKB } = idleMemory;
    const rounds = (key: keyof typeof per) => ` (rounds: ${roundsKB.map((r) => r[key].toFixed(1)).join(" / ")})`;
    scalars.push(
      {
        name: `memory per idle WebSocket connection (${n} subscribed): RSS, median`,
        value: kb(per.rss) + rounds("rss"),
        target: "stated",
      },
      { name: "  V8 heap in use", value: kb(per.heap) + rounds("heap") },
      {
        name: `  daemon RSS after GC, 0 / ${n} clients (first round)`,
        value: `${idleMemory.readings[0].reading.afterGcMB.toFixed(1)} / ${idleMemory.readings[1].reading.afterGcMB.toFixed(1)} MB`,
      },
    );
    json.liveEvents = {
      fanout: { target, pass, chats: sendTo.length, attempt: kept, ...result },
      otherAttempts: attempts.filter((r) => r !== result).map(({ timeline, cpuTimeline, ...rest }) => rest),
      idleMemory,
    };
  }
  if (sections.has("assets")) {
    log(`assets: uploading and serving a ${assetMB} MB file while sampling the daemon's RSS`);
    const r = await measureAssetMemory(daemon.pid, daemon.url, token, assetMB);
    const mbps = (seconds: number) => `${(assetMB / seconds).toFixed(0)} MB/s`;
    scalars.push(
      {
        name: `RSS while a ${assetMB} MB file is uploaded / served`,
        value: `${r.beforeMB.toFixed(0)} MB before → peak ${r.uploadPeakMB.toFixed(0)} / ${r.servePeakMB.toFixed(0)} MB`,
        target: `flat (≤ +${r.flatMB} MB)`,
        pass: r.pass,
      },
      {
        name: "  upload / serve time",
        value: `${r.uploadSeconds.toFixed(1)} s (${mbps(r.uploadSeconds)}) / ${r.serveSeconds.toFixed(1)} s (${mbps(r.serveSeconds)})`,
      },
    );
    json.assets = r;
  }
  await daemon.stop();
  daemon = undefined;
  json.scalars = scalars;

  const what =
    opts.keep && seedSeconds === undefined
      ? `reused ${dir}`
      : `${chats} chats, ${messages} messages, ${accounts} accounts`;
  const timing = sections.has("endpoints")
    ? `${duration} s per measurement after ${warmup} s warm-up`
    : `${warmup} s warm-up`;
  const fanout = sections.has("fanout")
    ? `; fan-out ${fanoutClients} clients × ${fanoutRate} sends/s for ${fanoutSeconds} s`
    : "";
  console.log(
    `\ninboxd benchmark: ${what}; ${timing}${fanout}; ${os.cpus().length} CPUs, node ${process.version} (inboxd on ${daemonNodeVersion()})\n`,
  );
  console.log(formatReport(loads, scalars, live));
  if (xmppReport) console.log(`\n${xmppReport}`);
  if (matrixReport) console.log(`\n${matrixReport}`);
  if (e2eeReport) console.log(`\n${e2eeReport}`);
  if (upstreamReport) console.log(`\n${upstreamReport}`);
  if (eventsReport) console.log(`\n${eventsReport}`);
  if (relayReport) console.log(`\n${relayReport}`);
  if (inboxesReport) console.log(`\n${inboxesReport}`);
  if (bindingsReport) console.log(`\n${bindingsReport}`);

  if (opts.json) {
    writeFileSync(opts.json, JSON.stringify(json, null, 2));
    log(`wrote ${opts.json}`);
  }
}

/** ns per RateLimiter.spend() over 1,000 tokens with budgets never reached: the limiter's own cost on a request. */
function measureSpend(): number {
  const limiter = new RateLimiter({ perSecond: 1e9, burst: 1e9 });
  const ids = Array.from({ length: 1000 }, (_, i) => `token-${i}`);
  const run = (n: number) => {
    const started = performance.now();
    for (let i = 0; i < n; i++) limiter.spend(ids[i % 1000]);
    return ((performance.now() - started) * 1e6) / n;
  };
  run(1e5); // warm-up (JIT)
  return run(2e6);
}

/** npm run bench -- --scale: the daemon at each size, then the Worker; one table (bench/scale-report.ts). */
async function scaleMain(parts: Set<string>) {
  if (opts.node) useNode(opts.node);
  const run = await runScaleBench({
    sizes: parts.has("scale") ? (opts["scale-sizes"] ?? "1m,10m").split(",").map((s) => parseSize(s, opts.quick)) : [],
    workerSize: parts.has("worker-scale") ? parseSize(opts["scale-worker-size"] ?? "1m", opts.quick) : undefined,
    scaleDir: opts["scale-dir"] && resolve(opts["scale-dir"]),
    quick: opts.quick,
    accounts: num(opts.accounts, 3),
    seed: 11,
    warmupSeconds: warmup,
    durationSeconds: duration,
    log,
  });
  console.log(`\n${formatScale(run, `node ${process.version} (inboxd on ${daemonNodeVersion()})`)}`);
  if (opts.json) {
    writeFileSync(opts.json, JSON.stringify(run, null, 2));
    log(`wrote ${opts.json}`);
  }
}

(scaleParts ? scaleMain(scaleParts) : main())
  .catch((error) => {
    console.error(`bench failed: ${error instanceof Error ? error.stack : error}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await daemon?.stop().catch(() => undefined);
    cleanup();
  });
