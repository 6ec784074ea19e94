/**
 * /v0/mcp, Streamable HTTP, stateless: every POST gets a fresh server and transport, so nothing is kept between
 * requests (no session memory on the daemon or in the Durable Object) and each request is judged by its own token.
 *
 * Most calls are answered with one JSON body, which costs less than an event stream. A call that may take long
 * (wait_for_message) or asks for progress is answered as server-sent events instead: progress and keep-alives can
 * go out on it, and a client that goes away cancels what the call was waiting for.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { readRequestBody, requestBodyTooLargeMessage } from "@modelcontextprotocol/sdk/server/requestBody.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { Principal } from "../http/guard.ts";
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

export async function handleStreamable(
  request: Request,
  principal: Principal,
  env: Omit<ServerEnv, "signal">,
): Promise<Response> {
  const body = await readRequestBody(request, MCP_BODY_BYTES);
  if (body.tooLarge) return jsonRpcError(413, -32000, requestBodyTooLargeMessage(MCP_BODY_BYTES));
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.text);
  } catch {
    return jsonRpcError(400, -32700, "Parse error: Invalid JSON");
  }
  const gone = new AbortController();
  const stream = (Array.isArray(parsed) ? parsed : [parsed]).some(isLong);
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: !stream });
  const server = createMcpServer({ ...env, signal: gone.signal });
  await server.connect(transport);
  const response = await transport.handleRequest(request, { authInfo: authInfoOf(principal), parsedBody: parsed });
  return stream && response.body
    ? new Response(
        watched(response.body, () => gone.abort()),
        response,
      )
    : response;
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
