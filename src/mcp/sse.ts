/**
 * /v0/sse, the older HTTP+SSE transport: GET opens an event stream whose first event, `endpoint`, names where to
 * POST (with the session's ID); each POSTed JSON-RPC message is answered 202 and its reply goes out on the stream.
 * The SDK's own SSEServerTransport writes to a Node ServerResponse; this one is a web ReadableStream, so the same
 * code serves the daemon and the Durable Object (whose memory holds the sessions, like the daemon's).
 */
import {
  parseJSONRPCMessage,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type Server,
  type Transport,
} from "@modelcontextprotocol/server";
import { ApiError, badRequest, notFound } from "../errors.ts";
import type { Principal } from "../http/guard.ts";
import { readCapped } from "../http/validate.ts";
import { createMcpServer, type ServerEnv } from "./server.ts";
import { authInfoOf } from "./streamable.ts";
import { MCP_BODY_BYTES } from "./upload.ts";

/**
 * The HTTP+SSE transport is deprecated by the MCP revision of 2026-07-28, which gives it twelve months: every answer
 * of /v0/sse says so (`Deprecation`, RFC 9745; `Sunset`, RFC 8594) and names /v0/mcp, which serves both revisions.
 */
export const SSE_DEPRECATION = {
  deprecation: "@1785196800", // 2026-07-28
  sunset: "Wed, 28 Jul 2027 00:00:00 GMT",
  link: '</v0/mcp>; rel="successor-version"',
} as const;

/** Where a session's client POSTs its messages. */
export const SSE_MESSAGES_PATH = "/v0/sse/messages";
/** Open sessions a server keeps at most; one more is refused with 503 (each holds a server and a stream). */
export const MAX_SSE_SESSIONS = 200;
/**
 * A comment line this often keeps proxies from closing an idle stream, and finds clients that left: workerd tells a
 * Durable Object that its client is gone only when a write fails (the second one after the disconnect).
 */
export const SSE_KEEP_ALIVE_MS = 10_000;
/** Bytes queued for a client that does not read; beyond this the session is closed. */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;

const encoder = new TextEncoder();

export class WebSseTransport implements Transport {
  readonly sessionId = crypto.randomUUID();
  readonly response: Response;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private keepAlive?: ReturnType<typeof setInterval>;
  private closed = false;

  constructor(private readonly endpoint: string) {
    const stream = new ReadableStream<Uint8Array>(
      { start: (c) => void (this.controller = c), cancel: () => void this.close() },
      { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
    );
    this.response = new Response(stream, {
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
        ...SSE_DEPRECATION,
      },
    });
  }

  async start(): Promise<void> {
    this.write(`event: endpoint\ndata: ${this.endpoint}?sessionId=${this.sessionId}\n\n`);
    this.keepAlive = setInterval(() => this.write(": keep-alive\n\n"), SSE_KEEP_ALIVE_MS);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error("the SSE session is closed");
    this.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  /** A message POSTed for this session. */
  receive(message: JSONRPCMessage, extra: MessageExtraInfo): void {
    this.onmessage?.(message, extra);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    try {
      this.controller.close();
    } catch {
      // already closed or errored by the reader's side
    }
    this.onclose?.();
  }

  private write(text: string): void {
    if (this.closed) return;
    try {
      this.controller.enqueue(encoder.encode(text));
    } catch {
      void this.close();
      return;
    }
    if ((this.controller.desiredSize ?? 0) < -MAX_QUEUED_BYTES) void this.close();
  }
}

interface Session {
  transport: WebSseTransport;
  server: Server;
  /** The token that opened it: only that token may post to it. */
  principalID: string;
}

/** The open /v0/sse sessions of this process (or Durable Object). */
export class SseSessions {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly env: Omit<ServerEnv, "signal">) {}

  get size(): number {
    return this.sessions.size;
  }

  async open(principal: Principal): Promise<Response> {
    if (this.sessions.size >= MAX_SSE_SESSIONS)
      throw new ApiError(
        503,
        "TOO_MANY_SESSIONS",
        `at most ${MAX_SSE_SESSIONS} MCP SSE sessions are open; use /v0/mcp (Streamable HTTP), which keeps none`,
        undefined,
        { "retry-after": "5" },
      );
    const transport = new WebSseTransport(SSE_MESSAGES_PATH);
    const server = createMcpServer(this.env);
    transport.onclose = () => this.sessions.delete(transport.sessionId);
    this.sessions.set(transport.sessionId, { transport, server, principalID: principal.id });
    await server.connect(transport);
    return transport.response;
  }

  async post(request: Request, sessionId: string, principal: Principal): Promise<Response> {
    const session = this.sessions.get(sessionId);
    // Another token's session is answered like an unknown one: IDs are not disclosed.
    if (!session || session.principalID !== principal.id) throw notFound(`MCP session ${sessionId}`);
    const text = await readCapped(request, MCP_BODY_BYTES);
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(JSON.parse(text));
    } catch {
      throw badRequest("the body is not one JSON-RPC message", [
        { code: "invalid_json_rpc", message: "expected a JSON-RPC 2.0 message", path: ["body"] },
      ]);
    }
    session.transport.receive(message, {
      authInfo: authInfoOf(principal),
      request,
    });
    return new Response(null, { status: 202, headers: SSE_DEPRECATION });
  }
}
