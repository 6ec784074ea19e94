/**
 * The crash scenario of the durable event log (issue 14), shared by the daemon (kill -9 of a child process) and the
 * Worker (a restart of workerd, Durable Object included): many WebSocket subscribers resuming with `since` and one
 * Server-Sent Events consumer resuming with `Last-Event-ID` take a steady stream of sends; the server dies in the
 * middle of it and comes back on the same storage; every consumer reconnects from the last eventID it saw. At the
 * end each one must hold exactly the log: every event once, in order, the same bytes, and every send that was
 * acknowledged must be in the log.
 *
 * Frames are not parsed whole (100 consumers × thousands of events): the eventID and seq are read from the frame's
 * first bytes, which the server writes as `{"seq":N,"type":"…","eventID":N,` (src/events/log.ts, protocol.ts), and
 * the rest is kept as a fingerprint to compare with the log's copy of the event.
 */
import { createHash } from "node:crypto";
import WebSocket from "ws";
import { expect } from "vitest";
import type { Chat } from "../../src/schema/wire.ts";
import { chatPath, sleep, waitFor } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { wsURL } from "./kit.ts";

/** A server the scenario can kill and bring back on the same storage. */
export interface CrashTarget {
  name: string;
  token: string;
  /** Where the server answers now (a restart may move it). */
  url(): string;
  /** Kills the server without warning and starts it again on the same storage; resolves once it listens again. */
  crash(): Promise<void>;
}

export interface CrashOptions {
  /** WebSocket subscribers (each `["*"]` with `since`); one SSE consumer comes on top. */
  subscribers: number;
  /** Offered load, open loop: sends start on schedule whether or not earlier ones have been answered (up to MAX_IN_FLIGHT). */
  sendsPerSecond: number;
  /** How long the load runs before the crash, and after the server is back. */
  beforeCrashMs: number;
  afterRestartMs: number;
  /** Quiet chats (no contact answers there) the sends are spread over. */
  chats: number;
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

/** A 48-bit fingerprint of an event's bytes after its opening brace (and `"seq":N,`, which the log does not keep). */
const fingerprint = (bytes: Uint8Array) => createHash("sha1").update(bytes).digest().readUIntBE(0, 6);

/** The start of an event frame: `{"seq":N,"type":"…"` and, for logged events, `,"eventID":N`. */
const FRAME_START = /^\{"seq":(\d+),"type":"([^"]+)"(?:,"eventID":(\d+))?/;

/** Reads seq, type and eventID from a frame's first bytes; undefined for frames that are not events. */
function frameHead(start: string): { seq: number; type: string; eventID?: number; bodyAt: number } | undefined {
  const match = FRAME_START.exec(start);
  if (!match) return undefined;
  return {
    seq: Number(match[1]),
    type: match[2]!,
    eventID: match[3] === undefined ? undefined : Number(match[3]),
    bodyAt: `{"seq":${match[1]},`.length,
  };
}

/**
 * One consumer: connects, resumes from the last eventID it recorded whenever its connection ends (crash, slow
 * consumer cut-off, a deliberate drop), and records every event it gets. Nothing here asserts: `problems` collects
 * what was wrong as it happened (a seq out of step, an event without eventID, an unexpected frame).
 */
abstract class Consumer {
  readonly ids: number[] = [];
  readonly prints: number[] = [];
  readonly problems: string[] = [];
  /** Close codes or errors that ended its connections. */
  readonly endings: string[] = [];
  /** Connections opened and set up (attempts while the server was away do not count). */
  connections = 0;
  /** True once the current connection is set up (subscribed / stream open). */
  live = false;
  last = 0;
  private stopped = false;
  private loop?: Promise<void>;

  constructor(
    readonly label: string,
    protected readonly target: CrashTarget,
  ) {}

  /** One connection, from opening to its end. */
  protected abstract session(): Promise<void>;
  /** Ends the current connection (the loop reconnects unless stopped). */
  abstract drop(): void;

  start() {
    this.loop = (async () => {
      let backoff = 25;
      while (!this.stopped) {
        this.live = false;
        try {
          await this.session();
        } catch (error) {
          this.endings.push((error as Error).name);
        }
        if (this.stopped) break;
        // Back off while the server is away; a connection that got going starts over quickly.
        backoff = this.live ? 25 : Math.min(backoff * 2, 400);
        await sleep(backoff * (0.5 + Math.random()));
      }
    })();
  }

