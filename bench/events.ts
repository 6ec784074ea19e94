/**
 * The durable event log (src/events/log.ts) through the API, on a small data set of its own:
 * - replay: N logged events (real sends, spread over every chat but the Echo ones) read back by a resuming client
 *   from the eventID before them, over /v1/ws (`subscriptions.set` with `since`), GET /v1/events as Server-Sent
 *   Events (Last-Event-ID) and as JSON pages (`limit=1000`); time from the request to the N-th event, each event
 *   checked to come once and in order (frames are counted by their eventID, not parsed; JSON pages are parsed);
 * - what the log costs a send: 16 clients sending to 16 chats, on two daemons running side by side on copies of
 *   the seeded data, one without the log (INBOXD_EVENT_LOG=off), in alternating rounds (off/on, then on/off, …, so
 *   that a drift of the machine's load favours neither); the median of the pairs' ratios, and the CPU other
 *   processes took during each round (this machine is shared);
 * - what it stores: the `ev:<id>` rows' bytes after the replay's sends (by event type), and the growth of the
 *   database's used pages over the same number of sends without the log and with it.
 */
import { cpSync, readFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import WebSocket from "ws";
import { defaultBinding } from "../adapters/node/sqlite-binding.ts";
import { cpuSeconds, createToken, getOnce, median, memory, runCli, startDaemon, type Daemon } from "./daemon.ts";
import { LoadGenerator, type LoadResult, type RequestSpec } from "./load.ts";
import { formatReport, type Row } from "./report.ts";
import { listChatIDs, segment } from "./workload.ts";

export interface EventsBenchOptions {
  /** An empty directory: the data set is seeded into it (and copied, for the sends with and without the log). */
  dir: string;
  chats: number;
  messages: number;
  accounts: number;
  /** Events each replay reads back (100,000). */
  events: number;
  /** Replay rounds per path; the median is reported. */
  rounds: number;
  /** Pairs of send rounds (log off, log on). */
  pairs: number;
  warmupSeconds: number;
  roundSeconds: number;
  log: (line: string) => void;
}

export interface Replay {
  seconds: number;
  eventsPerSecond: number;
  /** Bytes received up to the N-th event (frames, SSE text or JSON pages). */
  bytes: number;
  /** Events that did not come as the next eventID (missing, repeated or out of order): 0 expected. */
  outOfOrder: number;
  daemonCpuPct: number;
  /** The daemon's highest RSS seen during the replay (sampled every 50 ms). */
  rssPeakMB: number;
}

type Path = "ws" | "sse" | "pages";
type Variant = "off" | "on";
const VARIANTS: Variant[] = ["off", "on"];

export interface SendRound {
  result: LoadResult;
  cpuPct: number;
  rssMB: number;
  /** Events the round logged, warm-up included (0 without the log). */
  events: number;
  /** CPU of every process but the daemon, the load generator and the bench during the round, % of one core. */
  otherCpuPct: number;
}

export interface EventsResult {
  chats: number;
  messages: number;
  replay: { events: number; since: number; sends: number; rounds: Record<Path, Replay[]> };
  sends: {
    concurrency: number;
    chats: number;
    text: string;
    /** The pairs measured, round by round (off[i] and on[i] are a pair). */
    off: SendRound[];
    on: SendRound[];
    /** Pairs not counted: other processes' CPU differed too much between their rounds. */
    setAside: Record<Variant, SendRound>[];
    /** The median of the pairs' on/off sends/s, − 1, in %. */
    apartPct: number;
  };
  size: {
    /** The `ev:<id>` rows after the replay's sends: count, bytes (key + value + timestamps), bytes of the bodies alone. */
    rows: number;
    rowBytes: number;
    bodyBytes: number;
    byType: Record<string, { events: number; bytes: number }>;
    /** Sends made without the log, then as many with it (which logged `eventsLogged` events). */
    sends: number;
    eventsLogged: number;
    /** Used bytes of the database ((pages − free pages) × page size): seeded, after the sends without the log, after those with it. */
    usedBytes: { seeded: number; afterOff: number; afterOn: number };
  };
}

/** About 13 words, as a chat message. */
const SEND_TEXT = "bench message {n}: see you at the station tomorrow, bring the blue umbrella";
const SEND_CONCURRENCY = 16;
/** Concurrency of the sends that fill the log (fewer than the chats, so that few sends share a chat's commit). */
const FILL_CONCURRENCY = 32;
const PAGE_LIMIT = 1000;
/** A pair of send rounds counts when other processes' CPU in its two rounds differs by at most this, % of a core. */
const PAIR_BALANCE_PCT = 25;
/** A replay that has not finished after this long fails the bench. */
const REPLAY_TIMEOUT_MS = 300_000;
const PATHS: Record<Path, string> = {
  ws: "/v1/ws, subscriptions.set with since",
  sse: "GET /v1/events, SSE from Last-Event-ID",
  pages: `GET /v1/events JSON pages, limit=${PAGE_LIMIT}`,
};

const int = (x: number) => Math.round(x).toLocaleString("en-US");

/** Starts the daemon with or without the log: INBOXD_EVENT_LOG reaches it through the environment it inherits. */
async function startWithLog(dir: string, token: string, logOn: boolean): Promise<Daemon> {
  const before = process.env.INBOXD_EVENT_LOG;
  if (logOn) delete process.env.INBOXD_EVENT_LOG;
  else process.env.INBOXD_EVENT_LOG = "off";
  try {
    return await startDaemon(dir, token);
  } finally {
    if (before === undefined) delete process.env.INBOXD_EVENT_LOG;
    else process.env.INBOXD_EVENT_LOG = before;
  }
}

/** CPU seconds the whole machine has spent busy (/proc/stat, all CPUs, user to steal but idle and iowait; CLK_TCK = 100). */
function machineCpuSeconds(): number {
  const ticks = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1, 9).map(Number);
  return (ticks.reduce((a, b) => a + b, 0) - ticks[3] - ticks[4]) / 100;
}

