/**
 * /v0/mcp, Streamable HTTP, stateless: every POST gets a fresh server and transport, so nothing is kept between
 * requests (no session memory on the daemon or in the Durable Object) and each request is judged by its own token.
 * The answer streams as server-sent events: a long call (wait_for_message) can send progress on it, and a client
 * that goes away cancels what its call was waiting for.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { Principal } from "../http/guard.ts";
import { createMcpServer, type ServerEnv } from "./server.ts";
import { MCP_BODY_BYTES } from "./upload.ts";

/** What the transports hand the server: the scopes decide which tools a request sees. */
export const authInfoOf = (principal: Principal): AuthInfo => ({ token: "", clientId: principal.id, scopes: [...principal.scopes] });

export async function handleStreamable(request: Request, principal: Principal, env: Omit<ServerEnv, "signal">): Promise<Response> {
  const gone = new AbortController();
  const transport = new WebStandardStreamableHTTPServerTransport({ maxRequestBodySize: MCP_BODY_BYTES });
  const server = createMcpServer({ ...env, signal: gone.signal });
  await server.connect(transport);
  const response = await transport.handleRequest(request, { authInfo: authInfoOf(principal) });
  return response.body ? new Response(watched(response.body, () => gone.abort()), response) : response;
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