  async stop() {
    this.stopped = true;
    this.drop();
    await this.loop;
  }

  /** The connection is set up: subscribed, or the stream is open. */
  protected connected() {
    if (this.live) return;
    this.live = true;
    this.connections++;
  }

  /** Records one event frame; `seq` is checked against the connection's own count. */
  protected event(frame: { seq: number; type: string; eventID?: number }, expectedSeq: number, body: Uint8Array) {
    if (frame.seq !== expectedSeq)
      this.problems.push(
        `${this.label}: seq ${frame.seq} where ${expectedSeq} was due (connection ${this.connections})`,
      );
    if (frame.eventID === undefined) {
      this.problems.push(`${this.label}: a ${frame.type} event without eventID`);
      return;
    }
    this.ids.push(frame.eventID);
    this.prints.push(fingerprint(body));
    this.last = Math.max(this.last, frame.eventID);
  }
}

/** A /v1/ws subscriber to every chat that resumes with `since`. */
class WsConsumer extends Consumer {
  private ws?: WebSocket;

  protected session(): Promise<void> {
    return new Promise((resolve) => {
      const ws = new WebSocket(wsURL(this.target.url()), {
        headers: { authorization: `Bearer ${this.target.token}` },
        perMessageDeflate: false,
      });
      this.ws = ws;
      let seq = 0;
      ws.on("message", (data: Buffer) => {
        const head = frameHead(data.toString("latin1", 0, Math.min(data.length, 120)));
        if (head) return this.event(head, seq++, data.subarray(head.bodyAt));
        const frame = JSON.parse(data.toString()) as { type: string };
        if (frame.type === "ready")
          ws.send(JSON.stringify({ type: "subscriptions.set", chatIDs: ["*"], since: this.last }));
        else if (frame.type === "subscriptions.updated") this.connected();
        else this.problems.push(`${this.label}: unexpected frame ${data.toString().slice(0, 200)}`);
      });
      ws.on("close", (code) => {
        this.endings.push(String(code));
        resolve();
      });
      ws.on("error", () => undefined);
    });
  }

  drop() {
    this.ws?.terminate();
  }
}

/** GET /v1/events as Server-Sent Events, resuming with Last-Event-ID. */
class SseConsumer extends Consumer {
  private controller?: AbortController;

  protected async session(): Promise<void> {
    const controller = new AbortController();
    this.controller = controller;
    const response = await openSse(this.target.url(), this.target.token, this.last, controller.signal);
    if (response.status !== 200 || !response.body) {
      this.endings.push(`HTTP ${response.status}`);
      await response.body?.cancel();
      return;
    }
    this.connected();
    const encoder = new TextEncoder();
    let seq = 0;
    await readSse(response.body, (data, id) => {
      const head = frameHead(data);
      if (!head) return void this.problems.push(`${this.label}: unexpected data ${data.slice(0, 200)}`);
      // The id: line is what an EventSource resumes from: it must be the event's eventID.
      if (id !== head.eventID) this.problems.push(`${this.label}: id: ${id} on the event with eventID ${head.eventID}`);
      this.event(head, seq++, encoder.encode(data.slice(head.bodyAt)));
    });
    this.endings.push("end of stream");
  }

  drop() {
    this.controller?.abort();
  }
}

/** GET /v1/events as Server-Sent Events, resuming after `lastEventID`. */
export const openSse = (url: string, token: string, lastEventID: number, signal?: AbortSignal) =>
  fetch(`${url}/v1/events`, {
    headers: { authorization: `Bearer ${token}`, accept: "text/event-stream", "last-event-id": String(lastEventID) },
    signal,
  });

/**
 * Reads a Server-Sent Events body, handing `each` every event's data line and its `id:` (comment and `retry:` lines
 * are skipped); resolves when the stream ends or once `each` answers true (which cancels the stream).
 */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  each: (data: string, id: number | undefined) => boolean | void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    const blocks = (buffer + decoder.decode(chunk, { stream: true })).split("\n\n");
    buffer = blocks.pop()!;
    for (const block of blocks) {
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data === undefined) continue;
      const id = /^id: (\d+)$/m.exec(block)?.[1];
      if (each(data, id === undefined ? undefined : Number(id))) return;
    }
  }
}

interface Ack {
  chatID: string;
  messageID: string;
  text: string;
  /** Answered before the crash began. */
  beforeCrash: boolean;
}

