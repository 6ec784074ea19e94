/**
 * Client ID Metadata Documents (the MCP authorization spec of 2025-11-25 on; draft-ietf-oauth-client-id-metadata-
 * document): a client whose `client_id` is an HTTPS URL needs no registration, because the URL serves its
 * metadata (name, redirect URIs). Fetching it is an SSRF surface on the daemon and the Worker alike, so:
 * - HTTPS only, except http on a loopback host named as such (a client under development on this machine);
 * - no address that is private, link-local or unspecified, as written in the URL (isPrivateHost), loopback only as
 *   just said; the runtime may check where a host name resolves to as well (`FetchClientMetadata`);
 * - no redirects at all (a redirect could lead anywhere), an answer within 5 s, at most 5 KiB of JSON.
 * A document is kept for an hour, then fetched again at the next authorization.
 *
 * @example
 * await clientFromMetadata("https://app.example/oauth/client.json", fetch, Date.now) // → ClientRecord
 */
import * as v from "valibot";
import { isLoopbackHost, isPrivateHost } from "../util/hosts.ts";
import { readAtMost } from "../util/read-at-most.ts";
import { redirectURIAllowed } from "./authorize.ts";
import type { ClientRecord } from "./store.ts";

export const CLIENT_METADATA_BYTES = 5 * 1024;
export const CLIENT_METADATA_TIMEOUT_MS = 5_000;
export const CLIENT_METADATA_TTL_MS = 3_600_000;

/** How the runtime fetches a metadata URL (the daemon's checks where the name resolves to; fetch on Workers). */
export type FetchClientMetadata = (url: URL, init: { signal: AbortSignal }) => Promise<Response>;

/** A `client_id` that names a metadata document: an https URL with a path, or http on a loopback host. */
export function isClientMetadataURL(clientID: string): boolean {
  return metadataURL(clientID) !== undefined;
}

function metadataURL(clientID: string): URL | undefined {
  if (!/^https?:\/\//.test(clientID)) return undefined;
  let url: URL;
  try {
    url = new URL(clientID);
  } catch {
    return undefined;
  }
  if (url.hash || url.username || url.password || url.pathname === "/" || url.href !== clientID) return undefined;
  const loopback = isLoopbackHost(url.hostname);
  if (url.protocol === "http:" && !loopback) return undefined;
  if (!loopback && isPrivateHost(url.hostname)) return undefined;
  return url;
}

const Document = v.object({
  client_id: v.string(),
  client_name: v.optional(v.pipe(v.string(), v.maxLength(200))),
  redirect_uris: v.pipe(v.array(v.pipe(v.string(), v.maxLength(2000))), v.minLength(1), v.maxLength(20)),
  token_endpoint_auth_method: v.optional(v.string()),
});

/** Why a document is not accepted, as the consent page shows it. */
export class ClientMetadataError extends Error {}

/** The client a metadata URL describes, fetched under the limits above; throws ClientMetadataError saying why not. */
export async function clientFromMetadata(
  clientID: string,
  fetchMetadata: FetchClientMetadata,
  now: () => number,
): Promise<ClientRecord> {
  const url = metadataURL(clientID);
  if (!url) throw new ClientMetadataError("the client_id is not an https URL this server fetches metadata from");
  const signal = AbortSignal.timeout(CLIENT_METADATA_TIMEOUT_MS);
  let response: Response;
  try {
    response = await fetchMetadata(url, { signal });
  } catch {
    throw new ClientMetadataError(`the app's metadata at ${url.host} could not be fetched within 5 s`);
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined);
    throw new ClientMetadataError(
      response.status >= 300 && response.status < 400
        ? "the app's metadata URL redirects, and redirects are not followed"
        : `the app's metadata URL answered HTTP ${response.status}`,
    );
  }
  const text = await readLimited(response, CLIENT_METADATA_BYTES);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ClientMetadataError("the app's metadata is not JSON");
  }
  const doc = v.safeParse(Document, parsed);
  if (!doc.success)
    throw new ClientMetadataError(`the app's metadata is not valid: ${v.summarize(doc.issues).slice(0, 300)}`);
  if (doc.output.client_id !== clientID)
    throw new ClientMetadataError("the app's metadata names another client_id than its own URL");
  if ((doc.output.token_endpoint_auth_method ?? "none") !== "none")
    throw new ClientMetadataError("only public clients (token_endpoint_auth_method none, with PKCE) are supported");
  const bad = doc.output.redirect_uris.find((uri) => !redirectURIAllowed(uri));
  if (bad) throw new ClientMetadataError("the app's metadata names a redirect URI that is neither loopback nor https");
  return {
    client_id: clientID,
    client_name: doc.output.client_name?.trim() || url.host,
    redirect_uris: doc.output.redirect_uris,
    createdAt: new Date(now()).toISOString(),
    metadataFetchedAt: now(),
  };
}

async function readLimited(response: Response, limit: number): Promise<string> {
  const tooBig = () => new ClientMetadataError(`the app's metadata is over ${limit} bytes`);
  if (Number(response.headers.get("content-length") ?? 0) > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw tooBig();
  }
  if (!response.body) return "";
  const bytes = await readAtMost(response.body, limit).catch(() => {
    throw new ClientMetadataError("the app's metadata could not be read to its end");
  });
  if (!bytes) throw tooBig();
  return new TextDecoder().decode(bytes);
}