/** The load generator's PID: the bench's child process that runs bench/load-worker.ts. */
function loadWorkerPid(): number {
  const children = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, "utf8")
    .trim()
    .split(/\s+/)
    .map(Number);
  const pid = children.find((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, "utf8").includes("load-worker");
    } catch {
      return false;
    }
  });
  if (pid === undefined) throw new Error("the load generator's process was not found");
  return pid;
}

/** The newest durable eventID, as GET /v1/events tells it. */
async function latestEventID(url: string, token: string): Promise<number> {
  const { status, body } = await getOnce(`${url}/v1/events?limit=1`, token);
  if (status !== 200) throw new Error(`GET /v1/events answered ${status}: ${body.toString().slice(0, 300)}`);
  return (JSON.parse(body.toString()) as { latestEventID: number }).latestEventID;
}

/** `count` sends at `concurrency`, taking the chats in turn; throws on the first failed one. */
async function sendMessages(
  url: string,
  token: string,
  chatIDs: string[],
  count: number,
  concurrency: number,
): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const post = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ text: SEND_TEXT.replace("{n}", String(n)) });
      const path = `/v1/chats/${segment(chatIDs[n % chatIDs.length])}/messages`;
      const headers = {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
      };
      const req = http.request(`${url}${path}`, { method: "POST", agent, headers }, (res) => {
        let text = "";
        res.on("data", (chunk) => (text += text.length < 300 ? chunk : ""));
        res.on("end", () =>
          (res.statusCode ?? 0) < 300
            ? resolve()
            : reject(new Error(`POST ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`)),
        );
      });
      req.on("error", reject);
      req.end(body);
    });
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) await post(next++);
      }),
    );
  } finally {
    agent.destroy();
  }
}

