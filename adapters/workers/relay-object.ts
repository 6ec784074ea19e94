import { DurableObject } from "cloudflare:workers";
import type { DurableObjectState } from "@cloudflare/workers-types/index.ts";
import { ApiError } from "../../src/errors.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import { LIMITS } from "../../src/schema/limits.ts";
import { parseRateLimit, RateLimiter } from "../../src/http/rate-limit.ts";
import * as relay from "../../src/relay/protocol.ts";
import { FrameType, type Frame, type RequestHead, type ResponseHead, type WsClose } from "../../src/relay/protocol.ts";
import { withFixedLength } from "./fixed-length.ts";

/** The vars and secrets of relay mode (see wrangler.toml). */
export interface RelayEnv {
  /** `relay`: this Worker forwards to a daemon that dials in, instead of being an inbox of its own. */
  INBOXD_MODE?: string;
  /** A secret: what the daemon must present to dial in (`inboxd serve --relay URL` with the same INBOXD_RELAY_SECRET). */
  INBOXD_RELAY_SECRET?: string;
  /** Requests per second per client address before forwarding (bursts of 4×; default 50), 0 or off for none. */
  INBOXD_RELAY_RATE_LIMIT?: string;
  /** The largest request body forwarded, in bytes (default 100 MiB, Cloudflare's own limit on most plans). */
  INBOXD_RELAY_MAX_BODY_BYTES?: string;
  /** "multi": many inboxes, each of which may front its person's daemon through a relay of its own. */
  INBOXD_TENANCY?: string;
}

/** The parts of workerd's WebSocket used here (its full type clashes with the DOM one in this tsconfig). */
interface AcceptedSocket {
  accept(): void;
  /** "blob" by default at this compatibility date (the standard's default); frames are read as ArrayBuffers. */
  binaryType: "blob" | "arraybuffer";
  send(data: string | ArrayBuffer | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message", listener: (event: { data: string | ArrayBuffer }) => void): void;
  addEventListener(type: "close" | "error", listener: (event: { code?: number; reason?: string }) => void): void;
}
declare const WebSocketPair: { new (): { 0: AcceptedSocket; 1: AcceptedSocket } };

/**
 * How long the daemon may take to answer once the request (its body included) has reached it: Cloudflare's own limit
 * on a response's head. Long polls (`GET /v1/events?wait=`, at most 60 s) fit.
 */
const HEAD_TIMEOUT_MS = 100_000;
/** How long an early answer waits for the rest of its request body to be read (see forwardHttp). */
const BODY_DRAIN_MS = 5_000;
/** Requests and sessions at once over one daemon connection; more are answered 503. */
const MAX_STREAMS = 1_000;
const DEFAULT_RELAY_RATE = { perSecond: 50, burst: 200 };
const DEFAULT_MAX_BODY = 100 * 1024 * 1024;

interface Pending {
  /** Settles the response head the client waits for. */
  head: { resolve(head: ResponseHead): void; reject(error: ApiError): void };
  /** Credit for the request body sent to the daemon. */
  credit: relay.Credit;
  /** The response body as it arrives. */
  body?: ReturnType<typeof relay.incomingBody>;
}
interface HttpStream extends Pending {
  kind: "http";
  /** The request body is still being sent: the stream stays (for the daemon's CREDIT) even once the answer is done. */
  sending: boolean;
  answered?: boolean;
}
interface WsStream extends Pending {
  kind: "ws";
  client?: AcceptedSocket;
}
type Stream = HttpStream | WsStream;

const offline = () =>
  new ApiError(
    503,
    "RELAY_OFFLINE",
    "the inboxd daemon behind this relay is not connected: start it with inboxd serve --relay <this URL> (it reconnects by itself after a restart)",
    undefined,
    { "retry-after": "5" },
  );

/**
 * Relay mode (issue: remote access, part 2): the Worker is a front door for a daemon that dials out to it, so the
 * daemon needs no open port and no third-party tunnel. The daemon holds one WebSocket to this object
 * (RELAY_PATH, authenticated by INBOXD_RELAY_SECRET); remote requests and /v1/ws sessions are forwarded over it
 * (src/relay/protocol.ts) and the answers streamed back. Tokens are the daemon's business: requests pass as they came,
 * and the daemon answers them. This object only rate-limits per client address, bounds bodies and messages, and
 * answers 503 at once while no daemon is connected.
 */
export class RelayObject extends DurableObject<RelayEnv> {
  private tunnel?: AcceptedSocket;
  private lastHeard = 0;
  private watchdog?: ReturnType<typeof setInterval>;
  private readonly streams = new Map<number, Stream>();
  /** Stream IDs start at a random point, so that a daemon never confuses a new connection's streams with an old one's. */
  private nextID = 1 + Math.floor(Math.random() * 0x3fffffff);
  private readonly limiter?: RateLimiter;
  /** Wrong pairing secrets, per address (30 a minute, as for tokens): guesses are slowed, and the log is not flooded. */
  private readonly dialIns = new RateLimiter();
  private readonly maxBody: number;

