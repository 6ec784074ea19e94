import WebSocket from "ws";
import type { App } from "../../src/app.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import { markProxied } from "../../src/http/proxied.ts";
import * as relay from "../../src/relay/protocol.ts";
import { FrameType, type Frame, type RequestHead, type ResponseHead, type WsClose } from "../../src/relay/protocol.ts";
import { tagPeer } from "./peer.ts";
import { eventSessions, type EventSession, type EventSocket } from "./websocket.ts";

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

/** Headers that belong to one connection and are not passed on (RFC 9110 §7.6.1), and the proxy's own credentials. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
]);

/** The largest frame the Worker takes (workerd refuses WebSocket messages over 1 MiB). */
const MAX_FRAME = 1024 * 1024;

interface HttpStream {
  kind: "http";
  body?: ReturnType<typeof relay.incomingBody>;
  /** The request body has all come (END), or there is none; and the answer has all gone. Forgotten when both. */
  requestDone: boolean;
  responseDone: boolean;
  credit: relay.Credit;
  /** Stops the answer (the Worker reset the stream, or the connection dropped). */
  stop: AbortController;
}
interface WsStream {
  kind: "ws";
  session?: EventSession;
  /** Bytes of this session's events sent and not yet passed on by the Worker (its CREDIT frames): its backlog. */
  outstanding: number;
  stop: AbortController;
}
type Stream = HttpStream | WsStream;

/**
 * One connection to the relay, and the streams it carries. Streams belong to their connection: after a redial the
 * Worker numbers streams afresh, so an answer still on its way from the old connection must never go out on the new
 * one under an ID that now means another client's request.
 */
class Link {
  readonly streams = new Map<number, Stream>();
  constructor(readonly ws: WebSocket) {}

