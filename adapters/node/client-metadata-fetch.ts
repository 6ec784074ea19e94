/**
 * The daemon's fetch of an OAuth client's metadata URL (src/oauth/client-metadata.ts): the core has refused private
 * addresses as written; here the name is resolved, and the connection goes to the address that was checked, so a
 * name that resolves (or is rebound) to a private, link-local or loopback address is refused too. The hook is
 * node:http's `lookup`, which the socket connects with: there is no second resolution to race.
 *
 * @example
 * createApp({ …, fetchClientMetadata: fetchClientMetadataPinned });
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { Readable } from "node:stream";
import type { FetchClientMetadata } from "../../src/oauth/client-metadata.ts";
import { isLoopbackHost, isPrivateHost } from "../../src/util/hosts.ts";

/** Resolves like dns.lookup, but fails on an address a metadata fetch must not reach. */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, "", 0);
    const list = addresses as LookupAddress[];
    const refused = list.find((a) => isPrivateHost(a.family === 6 ? `[${a.address}]` : a.address));
    if (refused || list.length === 0)
      return callback(
        Object.assign(new Error(`${hostname} resolves to ${refused?.address ?? "nothing"}, which is not fetched`), {
          code: "EADDRNOTPUBLIC",
        }),
        "",
        0,
      );
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    callback(null, list[0].address, list[0].family);
  });
};

export const fetchClientMetadataPinned: FetchClientMetadata = (url, init) =>
  new Promise<Response>((resolve, reject) => {
    // A host named as loopback is the one case the core lets through (a client under development here).
    const lookup = isLoopbackHost(url.hostname) ? undefined : publicOnlyLookup;
    const request = (url.protocol === "https:" ? https : http).request(
      url,
      { method: "GET", headers: { accept: "application/json" }, lookup, signal: init.signal, agent: false },
      (res) => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers))
          if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
        resolve(
          new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, { status: res.statusCode ?? 502, headers }),
        );
      },
    );
    request.on("error", reject);
    request.end();
  });
