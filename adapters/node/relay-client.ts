import WebSocket from "ws";
import type { App } from "../../src/app.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import { markProxied } from "../../src/http/proxied.ts";
import {
  Credit,
  creditFrame,
  decodeFrame,
  encodeFrame,
  FrameType,
  HEARTBEAT_MS,
  HEARTBEAT_TIMEOUT_MS,
  incomingBody,
  jsonFrame,
  pumpBody,
  readCredit,
  readJson,
  readText,
  RELAY_PATH,
  RELAY_PROTOCOL,
  type Frame,
  type RequestHead,
  type ResponseHead,
  type WsClose,
} from "../../src/relay/protocol.ts";
import { tagPeer } from "./peer.ts";
import { eventSessions, type EventSession } from "./websocket.ts";

export interface RelayOptions {
  /** The relay Worker's URL (https://…); the daemon dials `wss://…/.inboxd/relay`. */
  url: string;
  /** INBOXD_RELAY_SECRET: the pairing secret the Worker holds too. Sent only in the dial-in's Authorization header. */
  secret: string;
  /** Status lines (connected, refused, reconnecting); never the secret. */
  log(line: string): void;
  /** Reconnect delays: from `minDelayMs`, doubling to `maxDelayMs` (defaults 500 ms and 30 s), with jitter. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

/** Where the failed authentications of a relayed request count when the Worker did not say who the client is. */
const UNNAMED_CLIENT = "client-behind-relay";

/** Headers that belong to one connection and are not passed on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"]);

interface HttpStream {
  kind: "http";
  body?: ReturnType<typeof incomingBody>;
  credit: Credit;
  /** Stops sending the response (the Worker reset the stream, or the tunnel dropped). */
  abort(reason: Error): void;
}
interface WsStream {
  kind: "ws";
  session?: EventSession;
  credit: Credit;
  abort(reason: Error): void;
}

/**
 * The daemon's side of the relay (issue: remote access, part 2): one outgoing WebSocket to the relay Worker, over which
 * the Worker hands over remote requests and /v1/ws sessions (src/relay/protocol.ts). Each is answered by this app, as
 * a request from the client the Worker names: the daemon stays the authority on tokens, scopes and limits. Dropped,
 * the connection is dialed again with backoff until `close()`.
 */