/** Used bytes of the data dir's database ((pages − free pages) × page size) and its `ev:<id>` rows; read with the daemon stopped. */
function readDatabase(dir: string, withRows = false) {
  const db = defaultBinding().open(join(dir, "inboxd.sqlite3"));
  try {
    const pragma = (name: string) => Number(Object.values(db.prepare(`PRAGMA ${name}`).get() as object)[0]);
    const usedBytes = (pragma("page_count") - pragma("freelist_count")) * pragma("page_size");
    if (!withRows) return { usedBytes };
    const rows = db
      .prepare(
        "SELECT length(CAST(key AS BLOB)) + length(CAST(value AS BLOB)) + length(created_at) + length(updated_at) AS bytes, value FROM inboxd WHERE key >= 'ev:' AND key < 'ev;'",
      )
      .all() as { bytes: number; value: string }[];
    const byType: EventsResult["size"]["byType"] = {};
    let rowBytes = 0,
      bodyBytes = 0;
    for (const row of rows) {
      // The record holds the event as JSON (older builds: as a string of JSON).
      const stored = (JSON.parse(row.value) as { b: string | Record<string, unknown> }).b;
      const body = typeof stored === "string" ? stored : JSON.stringify(stored).slice(1);
      const type = /^"type":"([^"]+)"/.exec(body)?.[1] ?? "?";
      const entry = (byType[type] ??= { events: 0, bytes: 0 });
      entry.events++;
      entry.bytes += row.bytes;
      rowBytes += row.bytes;
      bodyBytes += Buffer.byteLength(body);
    }
    return { usedBytes, rows: rows.length, rowBytes, bodyBytes, byType };
  } finally {
    db.close();
  }
}

/** Follows the eventIDs of a replay: done at `end`; counts any that is not the next one. */
class Tally {
  next: number;
  outOfOrder = 0;
  bytes = 0;
  private readonly started = performance.now();
  private readonly cpu: number;
  private rssPeakMB = 0;
  private readonly sampler: ReturnType<typeof setInterval>;

  constructor(
    since: number,
    private readonly end: number,
    private readonly pid: number,
  ) {
    this.next = since + 1;
    this.cpu = cpuSeconds(pid);
    this.sampler = setInterval(() => this.sampleRss(), 50).unref();
  }

  private sampleRss() {
    this.rssPeakMB = Math.max(this.rssPeakMB, memory(this.pid).rssMB);
  }

  /** One event (or a frame with no eventID); true once the last one came. */
  see(id: number | undefined, bytes: number): boolean {
    this.bytes += bytes;
    if (id === undefined) return false;
    if (id !== this.next) this.outOfOrder++;
    this.next = id + 1;
    return id >= this.end;
  }

  result(events: number): Replay {
    clearInterval(this.sampler);
    this.sampleRss();
    const seconds = (performance.now() - this.started) / 1000;
    const daemonCpuPct = ((cpuSeconds(this.pid) - this.cpu) / seconds) * 100;
    return {
      seconds,
      eventsPerSecond: events / seconds,
      bytes: this.bytes,
      outOfOrder: this.outOfOrder,
      daemonCpuPct,
      rssPeakMB: this.rssPeakMB,
    };
  }
}

/** Runs `start` until it calls `done`, failing after REPLAY_TIMEOUT_MS. */
function replayWithin(
  what: string,
  start: (done: () => void, fail: (error: Error) => void) => () => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let stop = () => {};
    const timer = setTimeout(
      () => finish(new Error(`${what}: not finished after ${REPLAY_TIMEOUT_MS / 1000} s`)),
      REPLAY_TIMEOUT_MS,
    );
    const finish = (error?: Error) => {
      clearTimeout(timer);
      stop();
      if (error) reject(error);
      else resolve();
    };
    stop = start(() => finish(), finish);
  });
}

/** The eventID near the start of a frame (`{"seq":…,"type":…,"eventID":…`), if it has one. */
const eventIDIn = (head: string) => {
  const match = /"eventID":(\d+)/.exec(head);
  return match ? Number(match[1]) : undefined;
};

async function replayOverWebSocket(daemon: Daemon, token: string, since: number, end: number): Promise<Replay> {
  let tally: Tally | undefined;
  await replayWithin("replay over /v1/ws", (done, fail) => {
    const ws = new WebSocket(`${daemon.url.replace(/^http/, "ws")}/v1/ws`, {
      headers: { authorization: `Bearer ${token}` },
    });
    ws.once("open", () => {
      tally = new Tally(since, end, daemon.pid);
      ws.send(JSON.stringify({ type: "subscriptions.set", requestID: "replay", chatIDs: ["*"], since }));
    });
    ws.on("message", (data: Buffer) => {
      if (tally?.see(eventIDIn(data.toString("latin1", 0, 120)), data.length)) done();
    });
    ws.once("error", fail);
    ws.once("close", (code) => fail(new Error(`/v1/ws closed with ${code} at eventID ${tally?.next}`)));
    return () => {
      ws.removeAllListeners();
      ws.on("error", () => undefined);
      ws.terminate();
    };
  });
  return tally!.result(end - since);
}

