/**
 * The XMPP part of the benchmark (`npm run bench -- --only xmpp`), against a real Prosody on loopback
 * (test/harness/prosody.ts) with plain XMPP clients as the other people (test/xmpp/peer.ts):
 * 1. Backfill: bob sends N messages (default 10,000) to a user who has no inboxd account yet, so that they land in
 *    that user's archive (XEP-0313). The user then signs in to a fresh daemon (its own data dir) through the
 *    login-session API; measured from the session's `complete` to the account's status `connected`, and every
 *    message is checked through the API. Repeated with a fresh user and data dir; the median is the figure.
 * 2. Latency: with that account connected, POST /v1/chats/{id}/messages → the stanza at bob's client, one send
 *    after another; then the same path without inboxd (the user's own plain client sending to bob) as a baseline.
 * Helpers are in bench/xmpp-client.ts, the printed tables in bench/xmpp-report.ts.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { FIRST_BACKFILL } from "../src/connectors/xmpp/client.ts";
import { startProsody, type ProsodyServer } from "../test/harness/prosody.ts";
import { Peer, xml } from "../test/xmpp/peer.ts";
import { createToken, median } from "./daemon.ts";
import type { Api } from "../test/kit/http.ts";
import {
  cpuWindow,
  findChat,
  keepAliveApi,
  loginXmpp,
  percentiles,
  type Percentiles,
  startDaemonWith,
  storedTexts,
  waitForStatus,
  type XmppDaemon,
} from "./xmpp-client.ts";

export interface XmppBenchOptions {
  /** Messages bob leaves in each archive before the login (default 10,000). */
  messages: number;
  /** Backfill rounds, each with a fresh user and data dir (default 3). */
  rounds: number;
  /** Measured sends of each latency path, and unmeasured ones before them. */
  sends: number;
  warmupSends: number;
  /** Starts each daemon with --cpu-prof into this dir (the profile is written when it stops). */
  cpuProfDir?: string;
  log: (line: string) => void;
}

export interface BackfillRound {
  user: string;
  /** bob's sends, from the first to the answer of a ping sent after the last (Prosody has handled them all). */
  sendSeconds: number;
  /** The login step (the password checked by signing in), ms. */
  loginMs: number;
  /** From the login session's `complete`: the first poll that saw `backfilling`, and `connected`. */
  backfillingAfterMs?: number;
  connectedAfterMs: number;
  /** CPU seconds from `complete` to `connected`: the daemon's, Prosody's, and every other process's but the bench's. */
  daemonCpuSeconds: number;
  prosodyCpuSeconds: number;
  otherCpuSeconds: number;
  /** Attempts of this round (a noisy one is measured again); the quietest is reported. */
  attempts: number;
  expected: number;
  stored: number;
  /** Every expected text stored once, in order. */
  verified: boolean;
  problem?: string;
}

export interface XmppResult {
  prosodyVersion: string;
  cpus: number;
  messages: number;
  backfill: BackfillRound[];
  backfillMedianSeconds: number;
  latency: {
    sends: number;
    warmupSends: number;
    inboxd: Percentiles;
    httpResponse: Percentiles;
    baseline: Percentiles;
    /** Per path: seconds, and the share of one core other processes of the machine took meanwhile (%). */
    inboxdSeconds: number;
    inboxdOtherCpuPct: number;
    baselineSeconds: number;
    baselineOtherCpuPct: number;
  };
}

const PASSWORD = "bench-password";
/** A backfill during which other processes took more than this share of one core (%) is measured again... */
const NOISE_PCT = 30;
/** ...up to this many times in all. */
const ATTEMPTS = 3;

let prosody: ProsodyServer | undefined;
/** Prosody's temp dir (its config's dir), which close() removes: for the signal handler, which cannot wait for close(). */
let prosodyDir: string | undefined;
const daemons = new Set<XmppDaemon>();
const dirs = new Set<string>();

/** For the bench's signal handler: kills what this section started, synchronously (Prosody and daemons by PID). */
export function killXmpp(): void {
  const pids = [prosody?.pid(), ...[...daemons].map((d) => d.pid)];
  for (const pid of pids)
    if (pid)
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone */
      }
  for (const dir of [...dirs, prosodyDir]) if (dir) rmSync(dir, { recursive: true, force: true });
}

/** A round trip to the server: Prosody handles a session's stanzas in order, so every earlier one is handled. */
async function ping(peer: Peer, timeoutMs: number): Promise<void> {
  const id = `ping-${randomUUID()}`;
  const answer = peer.waitFor((s) => s.is("iq") && s.attrs.id === id, timeoutMs);
  await peer.send(xml("iq", { type: "get", id, to: "localhost" }, xml("ping", { xmlns: "urn:xmpp:ping" })));
  const iq = await answer;
  if (iq.attrs.type !== "result") throw new Error(`ping answered ${iq}`);
}

