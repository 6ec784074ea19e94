import type { ApiRouter } from "../http/route-kit.ts";

export interface ServerInfo {
  version: string;
  platform: { os: string; arch: string; release?: string };
  remoteAccess: boolean;
}

/**
 * GET /v1/info. SDK 5.0.0 calls it without a token, while the spec puts every endpoint behind one: without a token
 * the answer is the public minimum (app name/version, status); with a token it is the full body (wire-compat §8).
 */
export function infoRoutes(router: ApiRouter, info: ServerInfo) {
  router.get("/v1/info", (_req, rc) => {
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
        mcp_enabled: false,
      },
      endpoints: {
        oauth: {
          authorization_endpoint: `${base}/oauth/authorize`,
          token_endpoint: `${base}/oauth/token`,
          introspection_endpoint: `${base}/oauth/introspect`,
          userinfo_endpoint: `${base}/oauth/userinfo`,
          revocation_endpoint: `${base}/oauth/revoke`,
          registration_endpoint: `${base}/oauth/register`,
        },
        spec: `${base}/v1/spec`,
        mcp: `${base}/v0/mcp`,
        ws_events: `${base.replace(/^http/, "ws")}/v1/ws`,
      },
    };
  });
}