/**
 * At most this many sends wait for their answer: beyond it the schedule waits (and catches up when answers come), so a
 * server slower than the offered rate is kept saturated without a queue that grows for as long as the test runs.
 */
const MAX_IN_FLIGHT = 64;

/**
 * Sends on a fixed schedule (open loop: not waiting for earlier answers, up to MAX_IN_FLIGHT at once) over a few
 * chats; records which were acknowledged (2xx) and how the others ended.
 */
class Load {
  readonly acked: Ack[] = [];
  readonly failures = new Map<string, number>();
  crashing = false;
  private issued = 0;
  private inFlight = new Set<Promise<void>>();
  private timer?: ReturnType<typeof setInterval>;
  private startedAt = 0;
  stoppedAt = 0;

  constructor(
    private readonly target: CrashTarget,
    private readonly chats: Chat[],
    private readonly perSecond: number,
  ) {}

  start() {
    this.startedAt = performance.now();
    this.timer = setInterval(() => {
      const due = Math.floor(((performance.now() - this.startedAt) * this.perSecond) / 1000);
      while (this.issued < due && this.inFlight.size < MAX_IN_FLIGHT) this.send(this.issued++);
    }, 5);
  }

  get sent() {
    return this.issued;
  }

  get elapsedMs() {
    return (this.stoppedAt || performance.now()) - this.startedAt;
  }

  private send(n: number) {
    const chat = this.chats[n % this.chats.length]!;
    const text = `crash ${n}`;
    const done = (async () => {
      try {
        const response = await fetch(`${this.target.url()}${chatPath(chat.id)}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${this.target.token}`, "content-type": "application/json" },
          body: JSON.stringify({ text }),
          signal: AbortSignal.timeout(20_000),
        });
        const beforeCrash = !this.crashing;
        const body = await response.text();
        if (response.ok)
          this.acked.push({
            chatID: chat.id,
            messageID: (JSON.parse(body) as { pendingMessageID: string }).pendingMessageID,
            text,
            beforeCrash,
          });
        else this.count(`HTTP ${response.status}`);
      } catch (error) {
        const cause = (error as Error).cause as { code?: string; message?: string } | undefined;
        this.count(cause?.code ?? cause?.message ?? (error as Error).name);
      }
    })();
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
  }

  private count(what: string) {
    this.failures.set(what, (this.failures.get(what) ?? 0) + 1);
  }

  /** Stops starting sends and waits for those under way. */
  async stop() {
    clearInterval(this.timer);
    this.stoppedAt ||= performance.now();
    await Promise.all(this.inFlight);
  }
}

/** Every event the log holds, through the JSON pages. */
export async function readLog(api: Api) {
  const items: Record<string, any>[] = [];
  let after = 0;
  for (;;) {
    const page = await api.get(`/v1/events?after=${after}&limit=1000`);
    items.push(...page.items);
    after = page.nextAfter;
    if (!page.hasMore) return { items, oldest: page.oldestEventID as number, latest: page.latestEventID as number };
  }
}

/** Where one consumer's record differs from the log, in a line (undefined when it is the log exactly). */
function difference(consumer: Consumer, ids: number[], prints: number[]): string | undefined {
  const got = consumer.ids;
  const twice = got.length - new Set(got).size;
  for (let i = 0; i < Math.max(got.length, ids.length); i++) {
    if (got[i] === ids[i] && consumer.prints[i] === prints[i]) continue;
    const what =
      got[i] !== ids[i]
        ? `eventID ${got[i] ?? "nothing"} where the log has ${ids[i] ?? "nothing"}`
        : `other bytes than the log for eventID ${ids[i]}`;
    return `${consumer.label}: ${got.length} events for the log's ${ids.length} (${twice} twice); first difference at #${i}: ${what} (${consumer.connections} connections, ended by ${consumer.endings.join(",")})`;
  }
  return undefined;
}

/**
 * Runs the scenario against a started target and asserts it; prints a one-line summary and returns its figures.
 */
