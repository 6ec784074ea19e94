import ipaddr from "ipaddr.js";
import parseForwarded from "forwarded-parse";
import { ApiError, clip } from "../../src/errors.ts";

/**
 * Remote access behind a reverse proxy or tunnel agent: which peers may say, in `Forwarded` (RFC 7239) or
 * `X-Forwarded-Host/-Proto/-Port/-For`, what origin the client asked for and who the client is. Only those peers'
 * headers are read; anyone else's are ignored, as are all of them when remote access is off (the adapter then never
 * calls this), so a page on this machine cannot make the daemon believe it was asked for another origin.
 */
export interface ProxyTrust {
  /** Whether a peer address is a trusted proxy (see `trustedProxies`). */
  trusts(address: string): boolean;
  /** `--public-url`: the origin every proxied request is answered as, whatever the proxy says. */
  publicURL?: URL;
  /** Host names a proxied request may carry besides publicURL's (`--allow-host`); with neither, any. */
  hosts: string[];
}

/** What a trusted proxy says of a request: the origin the client asked for, its Host, and the client's address. */
export interface ProxyView {
  origin: string;
  host: string;
  client?: string;
}

/** Where tunnel agents (cloudflared, tailscaled) and local proxies connect from: trusted by default. */
export const LOOPBACK_PROXIES = ["127.0.0.0/8", "::1/128"];

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** A trust test for addresses in the given CIDR ranges (or single addresses); an invalid one throws, naming it. */
export function trustedProxies(ranges: string[]): (address: string) => boolean {
  const parsed: Range[] = ranges.map((range) => {
    try {
      if (range.includes("/")) return ipaddr.parseCIDR(range);
      const address = ipaddr.parse(range);
      return [address, address.kind() === "ipv4" ? 32 : 128];
    } catch {
      throw new Error(`${range} is not an IP address or CIDR range (e.g. 10.0.0.0/8, fd00::/8)`);
    }
  });
  return (address) => {
    const ip = parseAddress(address);
    return (
      ip !== undefined && parsed.some(([network, bits]) => ip.kind() === network.kind() && ip.match(network, bits))
    );
  };
}

/** An address as peers and `for=` give it: IPv4-mapped IPv6 as IPv4, brackets and ports dropped. */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = address.startsWith("[")
    ? address.slice(1, address.indexOf("]"))
    : /^[\d.]+:\d+$/.test(address)
      ? address.slice(0, address.lastIndexOf(":"))
      : address;
  try {
    return ipaddr.process(bare);
  } catch {
    return undefined;
  }
}

/** A host name or IP literal, with an optional port: nothing else (no path, user or spaces) may come from a proxy. */
const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(:\d{1,5})?$/i;

/** A client address as hops give it, normalized (`for="[2001:db8::1]:443"` → 2001:db8::1); obfuscated ones as they are. */
function clientAddress(value: string | undefined): string | undefined {
  if (!value) return undefined;
  return parseAddress(value)?.toString() ?? value;
}

const list = (value: string | null) =>
  (value ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);

/**
 * The public view of a request that came from a trusted proxy, or undefined (not from one, or it forwarded nothing).
 * The hops are walked from the nearest: each trusted one's own client is asked in turn, and the first untrusted
 * address is the client; the origin is what the outermost trusted proxy was asked for. Malformed forwarded values
 * and a host that is not allowed are refused (400, 403) rather than ignored: they mean a misconfigured proxy.
 */
