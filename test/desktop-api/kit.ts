/**
 * Plumbing for the desktop-api suite: the upstream is a second inboxd daemon with seeded sandbox accounts (a real
 * server speaking the Desktop API), reached by the runtime under test over loopback; both are driven through the
 * XMPP suite's API client (the official SDK plus raw HTTP, every JSON answer checked against the served document).
 * Nothing here asserts.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { startNode, type NodeHarness } from "../harness/node.ts";
import { ResponseChecker } from "../scenario/openapi-check.ts";
import { Client, randomToken, type Runtime } from "../xmpp/kit.ts";

export { Client, enc, imageBytes, randomToken, sleep, waitFor, type Runtime } from "../xmpp/kit.ts";

export const BRIDGE = "local-desktop-api";

export interface DesktopApiTarget {
  name: string;
  /** `firstBackfill`: messages per chat a first load reads (small, so that paging back has to reach the upstream). */
  start(token: string, options: { firstBackfill: number }): Promise<Runtime>;
}

export interface Upstream {
  url: string;
  token: string;
  node: NodeHarness;
  api: Client;
  instanceID: string;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The upstream inboxd: two seeded sandbox accounts (with their Echo chats), one read-write token. Its OAuth access
 * tokens live `accessTokenTtlMs` (default an hour), so that a suite can see the connector refresh one.
 */
export async function startUpstream(options: { accessTokenTtlMs?: number } = {}): Promise<Upstream> {
  const token = randomToken();
  const node = await startNode({
    seed: { chats: 6, messages: 240, accounts: 2, seed: 11 },
    tokens: [{ token, scopes: ["read", "write"] }],
    accessTokenTtlMs: options.accessTokenTtlMs,
  });
  const runtime: Runtime = { url: node.url, token, restart: () => node.restart(), stop: () => node.stop() };
  const api = new Client(runtime);
  api.spec = officialFirst(new ResponseChecker(await api.ok("GET", "/v1/spec")));
  const info = await api.ok("GET", "/v1/info");
  return {
    url: node.url,
    token,
    node,
    api,
    instanceID: info.server.instance_id,
    restart: () => node.restart(),
    stop: () => node.stop(),
  };
}

/** A loopback port nothing listens on (taken from the kernel, then let go). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The official 5.0.0 document, its OpenAPI 3.0 `nullable` written as JSON Schema's (a `null` type beside the
 * other), and a `nullable` without a type (any value) dropped.
 */
const OFFICIAL: Record<string, any> = JSON.parse(
  readFileSync(new URL("../fixtures/desktop-api-v5.openapi.json", import.meta.url), "utf8"),
  (_key, value) => {
    if (!value || typeof value !== "object" || Array.isArray(value) || !("nullable" in value)) return value;
    const { nullable, ...rest } = value;
    if (nullable !== true || !("type" in rest)) return rest;
    return { ...rest, type: [...(Array.isArray(rest.type) ? rest.type : [rest.type]), "null"] };
  },
);

/**
 * The upstream is checked as the connector meets it: every answer an operation of the official 5.0.0 document gives
 * against that document, the rest (bridges, login sessions) against the upstream's own.
 */
function officialFirst(own: ResponseChecker): ResponseChecker {
  const official = new ResponseChecker(OFFICIAL);
  return Object.assign(Object.create(ResponseChecker.prototype), {
    check: (method: string, url: string, status: number, contentType: string | null, body: unknown) =>
      (official.documents(method, url) ? official : own).check(method, url, status, contentType, body),
    documents: (method: string, url: string) => official.documents(method, url) || own.documents(method, url),
    checked: official.checked,
  }) as ResponseChecker;
}
