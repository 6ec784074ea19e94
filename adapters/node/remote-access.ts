import { LOOPBACK_PROXIES, trustedProxies } from "./forwarded.ts";
import type { ServeOptions } from "./serve.ts";
import { UsageError } from "./usage-error.ts";
import { isLoopbackHost } from "../../src/util/hosts.ts";

export interface RemoteAccessFlags {
  "remote-access"?: boolean;
  "public-url"?: string;
  "trusted-proxy"?: string[];
  relay?: string;
}

const truthy = (value: string | undefined) => value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());

/**
 * `serve --remote-access [--public-url URL] [--trusted-proxy CIDR]…` (or INBOXD_REMOTE_ACCESS=1, INBOXD_PUBLIC_URL,
 * INBOXD_TRUSTED_PROXIES=a,b): undefined when off. The other two need the first: they only mean something when
 * forwarded headers are read, and a switch that opens the daemon to a proxy's word is better said out loud.
 */
export function remoteAccessOptions(
  flags: RemoteAccessFlags,
  env: NodeJS.ProcessEnv = process.env,
): ServeOptions["remoteAccess"] {
  const on = flags["remote-access"] || truthy(env.INBOXD_REMOTE_ACCESS);
  const publicURL = flags["public-url"] ?? (env.INBOXD_PUBLIC_URL || undefined);
  const ranges =
    flags["trusted-proxy"] ??
    (env.INBOXD_TRUSTED_PROXIES ?? "")
      .split(",")
      .map((r) => r.trim())
      .filter(Boolean);
  if (!on) {
    if (flags["public-url"] || flags["trusted-proxy"]?.length)
      throw new UsageError(
        `--${flags["public-url"] ? "public-url" : "trusted-proxy"} needs --remote-access (or INBOXD_REMOTE_ACCESS=1)`,
      );
    return undefined;
  }
  try {
    trustedProxies(ranges);
  } catch (error) {
    throw new UsageError(`--trusted-proxy: ${(error as Error).message}`);
  }
  return { publicURL: publicURL === undefined ? undefined : parsePublicURL(publicURL), trustedProxies: ranges };
}

function parsePublicURL(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--public-url must be an absolute URL such as https://inbox.example.com, got ${value}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new UsageError(`--public-url must be http or https, got ${url.protocol}`);
  if (url.pathname !== "/" || url.search || url.hash || url.username || url.password)
    throw new UsageError(
      `--public-url must be an origin only (scheme, host, port), got ${value}: serve inboxd at the root of its host name`,
    );
  return url;
}

/** What `serve` says at start-up in remote mode: who is believed, and as what. */
export function remoteAccessNotice(remote: NonNullable<ServeOptions["remoteAccess"]>, allowHosts: string[]): string {
  const from = [...LOOPBACK_PROXIES, ...(remote.trustedProxies ?? [])].join(", ");
  const as = remote.publicURL
    ? `answering proxied requests as ${remote.publicURL.origin}`
    : allowHosts.length
      ? `answering proxied requests for ${allowHosts.join(", ")}`
      : "answering proxied requests for whatever host the proxy forwards. Without --public-url (or --allow-host), a web page that rebinds its own name to this machine can reach the API's public routes: set it";
  return `Remote access: forwarded headers from ${from} are believed; ${as}. The OAuth discovery documents are readable cross-origin.`;
}

/**
 * `serve --relay URL` (or INBOXD_RELAY_URL): the relay Worker to dial out to. Its pairing secret comes only from the
 * environment (INBOXD_RELAY_SECRET), never a flag, so that it stays out of process lists and shell history.
 */
export function relayOptions(flags: RemoteAccessFlags, env: NodeJS.ProcessEnv = process.env): ServeOptions["relay"] {
  const url = flags.relay ?? (env.INBOXD_RELAY_URL || undefined);
  if (url === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(
      `--relay must be the relay Worker's URL, such as https://inboxd-relay.example.workers.dev, got ${url}`,
    );
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:")
    throw new UsageError(`--relay must be an http or https URL, got ${parsed.protocol}`);
  // Over plain http the pairing secret, and every token clients send through the relay, would cross the network in
  // the clear: only a relay on this machine (wrangler dev) may be reached that way.
  if (parsed.protocol === "http:" && !isLoopbackHost(parsed.hostname))
    throw new UsageError(
      `--relay must be https:// (plain http only for a relay on this machine, such as wrangler dev), got ${parsed.origin}`,
    );
  const secret = env.INBOXD_RELAY_SECRET;
  if (!secret)
    throw new UsageError(
      "--relay needs INBOXD_RELAY_SECRET in the environment: the pairing secret the relay Worker holds (wrangler secret put INBOXD_RELAY_SECRET)",
      false,
    );
  if (secret.length < 16)
    throw new UsageError(
      "INBOXD_RELAY_SECRET is too short: use at least 16 random characters (openssl rand -base64 32)",
      false,
    );
  return { url: parsed.origin, secret };
}
