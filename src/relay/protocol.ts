/**
 * The relay's wire format: one WebSocket from the daemon to the Worker's relay object carries many requests at once.
 * Every message is one binary frame: a type byte, a 32-bit stream ID (big-endian), then the payload. Heads are JSON;
 * bodies are raw bytes. Both ends are here so that they cannot drift apart: the Worker side in
 * adapters/workers/relay-object.ts, the daemon side in adapters/node/relay-client.ts.
 *
 * Streams. The Worker opens each one (`HTTP` for a request, `WS` for a /v1/ws session) with an ID it picks, unique
 * while the stream lives. Request bodies flow Worker → daemon, response bodies daemon → Worker, each
 * ended by `END` or cut by `RESET` (either side, with a reason). A `WS` stream is answered by a `RESPONSE` head:
 * 101 accepts it, then `WS_TEXT`/`WS_BINARY`/`WS_CLOSE` go either way; any other status refuses it (its body follows).
 *
 * Flow control. Body bytes are sent only against credit: each direction of each stream starts with INITIAL_CREDIT
 * bytes, and the receiver grants more (`CREDIT`) as its consumer takes what arrived. A slow remote client therefore
 * holds at most that much of a download in the Worker, and a slow daemon as much of an upload. WebSocket messages are
 * small and flow freely; the daemon closes a session whose events pile up, as it does for direct connections.
 */
export const FrameType = {
  /** Worker → daemon: a request head (RequestHead). */
  HTTP: 1,
  /** Worker → daemon: a /v1/ws upgrade (RequestHead); answered by RESPONSE. */
  WS: 2,
  /** Daemon → Worker: a response head (ResponseHead). */
  RESPONSE: 3,
  /** Body bytes (request: Worker → daemon; response: daemon → Worker). */
  BODY: 4,
  /** The body of this direction is complete. */
  END: 5,
  /** The stream is abandoned (ResetReason); the other side stops sending and frees it. */
  RESET: 6,
  /** More bytes may be sent on this stream (a 32-bit count). */
  CREDIT: 7,
  WS_TEXT: 8,
  WS_BINARY: 9,
  /** A WebSocket close (WsClose), either way. */
  WS_CLOSE: 10,
  /** Stream 0, daemon → Worker every HEARTBEAT_MS; the Worker answers with the same. */
  HEARTBEAT: 11,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

export interface RequestHead {
  method: string;
  /** The URL the client asked for (the Worker's public origin). */
  url: string;
  headers: [string, string][];
  /** The client's address as the Worker saw it (CF-Connecting-IP), for throttling failed authentication. */
  client?: string;
  /** Whether BODY frames follow (false: the request has no body, and no END comes either). */
  body: boolean;
}

export interface ResponseHead {
  status: number;
  headers: [string, string][];
}

export interface ResetReason {
  message: string;
}

export interface WsClose {
  code: number;
  reason: string;
}

export interface Frame {
  type: FrameType;
  stream: number;
  payload: Uint8Array;
}

/** Bytes of body each direction of a stream may have in flight before the receiver grants more. */
export const INITIAL_CREDIT = 256 * 1024;
/** The largest BODY payload sent at once (bigger chunks are split). */
export const MAX_CHUNK = 64 * 1024;
/** How often the daemon says it is there, and how long the Worker waits before it thinks the daemon gone. */
export const HEARTBEAT_MS = 10_000;
export const HEARTBEAT_TIMEOUT_MS = 35_000;
/** The close code the Worker gives a daemon's connection when another daemon with the same secret dials in. */
export const CLOSE_REPLACED = 4001;
/** Where the daemon dials in on the Worker, with `Authorization: Bearer <INBOXD_RELAY_SECRET>`. */
export const RELAY_PATH = "/.inboxd/relay";
/** The subprotocol both ends speak; a later incompatible format gets another name. */
export const RELAY_PROTOCOL = "inboxd-relay.v1";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeFrame(type: FrameType, stream: number, payload: Uint8Array = new Uint8Array()): Uint8Array {
  const frame = new Uint8Array(5 + payload.byteLength);
  frame[0] = type;
  new DataView(frame.buffer).setUint32(1, stream);
  frame.set(payload, 5);
  return frame;
}

export const jsonFrame = (type: FrameType, stream: number, value: unknown) =>
  encodeFrame(type, stream, encoder.encode(JSON.stringify(value)));

export function creditFrame(stream: number, bytes: number): Uint8Array {
  const payload = new Uint8Array(4);
  new DataView(payload.buffer).setUint32(0, bytes);
  return encodeFrame(FrameType.CREDIT, stream, payload);
}

/** Undefined for what is not a frame of this protocol (too short, or an unknown type). */
export function decodeFrame(data: ArrayBuffer | Uint8Array): Frame | undefined {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  if (bytes.byteLength < 5 || bytes[0] < FrameType.HTTP || bytes[0] > FrameType.HEARTBEAT) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { type: bytes[0] as FrameType, stream: view.getUint32(1), payload: bytes.subarray(5) };
}

export const readJson = <T>(frame: Frame): T => JSON.parse(decoder.decode(frame.payload)) as T;
export const readText = (frame: Frame) => decoder.decode(frame.payload);
export const readCredit = (frame: Frame) =>
  new DataView(frame.payload.buffer, frame.payload.byteOffset, 4).getUint32(0);

/**
 * Credit for one direction of one stream: `spend` waits until some is there and takes up to what was asked,
 * `grant` adds (the other side's CREDIT frames). `cancel` wakes a waiting sender with an error.
 */
export class Credit {
  private available: number;
  private waiter?: { resolve: () => void; reject: (error: Error) => void };
  private failure?: Error;

  constructor(initial = INITIAL_CREDIT) {
    this.available = initial;
  }

  async spend(wanted: number): Promise<number> {
    while (this.available <= 0) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve, reject) => (this.waiter = { resolve, reject }));
    }
    if (this.failure) throw this.failure;
    const taken = Math.min(wanted, this.available);
    this.available -= taken;
    return taken;
  }

  grant(bytes: number) {
    this.available += bytes;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve();
  }

  cancel(error: Error) {
    this.failure = error;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(error);
  }
}

