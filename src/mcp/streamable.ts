/**
 * /v0/mcp, Streamable HTTP, for both protocol generations on one URL, chosen per request as the 2026-07-28
 * revision describes: a request that carries the per-request `_meta` envelope (protocol version, client info and
 * capabilities) is answered by the SDK's 2026-07-28 handler (`server/discover`, `subscriptions/listen`, the
 * Mcp-Method / Mcp-Name header checks, `resultType` and cache fields on results); one without it — `initialize` and
 * everything a 2025-11-25 client sends — by a stateless 2025 transport. Either way every POST gets a fresh server,
 * so nothing is kept between requests (no session memory on the daemon or in the Durable Object) and each request
 * is judged by its own token.
 *
 * The 2025 leg answers most calls with one JSON body, which costs less than an event stream; a call that may take
 * long (wait_for_message) or asks for progress is answered as server-sent events, where progress and keep-alives
 * can go out. On both legs a client that goes away cancels what its call was waiting for.
 */
import {
  createMcpHandler,
  InMemoryServerEventBus,
  isJsonContentType,
  isLegacyRequest,
  PROTOCOL_VERSION_META_KEY,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
  type McpHttpHandler,
} from "@modelcontextprotocol/server";
import { ApiError } from "../errors.ts";
import type { EventSink } from "../events/hub.ts";
import type { DomainEvent } from "../schema/events.ts";
import type { Principal } from "../http/guard.ts";
import { readCapped } from "../http/validate.ts";
import { chatResourceURI, UNREAD_URI } from "./resources.ts";
import { createMcpServer, type ServerEnv } from "./server.ts";
import { MCP_BODY_BYTES } from "./upload.ts";

/** What the transports hand the server: the scopes decide which tools a request sees. */
export const authInfoOf = (principal: Principal): AuthInfo => ({
  token: "",
  clientId: principal.id,
  scopes: [...principal.scopes],
});

/** Tools that wait: their calls are answered as an event stream. */
const LONG_TOOLS = new Set(["wait_for_message"]);

/** Answers /v0/mcp POSTs of both protocol generations, over one set of services. */
export class StreamableMcp {
  /** The 2026-07-28 leg: the SDK's handler, which builds a server per request. */
  private readonly modern: McpHttpHandler;
  /** Per request of that leg, what cancels its calls when the client goes away (handed to the server it builds). */
  private readonly gone = new WeakMap<Request, AbortSignal>();

  constructor(private readonly env: Omit<ServerEnv, "signal">) {
    const bus = new InMemoryServerEventBus();
    this.modern = createMcpHandler(
      (ctx) => createMcpServer({ ...env, signal: ctx.requestInfo && this.gone.get(ctx.requestInfo) }, "modern"),
      { legacy: "reject", maxRequestBodySize: MCP_BODY_BYTES, bus },
    );
    // What a 2026-07-28 client's subscriptions/listen stream hears: a message or chat change updates the unread
    // overview and that chat's messages; a chat's change may change the resource list (it names the newest chats).
    // Nothing is built while no stream is open. Only URIs go out; reading them takes the reader's own token.
    const sink: EventSink = {
      wants: () => bus.listenerCount > 0,
      deliver: (events: DomainEvent[]) => {
        const chats = new Set<string>();
        let chatsChanged = false;
        for (const event of events) {
          if (event.body.startsWith('"type":"message.')) chats.add(event.chatID);
          else if (event.body.startsWith('"type":"chat.')) {
            chats.add(event.chatID);
            chatsChanged = true;
          }
        }
        if (chats.size === 0) return;
        this.modern.notify.resourceUpdated(UNREAD_URI);
        for (const chatID of chats) this.modern.notify.resourceUpdated(chatResourceURI(chatID));
        if (chatsChanged) this.modern.notify.resourcesChanged();
      },
    };
    env.events.add(sink);
  }

  async handle(request: Request, principal: Principal): Promise<Response> {
    // Both revisions require a client to accept both answers (a JSON body, or an event stream for a call that waits).
    const accept = request.headers.get("accept") ?? "";
    if (!accept.includes("application/json") || !accept.includes("text/event-stream"))
      return jsonRpcError(406, -32000, "Not Acceptable: Accept must list both application/json and text/event-stream");
    if (!isJsonContentType(request.headers.get("content-type")))
      return jsonRpcError(415, -32000, "Unsupported Media Type: Content-Type must be application/json");
    let text: string;
    try {
      text = await readCapped(request, MCP_BODY_BYTES);
    } catch (error) {
      if (error instanceof ApiError && error.status === 413)
        return jsonRpcError(413, -32000, `Payload Too Large: the body is over ${MCP_BODY_BYTES} bytes`);
      throw error;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return jsonRpcError(400, -32700, "Parse error: Invalid JSON");
    }
    const gone = new AbortController();
    const authInfo = authInfoOf(principal);
    let response: Response;
    if (
      (eraOf(parsed, request.headers) ?? ((await isLegacyRequest(request, parsed)) ? "legacy" : "modern")) === "legacy"
    ) {
      const stream = (Array.isArray(parsed) ? parsed : [parsed]).some(isLong);
      const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: !stream });
      await createMcpServer({ ...this.env, signal: gone.signal }).connect(transport);
      response = await transport.handleRequest(request, { authInfo, parsedBody: parsed });
    } else {
      this.gone.set(request, gone.signal);
      response = await this.modern.fetch(request, { authInfo, parsedBody: parsed });
    }
    return response.body && response.headers.get("content-type")?.startsWith("text/event-stream")
      ? new Response(
          watched(response.body, () => gone.abort()),
          response,
        )
      : response;
  }
}

/**
 * The era of a plain JSON-RPC request that the SDK's classification would find without doubt, so that it runs only
 * once (inside the modern handler) or not at all: a request other than initialize that carries the envelope's
 * protocol version is 2026-07-28; one whose `_meta` has none of the envelope's keys, with no MCP-Protocol-Version
 * header or a 2025-or-earlier one, is 2025. Anything else — batches, notifications, initialize, mixed signals — is
 * left to isLegacyRequest, the SDK's own decision.
 */
function eraOf(parsed: unknown, headers: Headers): "legacy" | "modern" | undefined {
  const m = parsed as { id?: unknown; method?: unknown; params?: { _meta?: Record<string, unknown> } } | null;
  if (typeof m !== "object" || m === null || Array.isArray(m) || m.id === undefined || typeof m.method !== "string")
    return undefined;
  const meta = m.params?._meta;
  if (m.method !== "initialize" && meta && PROTOCOL_VERSION_META_KEY in meta) return "modern";
  const header = headers.get("mcp-protocol-version")?.trim();
  const envelopeKeys = meta && Object.keys(meta).some((key) => key.startsWith("io.modelcontextprotocol/"));
  if (!envelopeKeys && (header === undefined || /^202[45]-/.test(header))) return "legacy";
  return undefined;
}

function isLong(message: unknown): boolean {
  const m = message as { method?: unknown; params?: { name?: unknown; _meta?: { progressToken?: unknown } } } | null;
  if (typeof m !== "object" || m === null) return false;
  return (
    (m.method === "tools/call" && LONG_TOOLS.has(String(m.params?.name))) ||
    m.params?._meta?.progressToken !== undefined
  );
}

/** The transport's own error shape, for what is refused before it sees the request. */
function jsonRpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** The same bytes, with `onCancel` called when the reader cancels (the client disconnected). */
function watched(body: ReadableStream<Uint8Array>, onCancel: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      onCancel();
      await reader.cancel(reason);
    },
  });
}