async function replayOverSse(daemon: Daemon, token: string, since: number, end: number): Promise<Replay> {
  const tally = new Tally(since, end, daemon.pid);
  await replayWithin("replay over SSE", (done, fail) => {
    const headers = { authorization: `Bearer ${token}`, accept: "text/event-stream", "last-event-id": String(since) };
    const req = http.get(`${daemon.url}/v1/events`, { agent: false, headers }, (res) => {
      if (res.statusCode !== 200) return fail(new Error(`GET /v1/events (SSE) answered ${res.statusCode}`));
      const decoder = new StringDecoder("utf8");
      let rest = "";
      res.on("data", (chunk: Buffer) => {
        tally.bytes += chunk.length;
        rest += decoder.write(chunk);
        let at = 0;
        for (let cut = rest.indexOf("\n\n"); cut !== -1; at = cut + 2, cut = rest.indexOf("\n\n", at)) {
          if (rest.startsWith("id: ", at) && tally.see(Number(rest.slice(at + 4, rest.indexOf("\n", at))), 0))
            return done();
        }
        rest = rest.slice(at);
      });
      res.once("end", () => fail(new Error(`the SSE stream ended at eventID ${tally.next}`)));
    });
    req.once("error", fail);
    return () => req.destroy();
  });
  return tally.result(end - since);
}

async function replayOverPages(daemon: Daemon, token: string, since: number, end: number): Promise<Replay> {
  const tally = new Tally(since, end, daemon.pid);
  for (let after = since; tally.next <= end; ) {
    const { status, body } = await getOnce(`${daemon.url}/v1/events?after=${after}&limit=${PAGE_LIMIT}`, token);
    if (status !== 200)
      throw new Error(`GET /v1/events?after=${after} answered ${status}: ${body.toString().slice(0, 300)}`);
    const page = JSON.parse(body.toString()) as { items: { eventID: number }[]; nextAfter: number };
    tally.see(undefined, body.length);
    if (!page.items.length) throw new Error(`GET /v1/events?after=${after} returned no events before eventID ${end}`);
    for (const item of page.items) if (tally.see(item.eventID, 0)) break;
    after = page.nextAfter;
  }
  return tally.result(end - since);
}

const REPLAYS: Record<Path, typeof replayOverPages> = {
  ws: replayOverWebSocket,
  sse: replayOverSse,
  pages: replayOverPages,
};

/**
 * The same number of sends without the log, then with it (which fills the log for the replays), over `sendTo`; the
 * `ev:<id>` rows and the database's used bytes after each. Sends that share a chat's commit share its events: more
 * sends then fill the log up to `events` after `since`.
 */
async function fillLog(dir: string, token: string, events: number, log: EventsBenchOptions["log"]) {
  const sends = Math.ceil(events / 2);
  const seeded = readDatabase(dir).usedBytes;
  let daemon = await startWithLog(dir, token, false);
  const { chatIDs, echoChatIDs } = await listChatIDs(daemon.url, token);
  // Not to the Echo chats, whose answers would add sends of their own.
  const sendTo = chatIDs.filter((id) => !echoChatIDs.includes(id));
  log(`events: ${sends} sends over ${sendTo.length} chats without the log (c=${FILL_CONCURRENCY})`);
  await sendMessages(daemon.url, token, sendTo, sends, FILL_CONCURRENCY);
  await daemon.stop();
  const afterOff = readDatabase(dir).usedBytes;
  daemon = await startWithLog(dir, token, true);
  const since = await latestEventID(daemon.url, token);
  log(`events: ${sends} sends with the log, from eventID ${since}`);
  await sendMessages(daemon.url, token, sendTo, sends, FILL_CONCURRENCY);
  const eventsLogged = (await latestEventID(daemon.url, token)) - since;
  await daemon.stop();
  const { usedBytes: afterOn, ...rows } = readDatabase(dir, true);
  const size: EventsResult["size"] = {
    ...(rows as Required<typeof rows>),
    sends,
    usedBytes: { seeded, afterOff, afterOn },
    eventsLogged,
  };
  let logged = eventsLogged,
    extra = 0;
  if (logged < events) {
    daemon = await startWithLog(dir, token, true);
    for (; logged < events; logged = (await latestEventID(daemon.url, token)) - since) {
      const more = Math.ceil((events - logged) / 1.5);
      log(`events: ${logged} logged, ${more} more sends`);
      await sendMessages(daemon.url, token, sendTo, more, FILL_CONCURRENCY);
      extra += more;
    }
    await daemon.stop();
  }
  return { since, sends: sends + extra, sendTo, size };
}

