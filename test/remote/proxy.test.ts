/**
 * Remote access through a real reverse proxy (issue 18, part 1): Debian's nginx on a loopback port in front of the
 * daemon, configured the usual way (public Host, X-Forwarded-*, WebSocket upgrades), reached by a public host name
 * that the clients here resolve to 127.0.0.1. The clients are the official SDK, a `ws` client on /v1/ws, and an MCP
 * client from @modelcontextprotocol/sdk that starts from a bare 401 and runs OAuth with PKCE through the proxy.
 * Every URL they are handed must point at the public origin; without --remote-access the same headers change nothing.
 */
import { randomBytes } from "node:crypto";
import type { LookupFunction } from "node:net";
import { Agent } from "undici";
import type WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNginx, type NginxProxy } from "../harness/nginx.ts";
import { startNode, type NodeHarness } from "../harness/node.ts";
import { liveEvents, mcpOAuth, sdkRoundTrip, type Remote } from "./kit.ts";

const PUBLIC = "inbox.example.test";
const TLS_FRONT = "secure.example.test";
const NOT_REMOTE = "plain.example.test";
const token = `inbx_${randomBytes(24).toString("base64url")}`;

/** Every name resolves to 127.0.0.1, where nginx listens: what DNS (or a tunnel's edge) does for the real names. */
const lookup: LookupFunction = ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) =>
  options?.all
    ? callback(null, [{ address: "127.0.0.1", family: 4 }])
    : callback(null, "127.0.0.1", 4)) as LookupFunction;
const agent = new Agent({ connect: { lookup } });
// Node's own fetch (the SDK's uploads need its FormData) with a dispatcher that resolves every name to loopback.
const viaProxy = ((input: string | URL | Request, init?: RequestInit) =>
  fetch(input, { ...init, dispatcher: agent } as RequestInit)) as typeof fetch;

let remote: NodeHarness;
let local: NodeHarness;
let nginx: NginxProxy;
let origin: string;

beforeAll(async () => {
  const tokens = [{ token, scopes: ["read", "write"] as ("read" | "write")[] }];
  // Rate limits on, as in production: the failed-authentication throttle is under test.
  remote = await startNode({
    seed: { chats: 8, messages: 60, accounts: 1, seed: 18 },
    tokens,
    remoteAccess: {},
    rateLimit: {},
  });
  local = await startNode({ tokens });
  nginx = await startNginx([
    { serverName: PUBLIC, upstream: remote.url },
    { serverName: TLS_FRONT, upstream: remote.url, tlsFront: true },
    { serverName: NOT_REMOTE, upstream: local.url },
  ]);
  origin = `http://${PUBLIC}:${nginx.port}`;
}, 60_000);

afterAll(async () => {
  await nginx?.close();
  await remote?.stop();
  await local?.stop();
  await agent.close();
});

const client = (): Remote => ({ origin, token, fetch: viaProxy, wsOptions: { lookup } as WebSocket.ClientOptions });
const get = (url: string, headers: Record<string, string> = {}) =>
  viaProxy(url, { headers: { authorization: `Bearer ${token}`, ...headers } });

/** The attachment the SDK scenario sent, for the MCP client to download. */
let asset = "";

