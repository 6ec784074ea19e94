import type { IncomingMessage, ServerResponse } from "node:http";
import { proxyView, type ProxyTrust } from "./forwarded.ts";
import { markProxied } from "../../src/http/proxied.ts";

type NodeContext = { req: IncomingMessage; res: ServerResponse };
/** The TCP peer a request came from, on requests built outside srvx (handle()'s, a WebSocket upgrade's). */
const PEER = Symbol("inboxd.peer");
/** A Request as srvx hands it over (the Node request on `runtime.node`), or one tagged with its peer. */
export type NodeRequest = Request & { runtime?: { node?: NodeContext }; [PEER]?: string };

/**
 * The client's address for throttling failed authentication: the TCP peer, never X-Forwarded-For or the like, which
 * any client can write (a daemon behind a reverse proxy sees the proxy's address, and throttles it as one client).
 * Not srvx's `request.ip`, which follows X-Forwarded-For when srvx is told to trust a proxy.
 */
export function peerAddress(request: Request): string | undefined {
  const r = request as NodeRequest;
  return r[PEER] ?? r.runtime?.node?.req.socket?.remoteAddress;
}

/** Marks a request built outside srvx (a WebSocket upgrade's, say) with the TCP peer it came from. */
export function tagPeer<R extends Request>(request: R, address: string | undefined): R {
  (request as NodeRequest)[PEER] = address;
  return request;
}

/** The address failed authentications count under when a trusted proxy did not say who its client is. */
const UNNAMED_CLIENT = "client-behind-proxy";

/** A request as the app is to see it: URL, headers, the client's address, and whether a trusted proxy spoke for it. */
export interface Arrival {
  url: string;
  headers: Headers;
  client: string | undefined;
  proxied: boolean;
}

/**
 * With remote access on (`proxy` given), a request from a trusted proxy is seen as its client made it: the public
 * origin and Host, the client's address (forwarded.ts). Otherwise, and without forwarded headers, as it came.
 * Throws the ApiError of a misconfigured proxy's headers.
 */
export function arrival(
  url: string,
  headers: Headers,
  peer: string | undefined,
  proxy: ProxyTrust | undefined,
): Arrival {
  const view = proxy ? proxyView(headers, peer, proxy) : undefined;
  if (!view) return { url, headers, client: peer, proxied: false };
  const { pathname, search } = new URL(url);
  const seen = new Headers(headers);
  seen.set("host", view.host);
  return {
    url: `${view.origin}${pathname}${search}`,
    headers: seen,
    client: view.client ?? UNNAMED_CLIENT,
    proxied: true,
  };
}

/** The Request for an arrival, tagged with its client (and as proxied) for the app. */
export function requestFor(seen: Arrival, init: RequestInit = {}): Request {
  const request = tagPeer(new Request(seen.url, { ...init, headers: seen.headers }), seen.client);
  return seen.proxied ? markProxied(request) : request;
}