/** Each replay path `rounds` times in turn, on a freshly started daemon (the log is read from the database). */
async function replays(
  dir: string,
  token: string,
  o: EventsBenchOptions,
  since: number,
): Promise<Record<Path, Replay[]>> {
  const daemon = await startWithLog(dir, token, true);
  try {
    const rounds: Record<Path, Replay[]> = { ws: [], sse: [], pages: [] };
    for (let round = 1; round <= o.rounds; round++) {
      for (const path of Object.keys(REPLAYS) as Path[]) {
        const r = await REPLAYS[path](daemon, token, since, since + o.events);
        o.log(
          `events: replay ${round}/${o.rounds}, ${PATHS[path]}: ${int(r.eventsPerSecond)} events/s (${r.seconds.toFixed(2)} s, daemon CPU ${int(r.daemonCpuPct)} %, RSS peak ${int(r.rssPeakMB)} MB)`,
        );
        rounds[path].push(r);
      }
    }
    return rounds;
  } finally {
    await daemon.stop();
  }
}

/**
 * Sends/s at 16 clients on 16 chats: a daemon without the log and one with it, each on its own copy of the seeded
 * data, both running (the one not measured is idle); after a warm-up each, pairs of rounds alternate off/on, on/off,
 * … A pair during which other processes took more CPU in one round than in the other (by over PAIR_BALANCE_PCT of a
 * core) is set aside and measured again, up to `pairs` more times; if balanced pairs are still short, the least
 * unbalanced of those set aside complete them.
 */
async function compareSends(dirs: Record<Variant, string>, token: string, chatIDs: string[], o: EventsBenchOptions) {
  const requests: RequestSpec[] = chatIDs.map((id) => ({
    method: "POST",
    path: `/v1/chats/${segment(id)}/messages`,
    body: JSON.stringify({ text: SEND_TEXT }),
  }));
  const generator = new LoadGenerator();
  const daemons: Partial<Record<Variant, Daemon>> = {};
  try {
    for (const variant of VARIANTS) daemons[variant] = await startWithLog(dirs[variant], token, variant === "on");
    const job = (daemon: Daemon, warmupSeconds: number, durationSeconds: number) =>
      generator.run({
        url: daemon.url,
        token,
        requests,
        concurrency: SEND_CONCURRENCY,
        warmupSeconds,
        durationSeconds,
      });
    for (const variant of VARIANTS) await job(daemons[variant]!, 0, o.warmupSeconds);
    const generatorPid = loadWorkerPid();
    const round = async (variant: Variant): Promise<SendRound> => {
      const daemon = daemons[variant]!;
      const first = await latestEventID(daemon.url, token);
      const cpu = () => ({
        daemon: cpuSeconds(daemon.pid),
        generator: cpuSeconds(generatorPid),
        machine: machineCpuSeconds(),
        at: performance.now(),
      });
      const before = cpu(),
        bench = process.cpuUsage();
      const result = await job(daemon, o.warmupSeconds, o.roundSeconds);
      const after = cpu(),
        benchUsage = process.cpuUsage(bench);
      const seconds = (after.at - before.at) / 1000;
      const pct = (key: "daemon" | "generator" | "machine") => ((after[key] - before[key]) / seconds) * 100;
      const events = (await latestEventID(daemon.url, token)) - first;
      if (variant === "off" && events !== 0)
        throw new Error(`the daemon started with INBOXD_EVENT_LOG=off logged ${events} events`);
      const otherCpuPct = Math.max(
        0,
        pct("machine") - pct("daemon") - pct("generator") - (benchUsage.user + benchUsage.system) / 1e4 / seconds,
      );
      return { result, cpuPct: pct("daemon"), rssMB: memory(daemon.pid).rssMB, events, otherCpuPct };
    };
    const kept: Record<Variant, SendRound[]> = { off: [], on: [] };
    const setAside: Record<Variant, SendRound>[] = [];
    const keep = (pair: Record<Variant, SendRound>) => VARIANTS.forEach((variant) => kept[variant].push(pair[variant]));
    const imbalance = (pair: Record<Variant, SendRound>) => Math.abs(pair.on.otherCpuPct - pair.off.otherCpuPct);
    for (let attempt = 0; kept.on.length < o.pairs && attempt < o.pairs * 2; attempt++) {
      const pair = {} as Record<Variant, SendRound>;
      for (const variant of attempt % 2 ? [...VARIANTS].reverse() : VARIANTS) {
        pair[variant] = await round(variant);
        const { result, otherCpuPct } = pair[variant];
        o.log(
          `events: sends, log ${variant} (pair ${attempt + 1}): ${int(result.rps)} sends/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, other processes ${int(otherCpuPct)} % of a core`,
        );
      }
      if (imbalance(pair) <= PAIR_BALANCE_PCT) keep(pair);
      else setAside.push(pair);
    }
    setAside.sort((a, b) => imbalance(a) - imbalance(b));
    while (kept.on.length < o.pairs) keep(setAside.shift()!);
    return { ...kept, setAside };
  } finally {
    generator.close();
    for (const daemon of Object.values(daemons)) await daemon.stop();
  }
}

