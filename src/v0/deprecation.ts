/**
 * The headers that mark every /v0 answer — success or failure — as deprecated and name what replaced it:
 * `Deprecation` (RFC 9745) and `Link: <…>; rel="successor-version"` (RFC 5829, in a Link header per RFC 8288).
 */
import { endpointAt, V0_ENDPOINTS, type V0Name } from "./endpoints.ts";

/**
 * When /v0 became deprecated here, as RFC 9745's structured-field date (`@` + seconds since the epoch): inboxd served
 * it deprecated from its first version (2026-11-21), since /v1 had replaced it before inboxd existed.
 */
export const DEPRECATED_SINCE = "@1795219200";

/** Where an unknown /v0 path points: the /v1 generation as a whole, described by its OpenAPI document. */
const SUCCESSOR_GENERATION = '</v1/spec>; rel="successor-version"';

/**
 * The Link header value naming an endpoint's successor. Path parameters are filled from the request's own values
 * (`chatID` of a get-chat query or an archive-chat body), so the link names the same resource under /v1; one the
 * request did not give stays as its `{name}`, percent-encoded so the link is still a valid URI reference. The title
 * carries the method, which the URI cannot (clear-chat-reminder is a DELETE under /v1).
 */
export function successorLink(name: V0Name, values: Record<string, unknown> = {}): string {
  const { method, path } = V0_ENDPOINTS[name].successor;
  const target = path.replace(/\{(\w+)\}/g, (_, param: string) => {
    const value = values[param];
    // toWellFormed: a lone surrogate would make encodeURIComponent throw, and this runs on the way out of every answer.
    return encodeURIComponent(typeof value === "string" && value !== "" ? value.toWellFormed() : `{${param}}`);
  });
  return `<${target}>; rel="successor-version"; title="${method} ${path}"`;
}

/**
 * Adds the deprecation headers to a /v0 answer. A successful answer already names its successor with the values it
 * was given (src/v0/operation.ts); any other — a refusal before the body was read, an unknown path — gets the link
 * from what the URL says.
 */
export function v0Response(response: Response, url: URL): Response {
  response.headers.set("deprecation", DEPRECATED_SINCE);
  if (!response.headers.has("link")) {
    const name = endpointAt(url.pathname);
    response.headers.set(
      "link",
      name ? successorLink(name, Object.fromEntries(url.searchParams)) : SUCCESSOR_GENERATION,
    );
  }
  return response;
}