export function dialRelay(app: App, options: RelayOptions) {
  const sessions = eventSessions(app);
  const base = new URL(options.url);
  const target = new URL(RELAY_PATH, base);
  target.protocol = base.protocol === "https:" ? "wss:" : "ws:";
  const minDelay = options.minDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 30_000;
  let socket: WebSocket | undefined;
  let connected = false;
  let stopped = false;
  let failures = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let lastRefusal = "";
  let lastHeard = 0;
  const streams = new Map<number, HttpStream | WsStream>();
  const waiters = new Set<(up: boolean) => void>();

  const send = (frame: Uint8Array) => {
    if (socket?.readyState === WebSocket.OPEN) socket.send(frame);
    else throw new Error("the relay connection is down");
  };
  const reset = (id: number, message: string) => {
    streams.delete(id);
    try {
      send(jsonFrame(FrameType.RESET, id, { message }));
    } catch {
      // Nothing to tell: the connection is gone, and the Worker dropped the stream with it.
    }
  };

  const dial = () => {
    if (stopped) return;
    // No per-message compression: it cost the daemon several times the CPU of the request itself (npm run bench --
    // --only relay), for bytes that TLS and the link carry well enough.
    const ws = new WebSocket(target, RELAY_PROTOCOL, { headers: { authorization: `Bearer ${options.secret}` }, maxPayload: 1024 * 1024, perMessageDeflate: false });
    socket = ws;
    ws.binaryType = "nodebuffer";
    ws.on("unexpected-response", (_request, response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text = (text + chunk).slice(0, 500)));
      response.on("end", () => {
        const why =
          response.statusCode === 401 || response.statusCode === 403
            ? `the relay at ${base.origin} refused the pairing secret (${response.statusCode}): INBOXD_RELAY_SECRET must be the same here and in the Worker`
            : `the relay at ${base.origin} answered ${response.statusCode} ${text.replace(/\s+/g, " ").slice(0, 200)}`;
        if (why !== lastRefusal) options.log(why);
        lastRefusal = why;
        ws.terminate();
      });
    });
    ws.on("open", () => {
      connected = true;
      failures = 0;
      lastRefusal = "";
      options.log(`relay: connected to ${base.origin}; remote clients reach this daemon there`);
      lastHeard = Date.now();
      // The Worker answers each heartbeat: a link that went silent (a network cut, no FIN) is given up and dialed again.
      heartbeat = setInterval(() => {
        if (Date.now() - lastHeard > HEARTBEAT_TIMEOUT_MS) return void ws.terminate();
        if (ws.readyState === WebSocket.OPEN) ws.send(encodeFrame(FrameType.HEARTBEAT, 0));
      }, HEARTBEAT_MS);
      heartbeat.unref();
      for (const waiter of waiters) waiter(true);
      waiters.clear();
    });
    ws.on("message", (data: Buffer) => {
      lastHeard = Date.now();
      const frame = decodeFrame(data);
      if (frame) void handle(frame).catch(() => reset(frame.stream, "the daemon could not handle the frame"));
    });
    ws.on("error", () => undefined); // "close" follows, and says it
    ws.on("close", () => {
      clearInterval(heartbeat);
      const was = connected;
      connected = false;
      socket = undefined;
      const gone = new Error("the relay connection dropped");
      for (const stream of streams.values()) stream.abort(gone);
      streams.clear();
      if (stopped) return;
      const delay = Math.min(maxDelay, minDelay * 2 ** Math.min(failures++, 16)) * (0.75 + Math.random() / 2);
      if (was) options.log(`relay: connection to ${base.origin} lost; dialing again in ${Math.round(delay)} ms`);
      retry = setTimeout(dial, delay);
      retry.unref();
    });
  };

  async function handle(frame: Frame) {
    const stream = streams.get(frame.stream);
    switch (frame.type) {
      case FrameType.HTTP:
        return serveRequest(frame.stream, readJson<RequestHead>(frame));
      case FrameType.WS:
        return serveWebSocket(frame.stream, readJson<RequestHead>(frame));
      case FrameType.BODY:
        if (stream?.kind === "http") stream.body?.push(frame.payload);
        return;
      case FrameType.END:
        if (stream?.kind === "http") stream.body?.end();
        return;
      case FrameType.CREDIT:
        stream?.credit.grant(readCredit(frame));
        return;
      case FrameType.RESET:
        if (stream) {
          streams.delete(frame.stream);
          stream.abort(new Error(readJson<{ message: string }>(frame).message));
        }
        return;
      case FrameType.WS_TEXT:
        if (stream?.kind === "ws") stream.session?.received(readText(frame));
        return;
      case FrameType.WS_BINARY:
        if (stream?.kind === "ws") stream.session?.received(undefined);
        return;
      case FrameType.WS_CLOSE:
        if (stream?.kind === "ws") {
          streams.delete(frame.stream);
          stream.session?.closed();
        }
        return;
    }
  }

  /** A relayed request, as the client made it: its URL at the Worker, its headers, and its address. */
  function requestOf(head: RequestHead, init: RequestInit = {}): Request {
    const headers = new Headers();
    for (const [name, value] of head.headers) if (!HOP_BY_HOP.has(name.toLowerCase())) headers.append(name, value);
    return markProxied(tagPeer(new Request(head.url, { ...init, method: head.method, headers }), head.client ?? UNNAMED_CLIENT));
  }

  async function serveRequest(id: number, head: RequestHead) {
    const response = new AbortController();
    const stream: HttpStream = {
      kind: "http",
      credit: new Credit(),
      abort(reason) {
        stream.body?.fail(reason);
        stream.credit.cancel(reason);
        response.abort(reason);
      },
    };
    if (head.body)
      stream.body = incomingBody(
        (bytes) => streams.has(id) && send(creditFrame(id, bytes)),
        () => reset(id, "the daemon stopped reading the request body"),
      );
    streams.set(id, stream);
    let answer: Response;
    try {
      answer = await app.fetch(requestOf(head, stream.body ? ({ body: stream.body.stream, duplex: "half" } as RequestInit) : {}));
    } catch (error) {
      answer = toErrorResponse(error);
    }
    if (!streams.has(id)) return void answer.body?.cancel().catch(() => undefined);
    await respond(id, stream, answer, response.signal);
  }

  async function serveWebSocket(id: number, head: RequestHead) {
    const stream: WsStream = { kind: "ws", credit: new Credit(), abort: () => stream.session?.closed() };
    streams.set(id, stream);
    const verdict = await app.checkUpgrade(requestOf(head));
    if (!streams.has(id)) return;
    if (!verdict.ok) return respond(id, stream, verdict.response, new AbortController().signal);
    send(jsonFrame(FrameType.RESPONSE, id, { status: 101, headers: verdict.protocol ? [["sec-websocket-protocol", verdict.protocol]] : [] } satisfies ResponseHead));
    stream.session = sessions.open({
      send: (text) => streams.has(id) && socket?.readyState === WebSocket.OPEN && socket.send(encodeFrame(FrameType.WS_TEXT, id, new TextEncoder().encode(text))),
      close(code, reason) {
        if (!streams.delete(id)) return;
        try {
          send(jsonFrame(FrameType.WS_CLOSE, id, { code, reason } satisfies WsClose));
        } catch {
          // The tunnel is down; the Worker closed the client's socket with it.
        }
      },
      // The tunnel's queue is what a slow remote client makes grow (the Worker forwards as it receives).
      get bufferedAmount() {
        return socket?.bufferedAmount ?? 0;
      },
      get open() {
        return streams.has(id) && connected;
      },
    });
  }

  async function respond(id: number, stream: HttpStream | WsStream, answer: Response, signal: AbortSignal) {
    // Iteration yields each Set-Cookie on its own (the Fetch standard never joins them).
    const headers: [string, string][] = [];
    answer.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) headers.push([name, value]);
    });
    try {
      send(jsonFrame(FrameType.RESPONSE, id, { status: answer.status, headers } satisfies ResponseHead));
      if (!answer.body) send(encodeFrame(FrameType.END, id));
      else {
        signal.addEventListener("abort", () => void answer.body?.cancel(signal.reason).catch(() => undefined), { once: true });
        await pumpBody(answer.body, id, stream.credit, send);
      }
    } catch {
      // Reset by the Worker, or the tunnel dropped: the body was cancelled.
    } finally {
      if (stream.kind === "http") streams.delete(id);
    }
  }

  dial();
  return {
    /** Whether the relay connection is up. */
    get connected() {
      return connected;
    },
    /** Resolves once connected (at once if it is). */
    whenConnected(): Promise<void> {
      return connected ? Promise.resolve() : new Promise((resolve) => waiters.add(() => resolve()));
    },
    async close() {
      stopped = true;
      clearTimeout(retry);
      clearInterval(heartbeat);
      sessions.close(1001, "server shutting down");
      const ws = socket;
      if (!ws) return;
      await new Promise<void>((resolve) => {
        ws.once("close", () => resolve());
        ws.close(1001, "daemon stopping");
        setTimeout(() => (ws.terminate(), resolve()), 2_000).unref();
      });
    },
  };
}