export async function runEventsBench(o: EventsBenchOptions): Promise<EventsResult> {
  const dir = join(o.dir, "log");
  const copies: Record<Variant, string> = { off: join(o.dir, "sends-off"), on: join(o.dir, "sends-on") };
  o.log(`events: seeding ${o.chats} chats, ${o.messages} messages into ${dir}`);
  await runCli([
    "seed",
    "--data-dir",
    dir,
    "--chats",
    String(o.chats),
    "--messages",
    String(o.messages),
    "--accounts",
    String(o.accounts),
    "--seed",
    "1",
  ]);
  const token = await createToken(dir);
  for (const variant of VARIANTS) cpSync(dir, copies[variant], { recursive: true });
  const { since, sends, sendTo, size } = await fillLog(dir, token, o.events, o.log);
  const rounds = await replays(dir, token, o, since);
  const chats = sendTo.slice(0, SEND_CONCURRENCY);
  const send = await compareSends(copies, token, chats, o);
  return {
    chats: o.chats,
    messages: o.messages,
    replay: { events: o.events, since, sends, rounds },
    sends: {
      concurrency: SEND_CONCURRENCY,
      chats: chats.length,
      text: SEND_TEXT,
      ...send,
      apartPct: (median(send.on.map((r, i) => r.result.rps / send.off[i].result.rps)) - 1) * 100,
    },
    size,
  };
}