/** A signed-in daemon of one backfill attempt; stop() also removes its data dir. */
interface Session {
  daemon: XmppDaemon;
  api: Api;
  accountID: string;
  user: string;
  stop(): Promise<void>;
}

/** One backfill attempt: bob fills a fresh user's archive, the user signs in to a fresh daemon, all is checked. */
async function backfill(
  server: ProsodyServer,
  bob: Peer,
  user: string,
  options: XmppBenchOptions,
): Promise<{ round: BackfillRound; session: Session }> {
  const jid = await server.register(user, PASSWORD);
  // Every stanza is written without waiting for the one before (the socket buffers them), then a ping.
  const text = (i: number) => `backfill ${user} #${i}`;
  const sendStart = performance.now();
  const writes: Promise<string>[] = [];
  for (let i = 0; i < options.messages; i++) writes.push(bob.message(jid, text(i)));
  await Promise.all(writes);
  await ping(bob, 300_000);
  const sendSeconds = (performance.now() - sendStart) / 1000;
  options.log(`xmpp: bob sent ${options.messages} messages to ${jid} in ${sendSeconds.toFixed(1)} s`);

  const dir = mkdtempSync(join(os.tmpdir(), "inboxd-bench-xmpp-"));
  dirs.add(dir);
  const token = await createToken(dir);
  const daemon = await startDaemonWith(
    dir,
    token,
    options.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfDir}`] : [],
  );
  daemons.add(daemon);
  const api = keepAliveApi(daemon.url, token);
  const stop = async () => {
    api.close();
    await daemon.stop();
    daemons.delete(daemon);
    rmSync(dir, { recursive: true, force: true });
    dirs.delete(dir);
  };
  try {
    const login = await loginXmpp(api, { jid, password: PASSWORD, host: server.host, port: server.port });
    const cpu = cpuWindow([daemon.pid, server.pid()!]);
    const connected = await waitForStatus(api, login.accountID, "connected", login.completeAt, 600_000);
    const {
      own: [daemonCpu, prosodyCpu],
      otherSeconds,
    } = cpu();
    const expected = Math.min(options.messages, FIRST_BACKFILL);
    // The chat with bob must hold the newest `expected` texts, each once, oldest first.
    const texts = await storedTexts(api, (await findChat(api, login.accountID, bob.bareJID)).id);
    const wanted = Array.from({ length: expected }, (_, i) => text(options.messages - expected + i));
    const firstWrong = wanted.findIndex((t, i) => texts[i] !== t);
    const verified = texts.length === expected && firstWrong < 0;
    const round: BackfillRound = {
      user: jid,
      sendSeconds,
      loginMs: login.loginMs,
      backfillingAfterMs: connected.seen.backfilling,
      connectedAfterMs: connected.ms,
      daemonCpuSeconds: daemonCpu,
      prosodyCpuSeconds: prosodyCpu,
      otherCpuSeconds: otherSeconds,
      attempts: 1,
      expected,
      stored: texts.length,
      verified,
      problem: verified
        ? undefined
        : `stored ${texts.length} of ${expected}` +
          (firstWrong >= 0
            ? `; position ${firstWrong} holds ${JSON.stringify(texts[firstWrong])}, expected ${JSON.stringify(wanted[firstWrong])}`
            : ""),
    };
    options.log(
      `xmpp: ${jid}: login ${login.loginMs.toFixed(0)} ms; complete → backfilling ${((round.backfillingAfterMs ?? NaN) / 1000).toFixed(2)} s → connected ${(connected.ms / 1000).toFixed(2)} s ` +
        `(CPU: daemon ${daemonCpu.toFixed(1)} s, Prosody ${prosodyCpu.toFixed(1)} s, other processes ${otherSeconds.toFixed(1)} s); stored ${texts.length}/${expected}${verified ? ", verified" : `: ${round.problem}`}` +
        (options.cpuProfDir ? ` (daemon pid ${daemon.pid}, profile in ${options.cpuProfDir})` : ""),
    );
    return { round, session: { daemon, api, accountID: login.accountID, user, stop } };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Sends one after another, each timed from `send`'s start to bob holding the stanza with its unique body. */
async function timeSends(
  bob: Peer,
  count: number,
  warmup: number,
  label: string,
  send: (body: string) => Promise<unknown>,
) {
  const total: number[] = [],
    returned: number[] = [];
  for (let i = 0; i < warmup + count; i++) {
    const body = `latency ${label} ${i} ${randomUUID()}`;
    const arrived = bob.waitForMessage((m) => m.body === body, 10_000).then(() => performance.now());
    const started = performance.now();
    await send(body);
    const answered = performance.now();
    const at = await arrived;
    if (i < warmup) continue;
    total.push(at - started);
    returned.push(answered - started);
  }
  return { total, returned };
}

export async function runXmppBench(options: XmppBenchOptions): Promise<XmppResult> {
  const { log } = options;
  const peers: Peer[] = [];
  let session: Session | undefined;
  try {
    prosody = await startProsody();
    const server = prosody;
    const config = readFileSync(`/proc/${server.pid()}/cmdline`, "utf8")
      .split("\0")
      .find((arg) => arg.endsWith("/prosody.cfg.lua"));
    prosodyDir = config?.slice(0, -"/prosody.cfg.lua".length);
    const prosodyVersion = await prosodyVersionOf();
    log(`xmpp: Prosody ${prosodyVersion} pid ${server.pid()} on 127.0.0.1:${server.port}`);
    await server.register("bob", PASSWORD);
    const bob = await Peer.connect(server, "bob", PASSWORD);
    peers.push(bob);

    // Backfill rounds. The machine may be shared: an attempt during which other processes took more than NOISE_PCT
    // of a core is measured again with a fresh user (up to ATTEMPTS), and the quietest is kept.
    const rounds: BackfillRound[] = [];
    const noise = (r: BackfillRound) => (r.otherCpuSeconds / (r.connectedAfterMs / 1000)) * 100;
    for (let r = 1; r <= options.rounds; r++) {
      const attempts: BackfillRound[] = [];
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        log(`xmpp: backfill round ${r}/${options.rounds}${attempt > 1 ? `, attempt ${attempt}` : ""}`);
        await session?.stop();
        session = undefined;
        const result = await backfill(server, bob, `alice${r}${attempt > 1 ? `-${attempt}` : ""}`, options);
        session = result.session;
        attempts.push(result.round);
        if (noise(result.round) <= NOISE_PCT) break;
        log(
          `xmpp:   other processes took ${noise(result.round).toFixed(0)} % of a core meanwhile` +
            (attempt < ATTEMPTS ? "; measuring again" : ""),
        );
      }
      const quietest = attempts.reduce((best, a) => (a.otherCpuSeconds < best.otherCpuSeconds ? a : best));
      rounds.push({ ...quietest, attempts: attempts.length });
    }

    // Latency, on the last attempt's daemon and account.
    const { api, daemon, accountID, user } = session!;
    const path = `/v1/chats/${encodeURIComponent((await findChat(api, accountID, bob.bareJID)).id)}/messages`;
    log(
      `xmpp: latency: ${options.warmupSends} + ${options.sends} sends through inboxd (${user}@localhost → bob), one after another`,
    );
    let window = cpuWindow([daemon.pid, server.pid()!]);
    const viaInboxd = await timeSends(bob, options.sends, options.warmupSends, "inboxd", (body) =>
      api.post(path, { text: body }),
    );
    const inboxdSpan = window();
    log(`xmpp: latency: the same through ${user}'s own plain XMPP client (baseline)`);
    const own = await Peer.connect(server, user, PASSWORD, { resource: "baseline" });
    peers.push(own);
    window = cpuWindow([daemon.pid, server.pid()!]);
    const baseline = await timeSends(bob, options.sends, options.warmupSends, "baseline", (body) =>
      own.message(bob.bareJID, body),
    );
    const baselineSpan = window();
    return {
      prosodyVersion,
      cpus: os.cpus().length,
      messages: options.messages,
      backfill: rounds,
      backfillMedianSeconds: median(rounds.map((r) => r.connectedAfterMs)) / 1000,
      latency: {
        sends: options.sends,
        warmupSends: options.warmupSends,
        inboxd: percentiles(viaInboxd.total),
        httpResponse: percentiles(viaInboxd.returned),
        baseline: percentiles(baseline.total),
        inboxdSeconds: inboxdSpan.seconds,
        inboxdOtherCpuPct: (inboxdSpan.otherSeconds / inboxdSpan.seconds) * 100,
        baselineSeconds: baselineSpan.seconds,
        baselineOtherCpuPct: (baselineSpan.otherSeconds / baselineSpan.seconds) * 100,
      },
    };
  } finally {
    await Promise.all(peers.map((peer) => peer.close()));
    await session?.stop().catch(() => undefined);
    await prosody?.close();
    prosody = undefined;
    prosodyDir = undefined;
  }
}

/** `prosody --version` can hang (it may start loading the server); the package manager answers at once. */
function prosodyVersionOf(): Promise<string> {
  return new Promise((resolve) =>
    execFile("dpkg-query", ["-W", "-f=${Version}", "prosody"], { timeout: 5000 }, (error, stdout) =>
      resolve(error ? "(version unknown)" : stdout.trim()),
    ),
  );
}
