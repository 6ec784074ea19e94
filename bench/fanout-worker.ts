/**
 * The live-events generator process (see bench/fanout.ts for the jobs and results).
 *
 * fanout: opens N WebSocket clients on /v1/ws subscribed to "*", then sends messages over HTTP at a fixed rate (open
 * loop: each send starts at its scheduled time whether or not earlier ones were answered). For every send it keeps
 * the time its HTTP response arrived, and per client the time the first message.upserted event naming the send's
 * pendingMessageID arrived. Frames are not JSON-parsed: the type and the `ids` array are read from the raw bytes.
 * Both times are taken in this process's event loop, so its own lag is part of the figures (it is reported).
 *
 * idle-open / idle-close: holds N subscribed clients open (for the memory per idle connection).
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import WebSocket from "ws";
import { cpuSeconds } from "./daemon.ts";
import type { FanoutJob, FanoutResult, IdleJob, Stats } from "./fanout.ts";
import { segment } from "./workload.ts";

const CONNECT_WAVE = 50;
const CPU_SAMPLE_MS = 250;
const SUBSCRIBE_TIMEOUT_MS = 15_000;

/** Opens one client, waits for `ready`, subscribes to every chat and waits for `subscriptions.updated`. */
function connect(
  url: string,
  token: string,
  onFrame?: (data: Buffer, at: number) => void,
  onClose?: (code: number) => void,
): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const wsURL = `${url.replace(/^http/, "ws")}/v1/ws`;
    const ws = new WebSocket(wsURL, {
      headers: { authorization: `Bearer ${token}` },
      perMessageDeflate: false,
      skipUTF8Validation: true,
    });
    let state: "connecting" | "subscribing" | "subscribed" = "connecting";
    const fail = (error: Error) => {
      clearTimeout(timer);
      if (state !== "subscribed") reject(error);
      ws.terminate();
    };
    const timer = setTimeout(
      () => fail(new Error(`client not subscribed after ${SUBSCRIBE_TIMEOUT_MS} ms (state ${state})`)),
      SUBSCRIBE_TIMEOUT_MS,
    );
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d));
      res.on("end", () => fail(new Error(`GET /v1/ws answered ${res.statusCode}: ${body.slice(0, 300)}`)));
    });
    ws.on("error", (error) => fail(error));
    ws.on("close", (code) => {
      if (state !== "subscribed") fail(new Error(`closed with ${code} while ${state}`));
      else onClose?.(code);
    });
    ws.on("message", (data: Buffer) => {
      if (state === "subscribed") return onFrame?.(data, performance.now());
      const frame = JSON.parse(data.toString());
      if (state === "connecting" && frame.type === "ready") {
        state = "subscribing";
        ws.send(JSON.stringify({ type: "subscriptions.set", chatIDs: ["*"] }));
      } else if (state === "subscribing" && frame.type === "subscriptions.updated") {
        state = "subscribed";
        clearTimeout(timer);
        resolve(ws);
      } else fail(new Error(`unexpected frame while ${state}: ${data.toString().slice(0, 300)}`));
    });
  });
}

async function connectMany(count: number, open: (i: number) => Promise<WebSocket>): Promise<WebSocket[]> {
  const limit = openFileLimit();
  if (limit < count + 64)
    throw new Error(`open-file limit of the generator is ${limit}, too low for ${count} connections (raise ulimit -n)`);
  const sockets: WebSocket[] = [];
  try {
    for (let i = 0; i < count; i += CONNECT_WAVE) {
      const wave = await Promise.all(Array.from({ length: Math.min(CONNECT_WAVE, count - i) }, (_, k) => open(i + k)));
      sockets.push(...wave);
    }
  } catch (error) {
    await closeAll(sockets);
    throw error;
  }
  return sockets;
}

async function closeAll(sockets: WebSocket[]): Promise<void> {
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === WebSocket.CLOSED) return resolve();
          const timer = setTimeout(() => ws.terminate(), 2000);
          ws.once("close", () => {
            clearTimeout(timer);
            resolve();
          });
          ws.close(1000);
        }),
    ),
  );
}

function openFileLimit(): number {
  const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  return !line || line[1] === "unlimited" ? Infinity : Number(line[1]);
}