/** The section's table, as the other sections print theirs. */
export function formatEvents(r: EventsResult): string {
  const scalars: Row[] = [];
  for (const path of Object.keys(PATHS) as Path[]) {
    const rounds = r.replay.rounds[path];
    const rates = rounds.map((x) => x.eventsPerSecond);
    const mid = rounds.find((x) => x.eventsPerSecond === median(rates))!;
    scalars.push({
      name:
        path === "ws"
          ? `replay of ${int(r.replay.events)} events to a resuming client, median of ${rounds.length}: ${PATHS[path]}`
          : `  ${PATHS[path]}`,
      value:
        `${int(mid.eventsPerSecond)} events/s (${int(Math.min(...rates))}–${int(Math.max(...rates))}; ${mid.seconds.toFixed(2)} s, ` +
        `${(mid.bytes / mid.seconds / 1e6).toFixed(0)} MB/s, daemon CPU ${int(mid.daemonCpuPct)} %, RSS peak ${int(Math.max(...rounds.map((x) => x.rssPeakMB)))} MB)`,
      target: "stated; each once, in order",
      pass: rounds.every((x) => x.outOfOrder === 0),
    });
  }

  const { on, off, apartPct } = r.sends;
  const byRps = (rounds: SendRound[]) => rounds.find((x) => x.result.rps === median(rounds.map((y) => y.result.rps)))!;
  const row = (x: SendRound, name: string): Row => ({ name, result: x.result, cpuPct: x.cpuPct, rssMB: x.rssMB });
  const errors = [...on, ...off].reduce((sum, x) => sum + x.result.errors, 0);
  const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(1)} %`;
  const loads: Row[] = [
    {
      ...row(
        byRps(on),
        `POST send, ${r.sends.concurrency} clients on ${r.sends.chats} chats, event log on, median of ${on.length}`,
      ),
      target: `under 10 % apart (median pair: ${signed(apartPct)})`,
      pass: Math.abs(apartPct) < 10 && errors === 0,
    },
    row(byRps(off), "  event log off (INBOXD_EVENT_LOG=off), median"),
  ];
  const cpuUs = (x: SendRound) => ((x.cpuPct / 100) * 1e6) / x.result.rps;
  const mid = (rounds: SendRound[], f: (x: SendRound) => number) => median(rounds.map(f)).toFixed(1);
  const cpuOn = median(on.map(cpuUs)),
    cpuOff = median(off.map(cpuUs));
  const pairText = (pair: Record<Variant, SendRound>) =>
    `${int(pair.off.result.rps)} / ${int(pair.on.result.rps)} (${int(pair.off.otherCpuPct)}, ${int(pair.on.otherCpuPct)})`;
  scalars.push(
    {
      name: "sends/s per pair, log off / on (other processes' CPU in each round, % of a core)",
      value: on.map((x, i) => pairText({ off: off[i], on: x })).join("; "),
    },
    {
      name: "  p50 / p99 ms, median of the rounds, log on | off",
      value: `${mid(on, (x) => x.result.p50)} / ${mid(on, (x) => x.result.p99)} | ${mid(off, (x) => x.result.p50)} / ${mid(off, (x) => x.result.p99)}`,
    },
    {
      name: "  daemon CPU per send, median of the rounds, log on | off",
      value: `${int(cpuOn)} | ${int(cpuOff)} µs (${signed((cpuOn / cpuOff - 1) * 100)})`,
    },
    ...(r.sends.setAside.length
      ? [
          {
            name: `  pairs measured again: other processes' CPU differed by over ${PAIR_BALANCE_PCT} % of a core`,
            value: r.sends.setAside.map(pairText).join("; "),
          },
        ]
      : []),
  );

  const s = r.size;
  const perEvent = s.rowBytes / s.rows;
  const types = Object.entries(s.byType)
    .sort((a, b) => b[1].events - a[1].events)
    .map(([type, t]) => `${type} ${int(t.bytes / t.events)} B × ${int(t.events)}`)
    .join(", ");
  const grown = (after: number, before: number) => (after - before) / s.sends;
  const pagesPerEvent =
    (grown(s.usedBytes.afterOn, s.usedBytes.afterOff) - grown(s.usedBytes.afterOff, s.usedBytes.seeded)) *
    (s.sends / s.eventsLogged);
  // B per event is MB per million events.
  scalars.push(
    {
      name: `event log size: bytes per event (ev:<id> rows: key + value + timestamps), ${int(s.rows)} events`,
      value: `${int(perEvent)} B (${types})`,
      target: "stated",
    },
    {
      name: "  per million events",
      value: `${int(perEvent)} MB in the rows; ${int(pagesPerEvent)} MB of database pages (growth with the log − without)`,
    },
    {
      name: "  per send (the events of one send)",
      value: `${int(s.rowBytes / s.sends)} B (${(s.eventsLogged / s.sends).toFixed(2)} events)`,
    },
    {
      name: "  event bodies in the rows (the rest: JSON escaping of the body, chat ID, time, key)",
      value: `${((s.bodyBytes / s.rowBytes) * 100).toFixed(0)} %`,
    },
    {
      name: `  database pages grown per send, ${int(s.sends)} sends without | with the log`,
      value: `${int(grown(s.usedBytes.afterOff, s.usedBytes.seeded))} | ${int(grown(s.usedBytes.afterOn, s.usedBytes.afterOff))} B`,
    },
  );
  const header = `Event log: ${int(r.chats)} chats, ${int(r.messages)} messages seeded; ${int(r.replay.sends)} sends with the log over every chat but the Echo ones`;
  const notes = [
    "Replay: from the request (subscriptions.set, or the GET) to the arrival of the last event; every eventID after `since` is checked to come",
    "once and in order. Sends: two daemons on copies of the seeded data, rounds alternating off/on, on/off, …; the median of the pairs' ratios.",
  ];
  return [header, "", formatReport(loads, scalars), ...notes].join("\n");
}
