import {
  ServerResponse,
  STATUS_CODES,
  type IncomingMessage,
  type OutgoingHttpHeader,
  type OutgoingHttpHeaders,
  type Server,
} from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { ApiError, clip } from "../../src/errors.ts";
import { toErrorResponse } from "../../src/http/errors.ts";

/**
 * How the daemon reads request bodies and ends connections, so that a client always sees the answer and a
 * kept-alive connection never stalls:
 * - The app gets each body as a pull stream over Node's request (`bodyOf`). Cancelling it only stops the delivery:
 *   the request is never destroyed mid-body, which would make the kernel reset the connection and throw away the
 *   response the client has not read yet.
 * - A body must keep coming (BODY_TIMEOUTS): nothing for 15 s, or less than 8 KiB/s on average after its first
 *   10 s, fails the read with 408 (a body trickled byte by byte cannot hold a connection forever).
 * - When the app answers before the body is read to its end (an early 401, 413, 400…), `finishBody` drops the
 *   rest: a small remainder is read and dropped and the connection stays alive; a larger or unknown one gets
 *   `Connection: close`, and the daemon half-closes after the response, reading and dropping up to DRAIN_BYTES for
 *   up to DRAIN_MS (a lingering close) before it lets go of the socket.
 * - Malformed requests that never reach the app (headers or URL over 16 KB, bad syntax, header timeout, an
 *   unsupported `Expect`, CONNECT) get a JSON error the same way (`answerClientErrors`).
 * - Every status line carries its standard reason phrase (`HTTP/1.1 200 OK`, not `HTTP/1.1 200 `):
 *   `ReasonPhraseResponse` for what goes through Node's responses, `writeRawResponse` for what is written straight
 *   to a socket.
 */
/** A remainder up to this is read and dropped with the connection kept alive. */
const KEEP_ALIVE_DRAIN_BYTES = 1024 * 1024;
const DRAIN_BYTES = 64 * 1024 * 1024;
const DRAIN_MS = 5_000;
/** Node's own limit on the request line and headers together. */
export const MAX_HEADER_BYTES = 16 * 1024;
export const HEADERS_TIMEOUT_MS = 15_000;

export interface RequestBody {
  /** The body as a pull stream (what the app reads). */
  readonly stream: ReadableStream<Uint8Array>;
  /** The whole body, within the same limits: for a small body read before the app sees it (serve.ts). */
  readAll(): Promise<Buffer>;
  /** Whether the whole body has arrived. */
  complete(): boolean;
  /** Bytes of the body received so far (handed to the app or buffered). */
  received(): number;
}

const requestTimeout = (message: string) => new ApiError(408, "REQUEST_TIMEOUT", message);

export interface BodyTimeouts {
  /** Longest wait for the next bytes of a body. */
  idleMs: number;
  /** From the start of a body until its average rate is judged. */
  graceMs: number;
  minBytesPerSecond: number;
  /** Before the body: how long the request line and headers may take (default HEADERS_TIMEOUT_MS). */
  headersMs?: number;
}
export const BODY_TIMEOUTS: BodyTimeouts = { idleMs: 15_000, graceMs: 10_000, minBytesPerSecond: 8 * 1024 };

