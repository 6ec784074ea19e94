/**
 * The mark an adapter puts on a request whose URL and Host it rewrote from a trusted proxy's view of it (the daemon's
 * remote access, adapters/node/forwarded.ts; the relay): the core then checks Origin against that public origin and
 * leaves the Host check to the adapter, which vetted the forwarded host against --public-url and --allow-host.
 */
const PROXIED = Symbol("inboxd.proxied");

export function markProxied<R extends Request>(request: R): R {
  (request as R & { [PROXIED]?: true })[PROXIED] = true;
  return request;
}

export const isProxied = (request: Request) => (request as Request & { [PROXIED]?: true })[PROXIED] === true;