/**
 * One POST. A keep-alive socket that the server closed while idle fails with ECONNRESET when reused before the client
 * noticed; such a request never reached the server and is retried once on a new socket (as the Node docs advise).
 */
function post(
  agent: http.Agent,
  target: URL,
  token: string,
  path: string,
  body: string,
  retried = false,
): Promise<{ status: number; text: string; retried: boolean }> {
  return new Promise((resolve, reject) => {
    const headers = {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
    };
    const req = http.request(
      { host: target.hostname, port: target.port, method: "POST", path, agent, headers },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text, retried }));
        res.on("error", reject);
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (req.reusedSocket && error.code === "ECONNRESET" && !retried)
        resolve(post(agent, target, token, path, body, true));
      else reject(error);
    });
    req.end(body);
  });
}

/** CPU seconds (all cores) the machine has spent busy so far: user, nice, system, irq, softirq, steal (CLK_TCK = 100). */
function machineBusySeconds(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .slice(0, 200)
    .split("\n")[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}

/** Nearest-rank percentile of a sorted array. */
const percentile = (sorted: Float64Array, p: number) =>
  sorted.length ? sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] : NaN;

const TYPE_UPSERTED = Buffer.from('"type":"message.upserted"');
const IDS = Buffer.from('"ids":[');
const COMMA = 0x2c,
  BRACKET_CLOSE = 0x5d;