/**
 * Sends a body as BODY frames against credit, then END; stops at the first error (the stream was reset, the
 * connection dropped) or when `signal` aborts, cancelling the source through its reader (a locked stream cannot be
 * cancelled any other way, and an event stream would otherwise run on until its next write).
 */
export async function pumpBody(
  body: ReadableStream<Uint8Array>,
  stream: number,
  credit: Credit,
  send: (frame: Uint8Array) => void,
  signal?: AbortSignal,
): Promise<void> {
  const reader = body.getReader();
  const stop = () => {
    credit.cancel(signal?.reason instanceof Error ? signal.reason : new Error("the stream was closed"));
    void reader.cancel(signal?.reason).catch(() => undefined);
  };
  if (signal?.aborted) stop();
  signal?.addEventListener("abort", stop, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (let offset = 0; offset < value.byteLength; ) {
        const n = await credit.spend(Math.min(MAX_CHUNK, value.byteLength - offset));
        send(encodeFrame(FrameType.BODY, stream, value.subarray(offset, offset + n)));
        offset += n;
      }
    }
    send(encodeFrame(FrameType.END, stream));
  } catch (error) {
    await reader.cancel(error).catch(() => undefined);
    throw error;
  } finally {
    signal?.removeEventListener("abort", stop);
  }
}

/**
 * The receiving end of a body: a ReadableStream fed by `push` (BODY payloads) and `end`, which grants credit back
 * (`grant`) as its consumer reads, so the sender never has more than INITIAL_CREDIT bytes unread here.
 *
 * A consumer that gives up (cancels: a refusal answered without reading the body) does not stop the sender: what
 * still arrives is dropped and credited at once, so the sender finishes and the answer goes out as usual. `onCancel`
 * is told, for a side that would rather reset the stream.
 */
export function incomingBody(grant: (bytes: number) => void, onCancel: (reason: unknown) => void = () => undefined) {
  const queue: Uint8Array[] = [];
  let ended = false;
  let discarding = false;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const stir = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        while (!queue.length && !ended && !failure) await new Promise<void>((resolve) => (wake = resolve));
        if (failure) return controller.error(failure);
        const chunk = queue.shift();
        if (chunk) {
          grant(chunk.byteLength);
          controller.enqueue(chunk);
        } else controller.close();
      },
      cancel(reason) {
        discarding = true;
        const unread = queue.splice(0).reduce((sum, chunk) => sum + chunk.byteLength, 0);
        if (unread) grant(unread);
        onCancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return {
    stream,
    push(bytes: Uint8Array) {
      if (failure) return;
      if (discarding) return grant(bytes.byteLength);
      // Copied: the frame's buffer belongs to the WebSocket message.
      queue.push(bytes.slice());
      stir();
    },
    end() {
      ended = true;
      stir();
    },
    fail(error: Error) {
      failure = error;
      queue.length = 0;
      stir();
    },
  };
}
