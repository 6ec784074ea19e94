/**
 * End-to-end encryption's cost in the Matrix connector (`npm run bench -- --only matrix-e2ee`), against a real
 * Synapse 1.67 on loopback, each figure beside the same work in an unencrypted room in the same run:
 * 1. Catch-up: while the daemon is stopped, carol sends N messages (default 10,000) into a room; the daemon is
 *    started and timed from ready (serving) to the last of them served by the API, every message then checked. In
 *    the encrypted room each one is a Megolm message (carol's device: matrix-sdk-crypto, test/matrix/held-key-sender.ts)
 *    that inboxd decrypts as it reads the gap; the plain room's are the same texts in the clear. Rounds alternate.
 * 2. Send → the other client: POST /v1/chats/{id}/messages → the text at bob's client (matrix-js-sdk with its Rust
 *    crypto, decrypting what it gets), alternating send by send between the encrypted and the plain room.
 * The target (issue 35): encryption costs at most 3× the same work unencrypted.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { startSynapse, type SynapseServer } from "../test/harness/synapse.ts";
import { sleep } from "../test/kit/common.ts";
import { EncryptedPeer } from "../test/matrix/encrypted-peer.ts";
import { HeldKeySender } from "../test/matrix/held-key-sender.ts";
import { Peer } from "../test/matrix/peer.ts";
import { createToken, median } from "./daemon.ts";
import {
  keepAliveApi,
  loginWith,
  percentiles,
  type Percentiles,
  startDaemonWith,
  storedTexts,
  table,
  waitForStatus,
  type XmppDaemon,
} from "./xmpp-client.ts";

export interface E2eeBenchOptions {
  /** Messages sent while the daemon is down, per catch-up round. */
  messages: number;
  rounds: number;
  sends: number;
  warmupSends: number;
  command: string;
  log: (line: string) => void;
}

interface CatchUp {
  room: "plain" | "encrypted";
  seedSeconds: number;
  ms: number;
  eventsPerSecond: number;
  verified: boolean;
}

export interface E2eeResult {
  command: string;
  cpus: number;
  loadBefore: number[];
  loadAfter: number[];
  messages: number;
  catchUp: CatchUp[];
  plainMedianMs: number;
  encryptedMedianMs: number;
  latency: { sends: number; plain: Percentiles; encrypted: Percentiles };
}

const PASSWORD = "bench-password";
let synapse: SynapseServer | undefined;
let daemon: XmppDaemon | undefined;
const dirs: string[] = [];

/** For the bench's signal handler: stops what this section started (by PID) and removes its temp dirs. */
export function killE2ee(): void {
  for (const pid of [synapse?.pid(), daemon?.pid])
    if (pid)
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone */
      }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