  constructor(state: DurableObjectState, env: RelayEnv) {
    super(state, env);
    const rate = parseRateLimit(env.INBOXD_RELAY_RATE_LIMIT);
    if (rate !== false) this.limiter = new RateLimiter(rate ?? DEFAULT_RELAY_RATE);
    const max = Number(env.INBOXD_RELAY_MAX_BODY_BYTES);
    this.maxBody = Number.isSafeInteger(max) && max > 0 ? max : DEFAULT_MAX_BODY;
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    try {
      if (url.pathname === relay.RELAY_PATH) return await this.dialIn(request);
      this.limiter?.spend(request.headers.get("cf-connecting-ip") ?? "unknown", "this address");
      if (!this.tunnel) throw offline();
      if (this.streams.size >= MAX_STREAMS)
        throw new ApiError(
          503,
          "RELAY_BUSY",
          `the relay already carries ${MAX_STREAMS} requests to the daemon; retry shortly`,
          undefined,
          { "retry-after": "1" },
        );
      if (request.headers.get("upgrade")?.toLowerCase() === "websocket") return await this.forwardWebSocket(request);
      return await this.forwardHttp(request);
    } catch (error) {
      return toErrorResponse(error);
    }
  }

  /** The daemon dials in: the secret is checked (and never logged), and a newer connection replaces an older one. */
  private async dialIn(request: Request): Promise<Response> {
    // Where there are many inboxes, only an inbox's object sends requests here (the Worker routes none to a relay),
    // and it has checked its own pairing secret (inbox-object.ts).
    const checked = this.env.INBOXD_TENANCY === "multi" && this.env.INBOXD_MODE !== "relay";
    const secret = this.env.INBOXD_RELAY_SECRET;
    if (!checked && !secret) {
      console.error(
        "inboxd relay: INBOXD_RELAY_SECRET is not set, so no daemon can dial in: set it with wrangler secret put INBOXD_RELAY_SECRET",
      );
      throw new ApiError(503, "RELAY_NOT_CONFIGURED", "this relay has no INBOXD_RELAY_SECRET");
    }
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket")
      throw new ApiError(
        426,
        "UPGRADE_REQUIRED",
        `${relay.RELAY_PATH} is where an inboxd daemon dials in over a WebSocket`,
      );
    const address = request.headers.get("cf-connecting-ip") ?? undefined;
    this.dialIns.checkAddress(address);
    const offered = /^Bearer\s+(\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
    if (!checked && !(await sameSecret(offered, secret ?? ""))) {
      this.dialIns.failed(address);
      console.warn(
        `inboxd relay: refused a daemon with a wrong pairing secret (from ${address ?? "an unknown address"})`,
      );
      throw new ApiError(
        401,
        "UNAUTHORIZED",
        "wrong relay pairing secret: INBOXD_RELAY_SECRET must be the same on the daemon and the Worker",
      );
    }
    const protocols = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
    if (!protocols.includes(relay.RELAY_PROTOCOL))
      throw new ApiError(
        400,
        "INVALID_REQUEST",
        `the daemon must speak ${relay.RELAY_PROTOCOL}: update it or the Worker so both are the same version`,
      );
    const pair = new WebSocketPair();
    const socket = pair[1];
    socket.binaryType = "arraybuffer";
    socket.accept();
    if (this.tunnel)
      this.drop(
        this.tunnel,
        "replaced by a newer connection from a daemon with the pairing secret",
        relay.CLOSE_REPLACED,
      );
    this.tunnel = socket;
    this.lastHeard = Date.now();
    socket.addEventListener("message", (event) => {
      if (this.tunnel !== socket) return;
      this.lastHeard = Date.now();
      if (typeof event.data === "string") return;
      const frame = relay.decodeFrame(event.data);
      if (frame) this.onFrame(frame);
    });
    const gone = () => this.tunnel === socket && this.drop(socket, "the daemon disconnected");
    socket.addEventListener("close", gone);
    socket.addEventListener("error", gone);
    // A daemon that vanished without closing (a network cut) is noticed by its missing heartbeats.
    clearInterval(this.watchdog);
    this.watchdog = setInterval(() => {
      if (this.tunnel && Date.now() - this.lastHeard > relay.HEARTBEAT_TIMEOUT_MS)
        this.drop(this.tunnel, "the daemon stopped answering");
    }, 5_000);
    return new Response(null, {
      status: 101,
      webSocket: pair[0],
      headers: { "sec-websocket-protocol": relay.RELAY_PROTOCOL },
    } as ResponseInit);
  }

  /**
   * Where there are many inboxes, called by the inbox this relay serves when its pairing secret changes or ends, or
   * the inbox is suspended or deleted: the daemon that dialed in with the old secret is let go at once.
   */
  async disconnect(): Promise<void> {
    if (this.tunnel) this.drop(this.tunnel, "the pairing secret was changed or withdrawn by the operator", 1008);
  }

  /** Ends the daemon connection and everything it carried: waiting heads 502, bodies cut, WebSocket sessions closed. */
  private drop(socket: AcceptedSocket, why: string, code = 1012) {
    if (this.tunnel === socket) {
      this.tunnel = undefined;
      clearInterval(this.watchdog);
    }
    try {
      socket.close(code, why);
    } catch {
      // Already closed.
    }
    const error = new ApiError(502, "RELAY_DISCONNECTED", `${why} while this request was on its way`);
    for (const id of [...this.streams.keys()]) this.finish(id, error);
  }

  private send(frame: Uint8Array) {
    if (!this.tunnel) throw offline();
    this.tunnel.send(frame);
  }

  /**
   * Forgets a stream and settles everything that waits on it: the head (with `error`), the request body's credit, the
   * response body, a WebSocket client. `tell`: also RESET it at the daemon, with that reason.
   */
  private finish(id: number, error: ApiError, tell?: string) {
    const stream = this.streams.get(id);
    if (!stream) return;
    this.streams.delete(id);
    stream.head.reject(error);
    stream.credit.cancel(error);
    stream.body?.fail(error);
    if (stream.kind === "ws") stream.client?.close(1012, "the inboxd daemon went away; reconnect");
    if (tell && this.tunnel) this.tunnel.send(relay.jsonFrame(FrameType.RESET, id, { message: tell }));
  }

  private onFrame(frame: Frame) {
    if (frame.type === FrameType.HEARTBEAT) return void this.tunnel?.send(relay.encodeFrame(FrameType.HEARTBEAT, 0));
    const id = frame.stream;
    const stream = this.streams.get(id);
    if (!stream) return;
    switch (frame.type) {
      case FrameType.RESPONSE: {
        const head = relay.readJson<ResponseHead>(frame);
        if (!(stream.kind === "ws" && head.status === 101))
          stream.body = relay.incomingBody(
            (bytes) => this.streams.get(id) === stream && this.send(relay.creditFrame(id, bytes)),
            () => this.finish(id, new ApiError(499, "CLIENT_GONE", "the client went away"), "the client went away"),
          );
        return stream.head.resolve(head);
      }
      case FrameType.BODY:
        return stream.body?.push(frame.payload);
      case FrameType.END:
        stream.body?.end();
        if (stream.kind === "http") {
          stream.answered = true;
          if (!stream.sending) this.streams.delete(id);
        } else if (!stream.client) this.streams.delete(id);
        return;
      case FrameType.CREDIT:
        return stream.credit.grant(relay.readCredit(frame));
      case FrameType.RESET:
        return this.finish(id, new ApiError(502, "RELAY_RESET", relay.readJson<{ message: string }>(frame).message));
      case FrameType.WS_TEXT:
        if (stream.kind === "ws" && stream.client) {
          stream.client.send(relay.readText(frame));
          // Passed on: the daemon counts this session's backlog down by as much (its slow-consumer limit).
          this.send(relay.creditFrame(id, frame.payload.byteLength));
        }
        return;
      case FrameType.WS_CLOSE: {
        this.streams.delete(id);
        const close = relay.readJson<WsClose>(frame);
        if (stream.kind === "ws") stream.client?.close(close.code, close.reason);
        return;
      }
    }
  }

  /** Opens a stream: sends its head, and answers the daemon's response head once `ready` (the body sent) and it came. */
  private open(
    type: typeof FrameType.HTTP | typeof FrameType.WS,
    request: Request,
    body: boolean,
  ): { id: number; stream: Stream; head: (ready?: Promise<unknown>) => Promise<ResponseHead> } {
    const id = this.nextID;
    this.nextID = this.nextID >= 0x7fffffff ? 1 : this.nextID + 1;
    let head!: Pending["head"];
    const answered = new Promise<ResponseHead>((resolve, reject) => (head = { resolve, reject }));
    answered.catch(() => undefined); // awaited below; a stream dropped before that must not be an unhandled rejection
    const stream: Stream =
      type === FrameType.HTTP
        ? { kind: "http", head, credit: new relay.Credit(), sending: body }
        : { kind: "ws", head, credit: new relay.Credit() };
    this.streams.set(id, stream);
    const headers: [string, string][] = [];
    request.headers.forEach((value, name) => headers.push([name, value]));
    try {
      this.send(
        relay.jsonFrame(type, id, {
          method: request.method,
          url: request.url,
          headers,
          client: request.headers.get("cf-connecting-ip") ?? undefined,
          body,
        } satisfies RequestHead),
      );
    } catch (error) {
      this.streams.delete(id);
      throw error;
    }
    return {
      id,
      stream,
      head: async (ready) => {
        // The clock starts once the daemon has the whole request (an upload may take long to arrive); an answer that
        // comes sooner (a refusal before the body is read) is taken at once.
        let timer: ReturnType<typeof setTimeout> | undefined;
        let settled = false;
        const timeout = Promise.resolve(ready).then(
          () =>
            new Promise<never>((_, reject) => {
              if (!settled)
                timer = setTimeout(
                  () =>
                    reject(
                      new ApiError(
                        504,
                        "RELAY_TIMEOUT",
                        `the daemon did not answer within ${HEAD_TIMEOUT_MS / 1000} s`,
                      ),
                    ),
                  HEAD_TIMEOUT_MS,
                );
            }),
        );
        try {
          return await Promise.race([answered, timeout]);
        } catch (error) {
          this.finish(
            id,
            error instanceof ApiError ? error : new ApiError(502, "RELAY_RESET", String(error)),
            "no answer in time",
          );
          throw error;
        } finally {
          settled = true;
          clearTimeout(timer);
        }
      },
    };
  }

  private async forwardHttp(request: Request): Promise<Response> {
    const declared = Number(request.headers.get("content-length") ?? "0");
    if (declared > this.maxBody) {
      // Read and dropped first (for up to BODY_DRAIN_MS), as for a body found too large on the way: workerd resets a
      // connection whose request body is left unread, and the client would see a write error instead of the 413.
      if (request.body) await drain(request.body.getReader());
      throw tooLarge(this.maxBody);
    }
    const hasBody = request.body !== null && request.method !== "GET" && request.method !== "HEAD";
    const { id, stream, head } = this.open(FrameType.HTTP, request, hasBody);
    const body = hasBody ? capped(request.body!, this.maxBody) : undefined;
    const sent = body
      ? relay
          .pumpBody(body.stream, id, stream.credit, (frame) => this.send(frame))
          .then(
            () => {
              // Sent whole; if the answer came first (a refusal), the stream was kept for the credit until now.
              (stream as HttpStream).sending = false;
              if ((stream as HttpStream).answered && this.streams.get(id) === stream) this.streams.delete(id);
            },
            async (error: unknown) => {
              const over = error instanceof BodyTooLarge;
              if (over) await body.drained;
              this.finish(
                id,
                over ? tooLarge(this.maxBody) : new ApiError(502, "RELAY_RESET", "the request body could not be sent"),
                over ? "the request body is over the relay's limit" : "the request body failed",
              );
            },
          )
      : undefined;
    const answer = await head(sent);
    // workerd resets a connection whose request body is left unread, and the client then sees a write error instead
    // of the answer: a refusal that came before the body was all sent waits for it (the daemon drops it as it comes),
    // for up to 5 s, as the daemon itself does for its own refusals.
    if (sent) await Promise.race([sent, new Promise((resolve) => setTimeout(resolve, BODY_DRAIN_MS))]);
    const noBody = answer.status === 204 || answer.status === 304 || request.method === "HEAD";
    return withFixedLength(
      new Response(noBody ? null : stream.body!.stream, { status: answer.status, headers: answer.headers }),
    );
  }

  private async forwardWebSocket(request: Request): Promise<Response> {
    const { id, stream, head } = this.open(FrameType.WS, request, false);
    const answer = await head();
    if (answer.status !== 101)
      return new Response(stream.body!.stream, { status: answer.status, headers: answer.headers });
    const pair = new WebSocketPair();
    const client = pair[1];
    client.binaryType = "arraybuffer";
    client.accept();
    (stream as WsStream).client = client;
    const toDaemon = (close: WsClose) => {
      if (this.streams.get(id) !== stream) return;
      this.streams.delete(id);
      if (this.tunnel) this.tunnel.send(relay.jsonFrame(FrameType.WS_CLOSE, id, close));
    };
    client.addEventListener("message", (event) => {
      if (this.streams.get(id) !== stream) return;
      const bytes = typeof event.data === "string" ? new TextEncoder().encode(event.data) : new Uint8Array(event.data);
      // The same limit as the daemon's own /v1/ws (and far under what the connection to the daemon carries).
      if (bytes.byteLength > LIMITS.webSocketMessageBytes) {
        client.close(1009, `messages are limited to ${LIMITS.webSocketMessageBytes} bytes`);
        return toDaemon({ code: 1009, reason: "message too big" });
      }
      try {
        this.send(
          relay.encodeFrame(typeof event.data === "string" ? FrameType.WS_TEXT : FrameType.WS_BINARY, id, bytes),
        );
      } catch {
        client.close(1012, "the inboxd daemon went away; reconnect");
      }
    });
    const closed = (event: { code?: number; reason?: string }) =>
      toDaemon({ code: event.code ?? 1005, reason: event.reason ?? "" });
    client.addEventListener("close", closed);
    client.addEventListener("error", closed);
    return new Response(null, {
      status: 101,
      webSocket: pair[0],
      headers: new Headers(answer.headers),
    } as ResponseInit);
  }
}

class BodyTooLarge extends Error {}

const tooLarge = (max: number) =>
  new ApiError(413, "PAYLOAD_TOO_LARGE", `the relay forwards request bodies of at most ${max} bytes`);

/**
 * The body, failing once it has given more than `max` bytes (a missing or false Content-Length). The rest is then
 * read and dropped for up to BODY_DRAIN_MS (`drained` says when), so the client reads the 413 instead of a reset.
 */
function capped(
  body: ReadableStream<Uint8Array>,
  max: number,
): { stream: ReadableStream<Uint8Array>; drained: Promise<void> } {
  const reader = body.getReader();
  let seen = 0;
  let drained: Promise<void> = Promise.resolve();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      seen += value.byteLength;
      if (seen <= max) return controller.enqueue(value);
      controller.error(new BodyTooLarge(`the request body is over the relay's limit of ${max} bytes`));
      drained = drain(reader);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return {
    stream,
    get drained() {
      return drained;
    },
  };
}

/** Reads and drops what is left of a request body, for up to BODY_DRAIN_MS; then gives up on it. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  const until = Date.now() + BODY_DRAIN_MS;
  try {
    while (Date.now() < until) if ((await reader.read()).done) return;
    await reader.cancel();
  } catch {
    // The client went away.
  }
}

/** Compares secrets by their SHA-256, so the time taken says nothing of where they differ. */
async function sameSecret(offered: string, secret: string): Promise<boolean> {
  const digest = async (text: string) =>
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const [a, b] = await Promise.all([digest(offered), digest(secret)]);
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}