  get open() {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Sends a frame of `stream` if that stream is still this one on this connection; false (nothing sent) otherwise. */
  sendFor(id: number, stream: Stream, frame: Uint8Array): boolean {
    if (this.streams.get(id) !== stream || !this.open) return false;
    this.ws.send(frame);
    return true;
  }

  /** Like sendFor, for pumpBody: throws when the stream is gone, which ends the pump. */
  sender(id: number, stream: Stream) {
    return (frame: Uint8Array) => {
      if (!this.sendFor(id, stream, frame)) throw new Error("the stream is gone");
    };
  }

  /** Forgets a stream (if it is still this one) and stops its answer. */
  end(id: number, stream: Stream, reason: Error, tell?: string) {
    if (this.streams.get(id) !== stream) return;
    this.streams.delete(id);
    stream.stop.abort(reason);
    if (stream.kind === "http") stream.body?.fail(reason);
    else stream.session?.closed();
    if (tell && this.open) this.ws.send(relay.jsonFrame(FrameType.RESET, id, { message: tell }));
  }
}

/**
 * The daemon's side of the relay (issue: remote access, part 2): one outgoing WebSocket to the relay Worker, over which
 * the Worker hands over remote requests and /v1/ws sessions (src/relay/protocol.ts). Each is answered by this app, as
 * a request from the client the Worker names: the daemon stays the authority on tokens, scopes and limits. Dropped,
 * the connection is dialed again with backoff until `close()`; replaced by another daemon with the same secret, this
 * one says so and stops dialing.
 */
export function dialRelay(app: App, options: RelayOptions) {
  const sessions = eventSessions(app);
  const base = new URL(options.url);
  const target = new URL(relay.RELAY_PATH, base);
  target.protocol = base.protocol === "https:" ? "wss:" : "ws:";
  const minDelay = options.minDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 30_000;
  let link: Link | undefined;
  let stopped = false;
  let failures = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let lastRefusal = "";
  const waiters = new Set<{ resolve: () => void; reject: (error: Error) => void }>();

  const dial = () => {
    if (stopped) return;
    // No per-message compression: it cost the daemon several times the CPU of the request itself (npm run bench --
    // --only relay), for bytes that TLS and the link carry well enough.
    const ws = new WebSocket(target, relay.RELAY_PROTOCOL, {
      headers: { authorization: `Bearer ${options.secret}` },
      maxPayload: MAX_FRAME,
      perMessageDeflate: false,
    });
    const here = new Link(ws);
    let connected = false;
    let lastHeard = Date.now();
    let heartbeat: ReturnType<typeof setInterval> | undefined;
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
      link = here;
      failures = 0;
      lastRefusal = "";
      options.log(`relay: connected to ${base.origin}; remote clients reach this daemon there`);
      // The Worker answers each heartbeat: a link that went silent (a network cut, no FIN) is given up and dialed again.
      heartbeat = setInterval(() => {
        if (Date.now() - lastHeard > relay.HEARTBEAT_TIMEOUT_MS) return void ws.terminate();
        if (here.open) ws.send(relay.encodeFrame(FrameType.HEARTBEAT, 0));
      }, relay.HEARTBEAT_MS);
      heartbeat.unref();
      for (const waiter of waiters) waiter.resolve();
      waiters.clear();
    });
    ws.on("message", (data: Buffer) => {
      lastHeard = Date.now();
      const frame = relay.decodeFrame(data);
      if (frame) void handle(here, frame).catch(() => undefined);
    });
    ws.on("error", () => undefined); // "close" follows, and says it
    ws.on("close", (code: number) => {
      clearInterval(heartbeat);
      if (link === here) link = undefined;
      const gone = new Error("the relay connection dropped");
      for (const [id, stream] of here.streams) here.end(id, stream, gone);
      if (stopped) return;
      if (code === relay.CLOSE_REPLACED) {
        // Two daemons with one secret would take the relay from each other forever: the older one gives way.
        options.log(
          `relay: another daemon with this pairing secret took over ${base.origin}; this one stops dialing (restart it to take the relay back)`,
        );
        stopped = true;
        return;
      }
      const delay = Math.min(maxDelay, minDelay * 2 ** Math.min(failures++, 16)) * (0.75 + Math.random() / 2);
      if (connected) options.log(`relay: connection to ${base.origin} lost; dialing again in ${Math.round(delay)} ms`);
      retry = setTimeout(dial, delay);
      retry.unref();
    });
  };

  async function handle(here: Link, frame: Frame) {
    const stream = here.streams.get(frame.stream);
    switch (frame.type) {
      case FrameType.HTTP:
        return serveRequest(here, frame.stream, relay.readJson<RequestHead>(frame));
      case FrameType.WS:
        return serveWebSocket(here, frame.stream, relay.readJson<RequestHead>(frame));
      case FrameType.BODY:
        if (stream?.kind === "http") stream.body?.push(frame.payload);
        return;
      case FrameType.END:
        if (stream?.kind === "http") {
          stream.body?.end();
          stream.requestDone = true;
          // An answer that went out before the body was read (a refusal) waited for this, crediting what came.
          if (stream.responseDone) here.streams.delete(frame.stream);
        }
        return;
      case FrameType.CREDIT:
        if (stream?.kind === "http") stream.credit.grant(relay.readCredit(frame));
        else if (stream?.kind === "ws") stream.outstanding = Math.max(0, stream.outstanding - relay.readCredit(frame));
        return;
      case FrameType.RESET:
        if (stream) here.end(frame.stream, stream, new Error(relay.readJson<{ message: string }>(frame).message));
        return;
      case FrameType.WS_TEXT:
        if (stream?.kind === "ws") stream.session?.received(relay.readText(frame));
        return;
      case FrameType.WS_BINARY:
        if (stream?.kind === "ws") stream.session?.received(undefined);
        return;
      case FrameType.WS_CLOSE:
        if (stream) here.end(frame.stream, stream, new Error("the client closed the session"));
        return;
    }
  }

  /** A relayed request, as the client made it: its URL at the Worker, its headers, and its address. */
  function requestOf(head: RequestHead, init: RequestInit = {}): Request {
    const headers = new Headers();
    // Connection may name more hop-by-hop headers.
    const named = new Set(
      head.headers
        .filter(([name]) => name.toLowerCase() === "connection")
        .flatMap(([, value]) => value.split(","))
        .map((name) => name.trim().toLowerCase()),
    );
    for (const [name, value] of head.headers)
      if (!HOP_BY_HOP.has(name.toLowerCase()) && !named.has(name.toLowerCase())) headers.append(name, value);
    return markProxied(
      tagPeer(new Request(head.url, { ...init, method: head.method, headers }), head.client ?? UNNAMED_CLIENT),
    );
  }

  async function serveRequest(here: Link, id: number, head: RequestHead) {
    const stream: HttpStream = {
      kind: "http",
      requestDone: !head.body,
      responseDone: false,
      credit: new relay.Credit(),
      stop: new AbortController(),
    };
    // A refusal answered without reading the body still goes out: the rest of the body is dropped as it comes.
    if (head.body)
      stream.body = relay.incomingBody((bytes) => void here.sendFor(id, stream, relay.creditFrame(id, bytes)));
    here.streams.set(id, stream);
    let answer: Response;
    try {
      answer = await app.fetch(
        requestOf(head, stream.body ? ({ body: stream.body.stream, duplex: "half" } as RequestInit) : {}),
      );
    } catch (error) {
      answer = toErrorResponse(error);
    }
    await respond(here, id, stream, answer);
  }

  async function serveWebSocket(here: Link, id: number, head: RequestHead) {
    const stream: WsStream = { kind: "ws", outstanding: 0, stop: new AbortController() };
    here.streams.set(id, stream);
    const verdict = await app.checkUpgrade(requestOf(head));
    if (!verdict.ok) return respond(here, id, stream, verdict.response);
    if (
      !here.sendFor(
        id,
        stream,
        relay.jsonFrame(FrameType.RESPONSE, id, {
          status: 101,
          headers: verdict.protocol ? [["sec-websocket-protocol", verdict.protocol]] : [],
        } satisfies ResponseHead),
      )
    )
      return;
    const encoder = new TextEncoder();
    const socket: EventSocket = {
      send(text) {
        const frame = relay.encodeFrame(FrameType.WS_TEXT, id, encoder.encode(text));
        if (frame.byteLength > MAX_FRAME) return socket.close(1009, "an event too large to relay");
        if (here.sendFor(id, stream, frame)) stream.outstanding += frame.byteLength - 5;
      },
      close(code, reason) {
        here.sendFor(id, stream, relay.jsonFrame(FrameType.WS_CLOSE, id, { code, reason } satisfies WsClose));
        here.end(id, stream, new Error(reason));
      },
      // This session's own backlog, as the Worker reports passing its events on (not the whole connection's queue).
      get bufferedAmount() {
        return stream.outstanding;
      },
      get open() {
        return here.streams.get(id) === stream && here.open;
      },
    };
    stream.session = sessions.open(socket);
  }

  async function respond(here: Link, id: number, stream: Stream, answer: Response) {
    // Iteration yields each Set-Cookie on its own (the Fetch standard never joins them).
    const headers: [string, string][] = [];
    answer.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) headers.push([name, value]);
    });
    const send = here.sender(id, stream);
    try {
      send(relay.jsonFrame(FrameType.RESPONSE, id, { status: answer.status, headers } satisfies ResponseHead));
      if (!answer.body) send(relay.encodeFrame(FrameType.END, id));
      else
        await relay.pumpBody(
          answer.body,
          id,
          stream.kind === "http" ? stream.credit : new relay.Credit(),
          send,
          stream.stop.signal,
        );
    } catch {
      // Reset by the Worker, or the connection dropped: the body was cancelled.
      await answer.body?.cancel().catch(() => undefined);
    } finally {
      // Done with the stream, unless the request body is still coming (it is credited and dropped until its END); a
      // refused WebSocket is finished too (the Worker forgets it at END).
      if (stream.kind === "http") stream.responseDone = true;
      if (here.streams.get(id) === stream && (stream.kind === "ws" || stream.requestDone)) here.streams.delete(id);
    }
  }

  dial();
  return {
    /** Whether the relay connection is up. */
    get connected() {
      return link !== undefined;
    },
    /** Resolves once connected (at once if it is); rejects if the client is closed first. */
    whenConnected(): Promise<void> {
      return link ? Promise.resolve() : new Promise((resolve, reject) => waiters.add({ resolve, reject }));
    },
    async close() {
      stopped = true;
      clearTimeout(retry);
      for (const waiter of waiters) waiter.reject(new Error("the relay client was closed"));
      waiters.clear();
      sessions.close(1001, "server shutting down");
      const ws = link?.ws;
      if (!ws) return;
      await new Promise<void>((resolve) => {
        ws.once("close", () => resolve());
        ws.close(1001, "daemon stopping");
        setTimeout(() => (ws.terminate(), resolve()), 2_000).unref();
      });
    },
  };
}