export async function crashScenario(target: CrashTarget, options: CrashOptions) {
  const began = performance.now();
  const api = () => new Api(target.url(), target.token);
  const accountID = (await api().get("/v1/accounts"))[0].accountID as string;
  const chats = await api().quietChats(accountID, options.chats);

  const consumers: Consumer[] = [
    ...Array.from({ length: options.subscribers }, (_, i) => new WsConsumer(`ws#${i}`, target)),
    new SseConsumer("sse", target),
  ];
  const load = new Load(target, chats, options.sendsPerSecond);
  let head = 0;
  let seenBeforeCrash = 0;
  let downMs = 0;
  try {
    for (const c of consumers) c.start();
    await waitFor("every consumer connected", () => consumers.every((c) => c.live), 30_000, 100);

    load.start();
    // Halfway to the crash, every tenth consumer (and the SSE one) drops its connection and resumes with its
    // cursor, as a flaky network would: a resume without a crash (or, when the loaded server is slow to take the
    // new connection, one across it).
    await sleep(options.beforeCrashMs / 2);
    for (const [i, c] of consumers.entries()) if (i % 10 === 5 || c instanceof SseConsumer) c.drop();
    await sleep(options.beforeCrashMs / 2);

    seenBeforeCrash = Math.min(...consumers.map((c) => c.ids.length));
    load.crashing = true;
    const crashedAt = performance.now();
    await target.crash();
    downMs = performance.now() - crashedAt;
    await sleep(options.afterRestartMs);
    await load.stop();

    // Caught up: every consumer has the head, and the head stays put (nothing was still being committed).
    await waitFor(
      "every consumer to reach the log's head",
      async () => {
        const now = (await api().get("/v1/events?limit=1")).latestEventID as number;
        const settled = now === head && consumers.every((c) => c.last >= head);
        head = now;
        return settled;
      },
      30_000,
      100,
    ).catch((error: Error) => {
      const behind = consumers.filter((c) => c.last < head).map((c) => `${c.label} at ${c.last}`);
      throw new Error(`${error.message} (head ${head}; behind: ${behind.slice(0, 10).join(", ")})`);
    });
  } finally {
    await load.stop();
    for (const c of consumers) await c.stop();
  }

  const log = await readLog(api());
  const ids = log.items.map((e) => e.eventID as number);
  const prints = log.items.map((e) => fingerprint(Buffer.from(JSON.stringify(e).slice(1))));

  // The log itself: from 1 to its head with no hole (a commit lost to the crash gives its IDs to the next one).
  expect(log.oldest).toBe(1);
  expect(log.latest).toBe(head);
  expect(ids).toEqual(range(1, head));

  // Every consumer: exactly the log, in order, each event once, with the same bytes; nothing odd on the way.
  expect(consumers.flatMap((c) => c.problems)).toEqual([]);
  expect(consumers.map((c) => difference(c, ids, prints)).filter(Boolean)).toEqual([]);
  // Each of them lived through the crash: a connection before it and one after.
  expect(seenBeforeCrash).toBeGreaterThan(0);
  expect(consumers.filter((c) => c.connections < 2).map((c) => c.label)).toEqual([]);

  // Acknowledged writes are not lost: each 2xx send is a message.upserted in the log, with the text sent.
  const logged = new Map<string, string>();
  for (const e of log.items)
    if (e.type === "message.upserted") for (const m of e.entries) logged.set(`${m.chatID} ${m.id}`, m.text);
  const lost = load.acked.filter((a) => logged.get(`${a.chatID} ${a.messageID}`) !== a.text);
  expect(lost).toEqual([]);
  const ackedBefore = load.acked.filter((a) => a.beforeCrash).length;
  expect(ackedBefore).toBeGreaterThan(0);
  expect(load.acked.length).toBeGreaterThan(ackedBefore);

  const ms = Math.round(performance.now() - began);
  const failures = [...load.failures].map(([what, n]) => `${n} ${what}`).join(", ") || "none";
  const reconnects = consumers.reduce((n, c) => n + c.connections - 1, 0);
  console.log(
    `[crash ${target.name}] ${head} events, each delivered exactly once in order to all ${consumers.length} consumers (${options.subscribers} WebSocket + 1 SSE); ` +
      `${load.acked.length}/${load.sent} sends acknowledged (${ackedBefore} before the crash), all in the log, others failed: ${failures}; ` +
      `offered ${options.sendsPerSecond}/s (at most ${MAX_IN_FLIGHT} in flight), acknowledged ${Math.round((load.acked.length * 1000) / load.elapsedMs)}/s; down ${Math.round(downMs)} ms; ` +
      `${reconnects} reconnections; ${ms} ms`,
  );
  return { events: head, consumers: consumers.length, acked: load.acked.length, ackedBeforeCrash: ackedBefore, ms };
}