async function runFanout(job: FanoutJob): Promise<FanoutResult> {
  const target = new URL(job.url);
  const clients = job.clients;
  const interval = 1000 / job.rate;
  const warmupSends = Math.round(job.rate * job.warmupSeconds);
  const total = warmupSends + Math.round(job.rate * job.durationSeconds);

  // Per pendingMessageID: arrival time at each client of the first message.upserted naming it (NaN: not yet).
  const arrivals = new Map<string, Float64Array>();
  let windowStart = Infinity,
    windowEnd = Infinity,
    frames = 0,
    bytes = 0;
  const onFrame = (client: number, data: Buffer, at: number) => {
    if (at >= windowStart && at < windowEnd) {
      frames++;
      bytes += data.length;
    }
    // {"seq":N,"type":"message.upserted",...,"ids":["a","b"],"entries":[...]}
    const comma = data.indexOf(COMMA, 7);
    if (
      comma < 0 ||
      comma > 32 ||
      data.compare(TYPE_UPSERTED, 0, TYPE_UPSERTED.length, comma + 1, comma + 1 + TYPE_UPSERTED.length) !== 0
    )
      return;
    const from = data.indexOf(IDS, comma);
    if (from < 0) return;
    const to = data.indexOf(BRACKET_CLOSE, from);
    for (const quoted of data.toString("latin1", from + IDS.length, to).split(",")) {
      const id = quoted.slice(1, -1);
      let times = arrivals.get(id);
      if (!times) arrivals.set(id, (times = new Float64Array(clients).fill(NaN)));
      if (Number.isNaN(times[client])) times[client] = at;
    }
  };
  const closes: Record<string, number> = {};
  let closing = false;
  const connectStarted = performance.now();
  const sockets = await connectMany(clients, (i) =>
    connect(
      job.url,
      job.token,
      (data, at) => onFrame(i, data, at),
      (code) => {
        if (!closing) closes[code] = (closes[code] ?? 0) + 1;
      },
    ),
  );
  const connectMs = performance.now() - connectStarted;

  // fifo: every open socket keeps being used, so none sits idle long enough for the server to close it.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64, scheduling: "fifo" });
  const body = (n: number) => JSON.stringify({ text: `fan-out bench message ${n}: see you at the station tomorrow` });
  const started = new Float64Array(total),
    answered = new Float64Array(total).fill(NaN);
  const ids: (string | undefined)[] = new Array(total);
  let sendErrors = 0,
    retries = 0,
    firstSendError: string | undefined,
    maxLag = 0;
  const pending: Promise<void>[] = [];
  const issue = (n: number) => {
    const chatID = job.chatIDs[n % job.chatIDs.length];
    const path = `/v1/chats/${segment(chatID)}/messages`;
    started[n] = performance.now();
    pending.push(
      post(agent, target, job.token, path, body(n)).then(
        (res) => {
          answered[n] = performance.now();
          if (res.retried) retries++;
          if (res.status === 200) ids[n] = JSON.parse(res.text).pendingMessageID;
          else if (n >= warmupSends) {
            sendErrors++;
            firstSendError ??= `POST ${path} → ${res.status} ${res.text.slice(0, 300)}`;
          }
        },
        (error: Error) => {
          if (n < warmupSends) return;
          sendErrors++;
          firstSendError ??= `POST ${path} → ${error.message}`;
        },
      ),
    );
  };

  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  // CPU of the daemon and of this process per CPU_SAMPLE_MS during the window (at 100 ticks/s: ±4 % per sample).
  const cpuTimeline: FanoutResult["cpuTimeline"] = {
    intervalMs: CPU_SAMPLE_MS,
    server: [],
    generator: [],
    machine: [],
  };
  let sampler: ReturnType<typeof setInterval> | undefined;
  const startSampling = () => {
    let server = cpuSeconds(job.serverPid),
      own = process.cpuUsage(),
      machine = machineBusySeconds(),
      at = performance.now();
    sampler = setInterval(() => {
      const server2 = cpuSeconds(job.serverPid),
        own2 = process.cpuUsage(),
        machine2 = machineBusySeconds(),
        at2 = performance.now();
      const seconds = (at2 - at) / 1000;
      cpuTimeline.server.push(Math.round(((server2 - server) / seconds) * 100));
      cpuTimeline.generator.push(Math.round(((own2.user + own2.system - own.user - own.system) / 1e6 / seconds) * 100));
      cpuTimeline.machine.push(Math.round(((machine2 - machine) / seconds) * 100));
      [server, own, machine, at] = [server2, own2, machine2, at2];
    }, CPU_SAMPLE_MS);
  };
  let cpuAtStart = 0,
    cpuAtEnd = 0,
    machineAtStart = 0,
    machineAtEnd = 0;
  let ownAtStart = process.cpuUsage(),
    ownUsed = ownAtStart;
  const t0 = performance.now() + 20;
  const scheduled = (n: number) => t0 + n * interval;
  await new Promise<void>((done) => {
    let n = 0;
    const tick = () => {
      const now = performance.now();
      while (n < total && scheduled(n) <= now) {
        if (n === warmupSends) {
          windowStart = scheduled(n);
          cpuAtStart = cpuSeconds(job.serverPid);
          machineAtStart = machineBusySeconds();
          ownAtStart = process.cpuUsage();
          loopDelay.enable();
          startSampling();
        }
        if (n >= warmupSends) maxLag = Math.max(maxLag, now - scheduled(n));
        issue(n++);
      }
      if (n < total) return void setTimeout(tick, Math.max(0, scheduled(n) - performance.now()));
      // The window ends one interval after the last scheduled send.
      setTimeout(
        () => {
          windowEnd = performance.now();
          cpuAtEnd = cpuSeconds(job.serverPid);
          machineAtEnd = machineBusySeconds();
          ownUsed = process.cpuUsage(ownAtStart);
          loopDelay.disable();
          clearInterval(sampler);
          done();
        },
        Math.max(0, scheduled(total) - performance.now()),
      );
    };
    tick();
  });
  const windowSeconds = (windowEnd - windowStart) / 1000;
  await Promise.all(pending);
  agent.destroy();

  // Wait for events still on their way, up to drainSeconds.
  const measured: number[] = [];
  for (let n = warmupSends; n < total; n++) if (ids[n] !== undefined) measured.push(n);
  const missing = () => {
    let count = 0;
    for (const n of measured) {
      const times = arrivals.get(ids[n]!);
      if (!times) count += clients;
      else for (let c = 0; c < clients; c++) if (Number.isNaN(times[c])) count++;
    }
    return count;
  };
  const drainUntil = performance.now() + job.drainSeconds * 1000;
  while (missing() > 0 && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, 50));
  closing = true;
  await closeAll(sockets);

  const afterResponse = new Float64Array(measured.length * clients);
  const signed = new Float64Array(measured.length * clients);
  const afterRequest = new Float64Array(measured.length * clients);
  const spreads: number[] = [];
  const round = (x: number) => Math.round(x * 100) / 100;
  const timeline: FanoutResult["timeline"] = { start: [], http: [], firstEvent: [], lastEvent: [] };
  const sendLatencies = new Float64Array(measured.length);
  let received = 0,
    early = 0;
  measured.forEach((n, i) => {
    sendLatencies[i] = answered[n] - started[n];
    const times = arrivals.get(ids[n]!);
    timeline.start.push(round(started[n] - windowStart));
    timeline.http.push(round(answered[n] - started[n]));
    if (!times) {
      timeline.firstEvent.push(null);
      timeline.lastEvent.push(null);
      return;
    }
    let first = Infinity,
      last = -Infinity;
    for (let c = 0; c < clients; c++) {
      const at = times[c];
      if (Number.isNaN(at)) continue;
      const latency = at - answered[n];
      if (latency < 0) early++;
      signed[received] = latency;
      afterResponse[received] = Math.max(0, latency);
      afterRequest[received++] = at - started[n];
      first = Math.min(first, at);
      last = Math.max(last, at);
    }
    const complete = !times.some(Number.isNaN);
    if (complete) spreads.push(last - first);
    timeline.firstEvent.push(complete ? round(first - started[n]) : null);
    timeline.lastEvent.push(complete ? round(last - started[n]) : null);
  });
  const stats = (values: Float64Array): Stats => {
    const sorted = values.sort();
    return {
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      p99: percentile(sorted, 99),
      max: sorted.length ? sorted[sorted.length - 1] : NaN,
    };
  };
  const signedSorted = signed.subarray(0, received).sort();
  sendLatencies.sort();
  const expected = measured.length * clients;
  return {
    clients,
    targetRate: job.rate,
    seconds: windowSeconds,
    sends: measured.length,
    sendErrors,
    retries,
    firstSendError,
    sendsPerSecond: measured.length / windowSeconds,
    maxScheduleLagMs: maxLag,
    sendP50: percentile(sendLatencies, 50),
    sendP99: percentile(sendLatencies, 99),
    expected,
    received,
    lost: expected - received,
    afterResponse: stats(afterResponse.subarray(0, received)),
    signedP50: percentile(signedSorted, 50),
    earliestMs: received ? signedSorted[0] : NaN,
    early,
    afterRequest: stats(afterRequest.subarray(0, received)),
    spread: stats(Float64Array.from(spreads)),
    framesPerSecond: frames / windowSeconds,
    mbPerSecond: bytes / windowSeconds / 1e6,
    serverCpuPct: ((cpuAtEnd - cpuAtStart) / windowSeconds) * 100,
    generatorCpuPct: ((ownUsed.user + ownUsed.system) / 1e6 / windowSeconds) * 100,
    machineCpuPct: ((machineAtEnd - machineAtStart) / windowSeconds) * 100,
    cpus: os.cpus().length,
    saturatedSeconds: (cpuTimeline.machine.filter((pct) => pct >= os.cpus().length * 90).length * CPU_SAMPLE_MS) / 1000,
    generatorLoopDelayP99: loopDelay.percentile(99) / 1e6,
    generatorLoopDelayMax: loopDelay.max / 1e6,
    closes,
    connectMs,
    windowStartEpochMs: performance.timeOrigin + windowStart,
    timeline,
    cpuTimeline,
  };
}

let idle: WebSocket[] = [];

async function handle(message: { kind: string }): Promise<unknown> {
  switch (message.kind) {
    case "fanout":
      return runFanout(message as FanoutJob);
    case "idle-open": {
      const job = message as IdleJob;
      const started = performance.now();
      idle.push(...(await connectMany(job.count, () => connect(job.url, job.token))));
      return { opened: idle.length, connectMs: performance.now() - started };
    }
    case "idle-close": {
      const closed = idle.length;
      await closeAll(idle);
      idle = [];
      return { closed };
    }
    default:
      throw new Error(`unknown job ${message.kind}`);
  }
}

process.on("message", (message) => {
  handle(message as { kind: string }).then(
    (value) => process.send!({ ok: true, value }),
    (error: Error) => process.send!({ ok: false, error: error.stack ?? String(error) }),
  );
});
process.once("SIGTERM", () => process.exit(0));
process.once("disconnect", () => process.exit(0));