describe("the daemon behind nginx with --remote-access", () => {
  it("answers /v1/info with every URL at the public origin, and remote_access true", async () => {
    // (SDK 5.0.0 asks /v1/info without its token, which answers the public minimum; the full body needs one.)
    const info = (await (await get(`${origin}/v1/info`)).json()) as any;
    expect(info.server).toMatchObject({ base_url: origin, hostname: PUBLIC, port: nginx.port, remote_access: true });
    const urls: string[] = [
      info.endpoints.spec,
      info.endpoints.mcp,
      info.endpoints.sse,
      info.endpoints.ws_events,
      ...Object.values(info.endpoints.oauth as Record<string, string>),
    ];
    expect(urls.length).toBeGreaterThanOrEqual(9);
    for (const url of urls) expect(url.replace(/^ws/, "http").startsWith(`${origin}/`), url).toBe(true);
    // Direct, on loopback, the same daemon still speaks of itself as it is reached.
    const direct = await (
      await fetch(`${remote.url}/v1/info`, { headers: { authorization: `Bearer ${token}` } })
    ).json();
    expect(direct.server.base_url).toBe(remote.url);
  });

  it("runs the SDK scenario through the proxy: accounts, chats, a message to Echo and its answer, an upload and its bytes", async () => {
    asset = await sdkRoundTrip(client(), 300_000, "through the proxy");
  });

  it("a /v1/ws client connects through the proxy and receives the events of a message sent through it", async () => {
    await liveEvents(client(), "live through nginx");
  });

  it("an MCP client starts from a bare 401, discovers, registers, gets the owner's approval with PKCE, and lists the tools, all at the public origin", async () => {
    await mcpOAuth(client(), asset);
  });

  it("points 401s and the OAuth metadata at the public origin", async () => {
    const bare = await viaProxy(`${origin}/v0/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{}",
    });
    expect(bare.status).toBe(401);
    expect(bare.headers.get("www-authenticate")).toContain(
      `resource_metadata="${origin}/.well-known/oauth-protected-resource"`,
    );
    const as = (await (await viaProxy(`${origin}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      string
    >;
    expect(as.issuer).toBe(origin);
    for (const key of [
      "authorization_endpoint",
      "token_endpoint",
      "registration_endpoint",
      "introspection_endpoint",
      "revocation_endpoint",
    ])
      expect(as[key].startsWith(`${origin}/oauth/`), key).toBe(true);
    const pr = (await (await viaProxy(`${origin}/.well-known/oauth-protected-resource`)).json()) as {
      resource: string;
      authorization_servers: string[];
    };
    expect(pr).toMatchObject({ resource: origin, authorization_servers: [origin] });
  });

  it("behind a TLS-terminating front (X-Forwarded-Proto https, port 443) every URL is https on the default port", async () => {
    const info = (await (await get(`http://${TLS_FRONT}:${nginx.port}/v1/info`)).json()) as any;
    expect(info.server).toMatchObject({
      base_url: `https://${TLS_FRONT}`,
      port: 443,
      hostname: TLS_FRONT,
      remote_access: true,
    });
    expect(info.endpoints.ws_events).toBe(`wss://${TLS_FRONT}/v1/ws`);
  });

  it("lets any origin read the discovery documents (CORS, preflight included), and no other route", async () => {
    const page = { origin: "https://chat.example.net", "sec-fetch-site": "cross-site" };
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource"]) {
      const read = await viaProxy(`${origin}${path}`, { headers: page });
      expect(read.status, path).toBe(200);
      expect(read.headers.get("access-control-allow-origin")).toBe("*");
      const preflight = await viaProxy(`${origin}${path}`, {
        method: "OPTIONS",
        headers: {
          ...page,
          "access-control-request-method": "GET",
          "access-control-request-headers": "mcp-protocol-version",
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-methods")).toContain("GET");
      expect(preflight.headers.get("access-control-allow-headers")).toBe("mcp-protocol-version");
    }
    for (const path of ["/v1/chats", "/v1/info", "/oauth/register"]) {
      const refused = await get(`${origin}${path}`, page);
      expect(refused.status, path).toBe(403);
      expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    }
    // The page of the public origin itself is at home.
    expect((await get(`${origin}/v1/chats`, { origin, "sec-fetch-site": "same-origin" })).status).toBe(200);
  });

  it("counts failed authentications per forwarded client, not per proxy: one client is throttled, another is not", async () => {
    const bad = (client: string) =>
      viaProxy(`${origin}/v1/chats`, { headers: { authorization: "Bearer inbx_wrong", "x-forwarded-for": client } });
    const statuses: number[] = [];
    for (let i = 0; i < 32; i++) statuses.push((await bad("203.0.113.77")).status);
    expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    expect((await bad("198.51.100.8")).status).toBe(401);
    // A client's own Forwarded header, which nginx passes on untouched, neither frees it from the throttle nor moves
    // the origin: X-Forwarded-* (set by the proxy) is what counts.
    const spoofed = await viaProxy(`${origin}/v1/chats`, {
      headers: {
        authorization: "Bearer inbx_wrong",
        "x-forwarded-for": "203.0.113.77",
        forwarded: "for=192.0.2.200;host=evil.example;proto=https",
      },
    });
    expect(spoofed.status).toBe(429);
    const info = (await (
      await get(`${origin}/v1/info`, { forwarded: "for=192.0.2.201;host=evil.example;proto=https" })
    ).json()) as { server: { base_url: string } };
    expect(info.server.base_url).toBe(origin);
    expect(
      (await get(`${origin}/v1/chats?limit=1`, { "x-forwarded-for": "203.0.113.77" })).status,
      "a valid token always gets in",
    ).toBe(200);
  });
});

describe("the daemon behind nginx without --remote-access", () => {
  it("ignores forwarded headers entirely: the proxied public Host is refused, and remote_access is false", async () => {
    const proxied = await get(`http://${NOT_REMOTE}:${nginx.port}/v1/info`);
    expect(proxied.status).toBe(403);
    expect(((await proxied.json()) as { code: string }).code).toBe("HOST_NOT_ALLOWED");
    // A local page or script that writes the headers itself changes nothing either.
    const spoofed = (await (
      await fetch(`${local.url}/v1/info`, {
        headers: {
          authorization: `Bearer ${token}`,
          "x-forwarded-host": "evil.example",
          "x-forwarded-proto": "https",
          forwarded: "host=evil.example;proto=https",
        },
      })
    ).json()) as any;
    expect(spoofed.server).toMatchObject({ base_url: local.url, remote_access: false });
    expect(JSON.stringify(spoofed)).not.toContain("evil.example");
    const metadata = (await (
      await fetch(`${local.url}/.well-known/oauth-authorization-server`, {
        headers: { "x-forwarded-host": "evil.example" },
      })
    ).json()) as { issuer: string };
    expect(metadata.issuer).toBe(local.url);
    const cors = await fetch(`${local.url}/.well-known/oauth-authorization-server`, {
      headers: { origin: "https://chat.example.net", "sec-fetch-site": "cross-site" },
    });
    expect(cors.status).toBe(403);
  });
});