export function bodyOf(req: IncomingMessage, timeouts: BodyTimeouts = BODY_TIMEOUTS): RequestBody {
  const started = Date.now();
  let received = 0;
  /** Ends the wait in progress, if any (listeners off, timer cleared); its chunk resolves as undefined. */
  let stopPending: (() => void) | undefined;
  /** The body's next chunk (null at its end) within the timeouts; rejects when the body fails. */
  const next = () =>
    new Promise<Buffer | null | undefined>((resolve, reject) => {
      let idle: ReturnType<typeof setTimeout> | undefined;
      const stop = () => {
        clearTimeout(idle);
        req.off("readable", attempt).off("end", attempt).off("error", fail).off("close", closed);
        stopPending = undefined;
      };
      const done = (chunk: Buffer | null | undefined) => {
        stop();
        resolve(chunk);
      };
      const fail = (error: Error) => {
        stop();
        reject(error);
      };
      const closed = () => attempt() || fail(new Error("the client closed the connection before the body ended"));
      function attempt(): boolean {
        const chunk = req.read() as Buffer | null;
        if (chunk) {
          received += chunk.length;
          const elapsed = Date.now() - started;
          if (elapsed > timeouts.graceMs && received / (elapsed / 1000) < timeouts.minBytesPerSecond)
            fail(requestTimeout(`the request body arrived slower than ${timeouts.minBytesPerSecond} bytes/s`));
          else done(chunk);
          return true;
        }
        if (req.readableEnded) {
          done(null);
          return true;
        }
        if (req.destroyed) {
          // The client went away between two reads ('close' was missed while nobody listened).
          fail(req.errored ?? new Error("the client closed the connection before the body ended"));
          return true;
        }
        return false;
      }
      if (attempt()) return;
      idle = setTimeout(
        () => fail(requestTimeout(`no part of the request body arrived for ${timeouts.idleMs / 1000} s`)),
        timeouts.idleMs,
      );
      req.on("readable", attempt).on("end", attempt).once("error", fail).once("close", closed);
      stopPending = () => done(undefined);
    });
  let stream: ReadableStream<Uint8Array> | undefined;
  return {
    // Made on first use: a body read whole (readAll) never needs one.
    get stream() {
      return (stream ??= new ReadableStream<Uint8Array>(
        {
          pull: (controller) =>
            next().then(
              (chunk) => {
                if (chunk) controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
                else if (chunk === null) controller.close();
              },
              (error) => controller.error(error),
            ),
          // The app stopped reading (a refusal): stop waiting; the rest is dropped after its response (finishBody).
          cancel: () => stopPending?.(),
        },
        { highWaterMark: 0 },
      ));
    },
    async readAll() {
      const parts: Buffer[] = [];
      for (let chunk = await next(); chunk; chunk = await next()) parts.push(chunk);
      return Buffer.concat(parts);
    },
    complete: () => req.readableEnded || req.complete,
    received: () => received + req.readableLength,
  };
}

/**
 * Called with the app's response for a request whose body the app did not read to its end (`received` bytes of it
 * have arrived). Answers the response to send (with `Connection: close` when the rest is too large to drop on a
 * kept-alive connection) and drops the rest of the body once the response is written.
 */
export function finishBody(req: IncomingMessage, res: ServerResponse, received: number, response: Response): Response {
  const declared = Number(req.headers["content-length"] ?? NaN);
  const remaining = Number.isFinite(declared) ? declared - received : Infinity;
  // A client that asked for `Connection: close` (or spoke HTTP/1.0) gets it: its socket ends after this response.
  const keepAlive = remaining <= KEEP_ALIVE_DRAIN_BYTES && res.shouldKeepAlive;
  const socket = req.socket;
  if (!keepAlive) {
    // Node destroys a closing socket as soon as the response is flushed, which resets the connection while the
    // client is still sending; end it (half-close) instead and let the drain below finish it.
    socket.destroySoon = () => socket.end();
  }
  res.once("finish", () => drain(req, socket, keepAlive));
  if (keepAlive) return response;
  const headers = new Headers(response.headers);
  headers.set("connection", "close");
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

function drain(req: IncomingMessage, socket: Socket, keepAlive: boolean) {
  req.removeAllListeners("readable");
  if (req.readableEnded) {
    // Nothing left to drop; a kept-alive socket may already be serving the next request.
    if (!keepAlive) socket.end();
    return;
  }
  let dropped = 0;
  const giveUp = setTimeout(() => socket.destroy(), DRAIN_MS);
  giveUp.unref();
  socket.once("close", () => clearTimeout(giveUp));
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_BYTES) socket.destroy();
  });
  req.once("end", () => {
    clearTimeout(giveUp);
    // A kept-alive connection goes on with its next request; a closing one is already half-closed: give the
    // client a moment to close its side, then let go.
    if (!keepAlive) setTimeout(() => socket.destroy(), 1_000).unref();
  });
  req.resume();
}

const uncork = (response: ServerResponse) => response.uncork();

/** The standard reason phrase of a status code (node:http's STATUS_CODES). */
const reasonPhrase = (status: number) => STATUS_CODES[status] ?? "Unknown";

/**
 * The daemon's responses: srvx hands Node the Response's statusText as the reason phrase, and a Response made
 * without one has "", which Node would send as is (`HTTP/1.1 200 `); this puts the standard phrase there instead.
 */
