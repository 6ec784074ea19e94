/**
 * MCP for AI agents: /v0/mcp (Streamable HTTP, stateless) and /v0/sse (the older HTTP+SSE transport), over the same
 * services as REST. The app's router has checked the bearer token before these handlers run (401 with
 * WWW-Authenticate without one); a read-only token sees only the read-only tools.
 *
 * @example
 * mcpRoutes(api, events, { tools: "read-only" }, openApi);
 */
import * as v from "valibot";
import type { EventHub } from "../events/hub.ts";
import { ApiError } from "../errors.ts";
import { id } from "../schema/limits.ts";
import type { Api, RequestContext } from "../http/route-kit.ts";
import type { OpenApiDocument } from "../spec/openapi.ts";
import { DOCS } from "./docs/readme.generated.ts";
import { DocsIndex, docsSections, openApiSections } from "./docs/search.ts";
import { checkToolSelection, type McpOptions } from "./options.ts";
import type { ServerEnv } from "./server.ts";
import { SSE_DEPRECATION, SSE_MESSAGES_PATH, SseSessions } from "./sse.ts";
import { StreamableMcp } from "./streamable.ts";

export { parseToolSelection, type McpOptions, type ToolSelection } from "./options.ts";

// Not in the official 5.0.0 document (the desktop app serves them without describing them): marked as extensions.
const common = { tag: "MCP", scope: "read" as const, extension: true };
const stream = { "text/event-stream": null };

/** `openApi`: the served OpenAPI document (GET /v1/spec), which search_docs searches. */
export function mcpRoutes(api: Api, events: EventHub, options: McpOptions, openApi: () => OpenApiDocument): void {
  checkToolSelection(options.tools);
  let docs: DocsIndex | undefined;
  let env: Omit<ServerEnv, "signal"> | undefined;
  let sessions: SseSessions | undefined;
  let streamable: StreamableMcp | undefined;
  // The services' context arrives with the first request; everything built from it is built once.
  const envOf = (rc: RequestContext) =>
    (env ??= {
      app: rc.app,
      events,
      options,
      // Built on first use, when every route (this one included) is in api.operations.
      docs: () => (docs ??= new DocsIndex([...docsSections(DOCS), ...openApiSections(openApi())])),
    });
  const sessionsOf = (rc: RequestContext) => (sessions ??= new SseSessions(envOf(rc)));
  const streamableOf = (rc: RequestContext) => (streamable ??= new StreamableMcp(envOf(rc)));
  const stateless = () => {
    throw new ApiError(
      405,
      "METHOD_NOT_ALLOWED",
      "/v0/mcp is stateless: POST each JSON-RPC message (there is no event stream to GET and no session to DELETE)",
      undefined,
      { allow: "POST" },
    );
  };
  const notAllowed = {
    405: { description: "Stateless server: no standalone event stream, no sessions.", headers: { allow: "POST" } },
  };

  api
    .add(
      {
        method: "POST",
        path: "/v0/mcp",
        operationId: "mcp",
        summary: "MCP (Streamable HTTP)",
        ...common,
        description:
          "The Model Context Protocol over Streamable HTTP, both revisions on this one URL, chosen per request: a request whose `_meta` carries " +
          "the 2026-07-28 envelope (`io.modelcontextprotocol/protocolVersion`, `clientInfo`, `clientCapabilities`, with the `Mcp-Method` and " +
          "`Mcp-Name` headers) is served as 2026-07-28 (`server/discover`, `subscriptions/listen`, `resultType` and cache hints on results); " +
          "one without it (`initialize` first) as 2025-11-25, statelessly: no session ID is issued. POST a JSON-RPC message (or a 2025-11-25 " +
          "batch) with `Accept: application/json, text/event-stream`. Quick calls are answered with one JSON body; a call that waits " +
          "(wait_for_message) or asks for progress, as an event stream. Every tool reads the token's scopes: a read-only token sees only " +
          "read-only tools. Configure an MCP client with this URL and the header `Authorization: Bearer <token>`. GET and DELETE " +
          "answer 405: a stateless server offers no standalone event stream and has no sessions to end.",
        requestBody: {
          description: "A JSON-RPC 2.0 message or batch.",
          content: { "application/json": null },
          required: true,
        },
        responses: {
          200: {
            description: "The JSON-RPC responses: one JSON body, or server-sent events for calls that wait.",
            content: { "application/json": null, ...stream },
          },
          202: { description: "Only notifications or responses were sent: accepted." },
          400: { description: "Not JSON-RPC (a JSON-RPC error body).", content: { "application/json": null } },
          406: {
            description: "Accept lacks application/json or text/event-stream (a JSON-RPC error body).",
            content: { "application/json": null },
          },
          413: { description: "Body over 16 MiB (a JSON-RPC error body).", content: { "application/json": null } },
          415: {
            description: "Content-Type is not application/json (a JSON-RPC error body).",
            content: { "application/json": null },
          },
        },
      },
      ({ req, rc }) => streamableOf(rc).handle(req as unknown as Request, rc.principal!),
    )
    .add(
      {
        method: "GET",
        path: "/v0/mcp",
        operationId: "mcpStream",
        summary: "MCP event stream (not offered)",
        ...common,
        responses: notAllowed,
        description:
          "Answers 405: this stateless server offers no standalone event stream (MCP clients expect exactly that answer).",
      },
      stateless,
    )
    .add(
      {
        method: "DELETE",
        path: "/v0/mcp",
        operationId: "mcpEndSession",
        summary: "End an MCP session (none here)",
        ...common,
        responses: notAllowed,
        description: "Answers 405: a stateless server has no session to end.",
      },
      stateless,
    )
    .add(
      {
        method: "GET",
        path: "/v0/sse",
        operationId: "mcpSse",
        summary: "MCP (HTTP+SSE, older transport)",
        ...common,
        description:
          "The 2024-11-05 MCP transport, for clients that still use it: an event stream whose first `endpoint` event names the URL to POST " +
          `messages to (${SSE_MESSAGES_PATH}?sessionId=…); replies arrive on the stream. The session lives while the stream is open. ` +
          `Deprecated by the MCP revision of 2026-07-28 and served until ${SSE_DEPRECATION.sunset} (the \`Sunset\` header of every answer); ` +
          "use /v0/mcp, which serves 2025-11-25 and 2026-07-28 clients alike.",
        deprecated: true,
        responses: {
          200: { description: "The session's event stream: `endpoint`, then `message` events.", content: stream },
          503: {
            description: "Too many open sessions.",
            content: { "application/json": null },
            headers: { "retry-after": "Seconds to wait." },
          },
        },
      },
      ({ rc }) => sessionsOf(rc).open(rc.principal!),
    )
    .add(
      {
        method: "POST",
        path: SSE_MESSAGES_PATH,
        operationId: "mcpSseMessage",
        summary: "Post a message to an MCP SSE session",
        ...common,
        deprecated: true,
        query: v.object({ sessionId: v.pipe(id, v.description("From the stream's endpoint event.")) }),
        description:
          "One JSON-RPC message for the session; its reply goes out on the session's event stream. Only the token that opened the session may post to it.",
        requestBody: { description: "A JSON-RPC 2.0 message.", content: { "application/json": null }, required: true },
        responses: { 202: { description: "Accepted; the reply follows on the event stream." } },
      },
      ({ req, rc, query }) => sessionsOf(rc).post(req as unknown as Request, query.sessionId, rc.principal!),
    );
}
