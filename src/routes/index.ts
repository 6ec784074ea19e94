import type { EventHub } from "../events/hub.ts";
import type { Api } from "../http/route-kit.ts";
import { type McpOptions, mcpRoutes } from "../mcp/index.ts";
import { oauthRoutes } from "../oauth/index.ts";
import type { AssetConfig } from "../services/context.ts";
import { lazyDocument, specRoutes } from "../spec/routes.ts";
import type { Storage } from "unstorage";
import { v0Components, v0ErrorBodies, v0Routes } from "../v0/index.ts";
import { VERSION } from "../version.ts";
import { webRoutes } from "../web/index.ts";
import { accountRoutes } from "./accounts.ts";
import { appRoutes } from "./app.ts";
import { assetRoutes } from "./assets.ts";
import { bridgeRoutes } from "./bridges.ts";
import { chatRoutes } from "./chats.ts";
import { eventRoutes } from "./events.ts";
import { infoRoutes, type ServerInfo } from "./info.ts";
import { labelRoutes } from "./labels.ts";
import { messageRoutes } from "./messages.ts";
import { tokenRoutes } from "./tokens.ts";
import { typingRoutes } from "./typing.ts";
import { webhookRoutes } from "./webhooks.ts";
import type { FetchClientMetadata } from "../oauth/client-metadata.ts";
import type { Tenancy } from "../tenancy.ts";

export interface RouteDeps {
  info: ServerInfo;
  hub: EventHub;
  assets: AssetConfig;
  mcp: McpOptions;
  storage: Storage;
  now: () => number;
  accessTokenTtlMs?: number;
  fetchClientMetadata?: FetchClientMetadata;
  tenancy?: Tenancy;
}

/**
 * Every operation the server answers, in the order GET /v1/spec lists them: one file per resource under routes/,
 * then the other surfaces over the same services — /v0, MCP, the spec itself, OAuth, tokens, the web inbox.
 */
export function addRoutes(api: Api, deps: RouteDeps): void {
  infoRoutes(api, deps.info);
  accountRoutes(api);
  chatRoutes(api);
  messageRoutes(api);
  bridgeRoutes(api);
  webhookRoutes(api);
  assetRoutes(api, deps.assets);
  appRoutes(api);
  labelRoutes(api);
  typingRoutes(api);
  eventRoutes(api, deps.hub);
  v0Routes(api);
  const openApi = lazyDocument(api, { version: VERSION, errorBodies: v0ErrorBodies, components: v0Components });
  mcpRoutes(api, deps.hub, deps.mcp, openApi);
  specRoutes(api, openApi);
  oauthRoutes(api, {
    storage: deps.storage,
    now: deps.now,
    accessTokenTtlMs: deps.accessTokenTtlMs,
    fetchClientMetadata: deps.fetchClientMetadata,
    tenancy: deps.tenancy,
  });
  tokenRoutes(api, { storage: deps.storage, now: deps.now });
  webRoutes(api);
}
