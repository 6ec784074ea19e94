/**
 * Cross-origin reads of the OAuth discovery documents (RFC 8414, RFC 9728) when remote access is on: a hosted agent's
 * web page (an MCP client in a browser) reads them before it has a token. They are public and hold no secrets; every
 * other route keeps refusing cross-site requests (guard.ts), and no route answers with credentials cross-origin.
 */
export const isDiscoveryPath = (pathname: string) => pathname.startsWith("/.well-known/oauth-");

const ALLOWED_METHODS = "GET, HEAD, OPTIONS";

/** The answer to a CORS preflight (`OPTIONS` with Access-Control-Request-Method) of a discovery document. */
export function discoveryPreflight(request: Request): Response {
  const headers = new Headers({
    "access-control-allow-origin": "*",
    "access-control-allow-methods": ALLOWED_METHODS,
    "access-control-max-age": "86400",
    allow: ALLOWED_METHODS,
  });
  // MCP clients send MCP-Protocol-Version with the request; whatever header a reader asks to send is harmless here.
  const asked = request.headers.get("access-control-request-headers");
  if (asked) headers.set("access-control-allow-headers", asked);
  return new Response(null, { status: 204, headers });
}

/** A discovery document's answer, readable from any origin. */
export function withDiscoveryCors(response: Response): Response {
  response.headers.set("access-control-allow-origin", "*");
  return response;
}