export async function runE2eeBench(options: E2eeBenchOptions): Promise<E2eeResult> {
  const { log } = options;
  // bob's matrix-js-sdk logs its Rust crypto's tracing to the console: kept out of the report (log() is stderr).
  const quiet = { log: console.log, info: console.info, debug: console.debug, warn: console.warn };
  Object.assign(console, { log: () => {}, info: () => {}, debug: () => {}, warn: () => {} });
  const loadBefore = os.loadavg();
  synapse = await startSynapse({ lean: true });
  const server = synapse;
  const peers: { close(): Promise<void> }[] = [];
  try {
    const registered = {
      alice: await server.register("alice", PASSWORD),
      bob: await server.register("bob", PASSWORD),
      carol: await server.register("carol", PASSWORD),
    };
    const dir = mkdtempSync(join(os.tmpdir(), "inboxd-bench-e2ee-"));
    dirs.push(dir);
    const token = await createToken(dir);
    daemon = await startDaemonWith(dir, token);
    let api = keepAliveApi(daemon.url, token);
    const { accountID, completeAt } = await loginWith(
      api,
      "local-matrix",
      "password",
      { username: registered.alice.userID, password: PASSWORD, homeserver: server.url },
      "alice",
    );
    await waitForStatus(api, accountID, "connected", completeAt, 60_000);
    const phone = await Peer.from(server, registered.alice); // alice's other session, to join rooms for her
    const bob = await EncryptedPeer.start(server, registered.bob);
    const carol = await HeldKeySender.start(server, registered.carol);
    peers.push(phone, bob, carol);
    const rooms = {
      plain: await carol.peer.createRoom({ name: "Plain", invite: [phone.userID, bob.userID] }),
      encrypted: await carol.peer.createRoom({
        name: "Encrypted",
        invite: [phone.userID, bob.userID],
        encrypted: true,
        initialState: [{ type: "m.room.history_visibility", state_key: "", content: { history_visibility: "shared" } }],
      }),
    };
    for (const room of Object.values(rooms)) {
      await phone.join(room);
      await bob.waitForRoom(room);
    }
    const chats = {
      plain: await chatTitled(api, accountID, "Plain"),
      encrypted: await chatTitled(api, accountID, "Encrypted"),
    };
    log(`matrix-e2ee: alice signed in, rooms ready (Synapse on ${server.url})`);

    // 1. Catch-up.
    const catchUp: CatchUp[] = [];
    for (let round = 0; round < options.rounds; round++)
      for (const kind of ["plain", "encrypted"] as const) {
        await daemon.stop();
        api.close();
        const texts = Array.from({ length: options.messages }, (_, i) => `${kind} r${round} ${i}`);
        const seedStarted = performance.now();
        if (kind === "plain") await sendMany(carol.peer, rooms.plain, texts, 16);
        else await carol.sendMany(rooms.encrypted, [phone.userID, bob.userID], texts, 16);
        const seedSeconds = (performance.now() - seedStarted) / 1000;
        daemon = await startDaemonWith(dir, token);
        api = keepAliveApi(daemon.url, token);
        const started = performance.now();
        const last = texts[texts.length - 1];
        // The last text sent is among the last stored (sends ran in parallel); then the account reads `connected`
        // again only once the whole gap is stored and its position saved.
        for (;;) {
          const page = await api.get(`/v1/chats/${encodeURIComponent(chats[kind].id)}/messages`);
          if ((page.items as { text?: string }[]).some((m) => m.text === last)) break;
          if (performance.now() - started > 600_000) throw new Error(`${kind}: not caught up after 600 s`);
          await sleep(20);
        }
        await waitForStatus(api, accountID, "connected", started, 600_000, 20);
        const ms = performance.now() - started;
        const stored = await storedTexts(api, chats[kind].id);
        const verified = texts.every((t) => stored.includes(t)) && !stored.some((t) => t.startsWith("🔒"));
        catchUp.push({ room: kind, seedSeconds, ms, eventsPerSecond: options.messages / (ms / 1000), verified });
        log(
          `matrix-e2ee: catch-up ${kind} round ${round + 1}: ${Math.round(ms)} ms (seeded in ${seedSeconds.toFixed(1)} s)`,
        );
      }

    // 2. Send → bob's client.
    const samples = { plain: [] as number[], encrypted: [] as number[] };
    for (let i = 0; i < options.warmupSends + options.sends; i++)
      for (const kind of ["plain", "encrypted"] as const) {
        const text = `${kind} send ${i}`;
        const started = performance.now();
        await api.post(`/v1/chats/${encodeURIComponent(chats[kind].id)}/messages`, { text });
        await bob.waitFor(text, (s) => s.content.body === text, 30_000);
        if (i >= options.warmupSends) samples[kind].push(performance.now() - started);
      }
    api.close();
    const of = (kind: CatchUp["room"]) => catchUp.filter((c) => c.room === kind).map((c) => c.ms);
    return {
      command: options.command,
      cpus: os.cpus().length,
      loadBefore,
      loadAfter: os.loadavg(),
      messages: options.messages,
      catchUp,
      plainMedianMs: median(of("plain")),
      encryptedMedianMs: median(of("encrypted")),
      latency: { sends: options.sends, plain: percentiles(samples.plain), encrypted: percentiles(samples.encrypted) },
    };
  } finally {
    Object.assign(console, quiet);
    await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
    await daemon?.stop();
    daemon = undefined;
    await synapse?.close();
    synapse = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}

async function chatTitled(api: ReturnType<typeof keepAliveApi>, accountID: string, title: string) {
  const started = performance.now();
  for (;;) {
    const page = await api.get(`/v1/chats?accountIDs=${encodeURIComponent(accountID)}`);
    const chat = (page.items as { id: string; title: string }[]).find((c) => c.title === title);
    if (chat) return chat;
    if (performance.now() - started > 30_000) throw new Error(`no chat titled ${title} after 30 s`);
    await sleep(100);
  }
}

async function sendMany(peer: Peer, roomID: string, texts: string[], concurrency: number) {
  let next = 0;
  const lane = async () => {
    while (next < texts.length) await peer.text(roomID, texts[next++]);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}

export function formatE2ee(r: E2eeResult): string {
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
  const verdict = (x: number) => (x <= 3 ? "met" : "MISS");
  // Rounds are pairs (plain, then encrypted), each room as large as the other: compare within a pair.
  const pairs = r.catchUp.flatMap((c, i) => (c.room === "encrypted" && i > 0 ? [c.ms / r.catchUp[i - 1].ms] : []));
  const catchRatio = Math.max(...pairs);
  const p99Ratio = r.latency.encrypted.p99 / r.latency.plain.p99;
  const rows = r.catchUp.map((c, i) => [
    String(Math.floor(i / 2) + 1),
    c.room,
    `${Math.round(c.ms)} ms`,
    `${Math.round(c.eventsPerSecond)}/s`,
    `${c.seedSeconds.toFixed(1)} s`,
    c.verified ? "all" : "MISSING",
  ]);
  return [
    `Matrix end-to-end encryption (${r.command}; ${r.cpus} CPUs; load ${r.loadBefore.map((x) => x.toFixed(2)).join(" ")} → ${r.loadAfter.map((x) => x.toFixed(2)).join(" ")})`,
    "",
    `Catch-up of ${r.messages.toLocaleString("en")} messages sent while the daemon was down (ready → the last served):`,
    table(["round", "room", "catch-up", "rate", "seeding", "stored"], rows, [0, 2, 3, 4]),
    `encrypted / plain, round by round: ${pairs.map((x) => `${x.toFixed(2)}×`).join(", ")} (target ≤ 3×: ${verdict(catchRatio)})`,
    "",
    `Send → bob's client (matrix-js-sdk, Rust crypto), ${r.latency.sends} each, alternating:`,
    table(
      ["room", "p50", "p90", "p99", "max"],
      (["plain", "encrypted"] as const).map((k) => [
        k,
        ms(r.latency[k].p50),
        ms(r.latency[k].p90),
        ms(r.latency[k].p99),
        ms(r.latency[k].max),
      ]),
      [1, 2, 3, 4],
    ),
    `p99: ${ratio(r.latency.encrypted.p99, r.latency.plain.p99)} (target ≤ 3×: ${verdict(p99Ratio)}); p50: ${ratio(r.latency.encrypted.p50, r.latency.plain.p50)}`,
  ].join("\n");
}
