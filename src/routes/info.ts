import * as v from "valibot";
import type { Api } from "../http/route-kit.ts";
import { oauthEndpoints } from "../oauth/index.ts";

export interface ServerInfo {
  version: string;
  platform: { os: string; arch: string; release?: string };
  remoteAccess: boolean;
}

const AppFacts = v.strictObject({ name: v.string(), version: v.string(), bundle_id: v.string() });
const PublicInfo = v.pipe(
  v.strictObject({ app: AppFacts, server: v.strictObject({ status: v.literal("running") }) }),
  v.description("Without a token."),
);
const FullInfo = v.pipe(
  v.strictObject({
    app: AppFacts,
    platform: v.strictObject({ os: v.string(), arch: v.string(), release: v.optional(v.string()) }),
    server: v.strictObject({
      status: v.literal("running"),
      base_url: v.string(),
      port: v.number(),
      hostname: v.string(),
      remote_access: v.boolean(),
      mcp_enabled: v.boolean(),
      instance_id: v.pipe(
        v.string(),
        v.description(
          "inboxd: this server's identity, so that a desktop-api login can tell it would point back at itself.",
        ),
      ),
    }),
    endpoints: v.pipe(
      v.strictObject({
        oauth: v.strictObject({
          authorization_endpoint: v.string(),
          token_endpoint: v.string(),
          introspection_endpoint: v.string(),
          userinfo_endpoint: v.string(),
          revocation_endpoint: v.string(),
          registration_endpoint: v.string(),
        }),
        spec: v.string(),
        mcp: v.string(),
        sse: v.string(),
        ws_events: v.string(),
      }),
      v.description("Only endpoints this server answers."),
    ),
  }),
  v.description("With a token."),
);

/**
 * GET /v1/info. SDK 5.0.0 calls it without a token, while the spec puts every endpoint behind one: without a token
 * the answer is the public minimum (app name/version, status); with a token it is the full body (wire-compat §8).
 * `endpoints` names only what answers here.
 */
export function infoRoutes(api: Api, info: ServerInfo) {
  api.add(
    {
      method: "GET",
      path: "/v1/info",
      operationId: "getInfo",
      summary: "Retrieve server info",
      tag: "Server",
      scope: "public",
      response: v.union([FullInfo, PublicInfo]),
      description:
        "Public: without a token, the app's name, version and status; with one, the platform, server and endpoints too.",
    },
    ({ rc }) => {
      const base = rc.url.origin;
      const app = { name: "inboxd", version: info.version, bundle_id: "dev.inboxd.daemon" };
      if (!rc.principal) return { app, server: { status: "running" } };
      return {
        app,
        platform: info.platform,
        server: {
          status: "running",
          base_url: base,
          port: Number(rc.url.port || (rc.url.protocol === "https:" ? 443 : 80)),
          hostname: rc.url.hostname,
          remote_access: info.remoteAccess,
          mcp_enabled: true,
          instance_id: rc.app.db.instanceID,
        },
        endpoints: {
          oauth: oauthEndpoints(base),
          spec: `${base}/v1/spec`,
          mcp: `${base}/v0/mcp`,
          sse: `${base}/v0/sse`,
          ws_events: `${base.replace(/^http/, "ws")}/v1/ws`,
        },
      };
    },
  );
}