export function proxyView(headers: Headers, peer: string | undefined, trust: ProxyTrust): ProxyView | undefined {
  if (!peer || !trust.trusts(peer)) return undefined;
  const hop = outermostTrustedHop(headers, trust);
  const ownHost = headers.get("host") ?? "";
  const askedForPublic = trust.publicURL !== undefined && ownHost.toLowerCase() === trust.publicURL.host;
  if (!hop.forwarded && !askedForPublic) return undefined;
  const host = hop.host ?? ownHost;
  const proto = (hop.proto ?? "http").toLowerCase();
  if (proto !== "http" && proto !== "https") throw badForwarded("proto", proto);
  if (!HOST.test(host)) throw badForwarded("host", host);
  const url = new URL(`${proto}://${host}`);
  if (hop.port !== undefined && !/:\d+$/.test(host)) {
    if (!/^\d{1,5}$/.test(hop.port) || Number(hop.port) > 65535) throw badForwarded("port", hop.port);
    url.port = hop.port;
  }
  if (trust.publicURL) {
    const allowed = [trust.publicURL.hostname, ...trust.hosts].map((name) => name.toLowerCase());
    if (!allowed.includes(url.hostname)) throw forwardedHostNotAllowed(url.hostname);
    return { origin: trust.publicURL.origin, host: trust.publicURL.host, client: hop.client };
  }
  if (trust.hosts.length && !trust.hosts.some((name) => name.toLowerCase() === url.hostname))
    throw forwardedHostNotAllowed(url.hostname);
  return { origin: url.origin, host: url.host, client: hop.client };
}

interface Hop {
  /** Whether any forwarding header was there. */
  forwarded: boolean;
  host?: string;
  proto?: string;
  port?: string;
  client?: string;
}

/**
 * One family of headers is read, never a mix: X-Forwarded-* when the request has any (what nginx, Caddy and tunnel
 * agents set; a client's own `Forwarded`, which they pass on untouched, is then ignored), else RFC 7239 `Forwarded`
 * (for a proxy that sets only that one; it should drop a client's X-Forwarded-* likewise).
 */
function outermostTrustedHop(headers: Headers, trust: ProxyTrust): Hop {
  const header = headers.get("forwarded");
  const xForwarded = ["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port"].some((name) =>
    headers.has(name),
  );
  if (header && !xForwarded) {
    let elements: Record<string, string>[];
    try {
      elements = parseForwarded(header);
    } catch {
      throw badForwarded("Forwarded header", header);
    }
    const i = outermost(
      elements.map((element) => element.for),
      trust,
    );
    const element = elements[i] ?? {};
    return { forwarded: true, host: element.host, proto: element.proto, client: clientAddress(element.for) };
  }
  const fors = list(headers.get("x-forwarded-for"));
  const hosts = list(headers.get("x-forwarded-host"));
  const protos = list(headers.get("x-forwarded-proto"));
  const ports = list(headers.get("x-forwarded-port"));
  const forwarded = fors.length + hosts.length + protos.length + ports.length > 0;
  const i = outermost(fors, trust);
  // Each proxy may append its own value: the one of the chosen hop counts, aligned from the nearest (the last).
  const fromNearest = Math.max(0, fors.length - 1 - i);
  const at = (values: string[]) => (values.length ? values[Math.max(0, values.length - 1 - fromNearest)] : undefined);
  return { forwarded, host: at(hosts), proto: at(protos), port: at(ports), client: clientAddress(fors[i]) };
}

/** The index of the first address, walking from the nearest hop, that is not a trusted proxy (or the first one). */
function outermost(addresses: (string | undefined)[], trust: ProxyTrust): number {
  let i = addresses.length - 1;
  while (i > 0) {
    const address = addresses[i];
    if (!address || !trust.trusts(address)) break;
    i--;
  }
  return Math.max(i, 0);
}

const badForwarded = (what: string, value: string) =>
  new ApiError(
    400,
    "INVALID_REQUEST",
    `the proxy in front of this server forwarded an invalid ${what} (${clip(value, 100)}): check its configuration`,
  );

const forwardedHostNotAllowed = (name: string) =>
  new ApiError(
    403,
    "HOST_NOT_ALLOWED",
    `Host ${clip(name, 100)} is not allowed: the proxy forwarded it, but it is neither --public-url's host nor an --allow-host name`,
  );
