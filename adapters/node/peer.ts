import type { IncomingMessage, ServerResponse } from "node:http";

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