export class ReasonPhraseResponse<Req extends IncomingMessage = IncomingMessage> extends ServerResponse<Req> {
  override writeHead(
    statusCode: number,
    reason?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    if (typeof reason !== "string") super.writeHead(statusCode, reason);
    else super.writeHead(statusCode, reason || reasonPhrase(statusCode), headers);
    // srvx sends a whole body as writeHead, write(body), end() in one go: corked until the next tick, the head, the
    // body and the end leave in one writev, as node:http's own res.end(body) sends them, instead of two or three
    // syscalls (on loopback each one also runs the receiver's side). Only a body of known length (writeHead has
    // just decided on chunked encoding or not): Node 22 and 24 hold a corked chunked response's writes in a buffer
    // of their own and answer false once it is full, and the 'drain' that should follow the uncork never comes
    // (Node issue 60432), so a streamed body (GET /v1/events) stalled for good after its first 16 KB.
    if (!this.chunkedEncoding) {
      this.cork();
      process.nextTick(uncork, this);
    }
    return this;
  }
}

/**
 * Writes a whole response straight to a socket that Node's HTTP layer does not (or no longer) answers on — a refused
 * WebSocket upgrade, a request Node's parser refused — with its reason phrase, and closes the socket after it.
 */
export async function writeRawResponse(socket: Duplex, response: Response): Promise<void> {
  const body = await response.text();
  const lines = [`HTTP/1.1 ${response.status} ${reasonPhrase(response.status)}`];
  response.headers.forEach((value, name) => lines.push(`${name}: ${value}`));
  lines.push(`content-length: ${Buffer.byteLength(body)}`, "connection: close", "", body);
  socket.end(lines.join("\r\n"));
}

/** What Node's parser refused, as the API's error (`{code, message}`, src/http/errors.ts). */
function clientErrorOf(error: NodeJS.ErrnoException, headersTimeoutMs: number): ApiError {
  if (error.code === "HPE_HEADER_OVERFLOW")
    return new ApiError(
      431,
      "HEADERS_TOO_LARGE",
      `the request line and headers are limited to ${MAX_HEADER_BYTES} bytes (URLs included)`,
    );
  if (error.code === "ERR_HTTP_REQUEST_TIMEOUT")
    return new ApiError(
      408,
      "REQUEST_TIMEOUT",
      `the request headers did not arrive within ${headersTimeoutMs / 1000} s`,
    );
  return new ApiError(400, "INVALID_REQUEST", "malformed HTTP request");
}

/**
 * Requests Node refuses or would answer itself before the app sees them get a JSON error like every other refusal:
 * headers or URL over MAX_HEADER_BYTES, malformed syntax and headers too slow (then a lingering close instead of
 * Node's immediate reset), an `Expect` other than 100-continue (417; Node's own answer has no body) and CONNECT
 * (405; Node would close the connection without a word).
 */
export function answerClientErrors(server: Server, headersTimeoutMs = HEADERS_TIMEOUT_MS): void {
  const answered = new WeakSet<Socket>();
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    if (answered.has(socket)) return; // the parser reports every later chunk of a broken connection again
    answered.add(socket);
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    void writeRawResponse(socket, toErrorResponse(clientErrorOf(error, headersTimeoutMs)));
    // Keep reading (Node's parser drops what it cannot parse) so the client's unsent bytes do not reset the
    // connection before it has read the answer.
    socket.resume();
    setTimeout(() => socket.destroy(), DRAIN_MS).unref();
  });
  server.on("checkExpectation", async (req: IncomingMessage, res: ServerResponse) => {
    const response = toErrorResponse(
      new ApiError(
        417,
        "EXPECTATION_FAILED",
        `Expect: ${clip(String(req.headers.expect))} is not supported (only 100-continue is)`,
      ),
    );
    res.shouldKeepAlive = false; // the request's body, if any, is not read
    res.writeHead(response.status, Object.fromEntries(response.headers)).end(await response.text());
  });
  server.on("connect", (_req: IncomingMessage, socket: Duplex) => {
    socket.on("error", () => socket.destroy());
    void writeRawResponse(
      socket,
      toErrorResponse(new ApiError(405, "METHOD_NOT_ALLOWED", "CONNECT is not supported: this server is not a proxy")),
    );
  });
}
