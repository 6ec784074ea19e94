/**
 * Many inboxes behind one deployment (the Worker's INBOXD_TENANCY=multi): every secret an inbox mints names the inbox
 * it belongs to, so a request can be routed by its credential alone. The name is only an address: the inbox it
 * names still checks the secret against its own store, so a secret presented with another inbox's name written into
 * it reaches that inbox and is refused there like any unknown token.
 *
 * A tagged secret is `<kind>_<inbox>.<random>` (`inbx_alice.3kT…`, `code_alice.…`); a secret without a tag (every
 * daemon's, and a single-device Worker's) belongs to the inbox named "device", the one a single-device deployment
 * has always had.
 */

/** The inbox of a single-device deployment, and of every secret minted before inboxes were named. */
export const DEVICE_INBOX = "device";

/** What an inbox ID may be: lower-case letters, digits and inner hyphens, 1–32 characters. */
export const INBOX_ID_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

export const isInboxID = (id: string) => INBOX_ID_PATTERN.test(id);

/** The kind of secret (`inbx`, `inbr`, `code`, `signin`, `session`), the inbox ID, then the random part. */
const TAGGED = /^([a-z]+)_([a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?)\.([A-Za-z0-9_-]{16,})$/;

/** The inbox a tagged secret names; undefined for a secret without a tag (a single device's). */
export const namedInbox = (secret: string): string | undefined => TAGGED.exec(secret)?.[2];

/** The inbox a secret belongs to: the one it names, or "device" for a secret without a tag. */
export function inboxOf(secret: string): string {
  return namedInbox(secret) ?? DEVICE_INBOX;
}

/** What tells a token apart in lists: its first 9 characters, or for a tagged one its tag and 4 more. */
export function secretHint(secret: string): string {
  const tagged = TAGGED.exec(secret);
  return tagged ? secret.slice(0, tagged[1].length + tagged[2].length + 6) : secret.slice(0, 9);
}

/**
 * An app's place in a deployment of many inboxes (AppOptions.tenancy): the inbox it serves, whose ID every secret
 * it mints names, or none for the app that answers requests naming no inbox (the OAuth discovery documents,
 * registration, the sign-in page). Registration then answers self-contained client IDs (src/oauth/store.ts): an app
 * registers before anyone signs in, so no inbox is there to keep its record.
 */
export interface Tenancy {
  inbox?: string;
  /** What the operator allows this inbox; read on every use, so the runtime may change it in place. */
  limits?: InboxLimits;
  /**
   * Why requests that add data are refused now (the inbox is at its storage limit, which only the runtime can
   * measure), or undefined. The runtime refuses REST writes itself; MCP's tools that write ask this.
   */
  writesRefused?: () => string | undefined;
}

/** An operator's limits on one inbox (absent: none beyond the runtime's own). */
export interface InboxLimits {
  /** Accounts the inbox may hold: a login that would add one past this is refused (409 LIMIT_REACHED). */
  maxAccounts?: number;
  /** Bytes of storage: past this, requests that add data are refused (507 STORAGE_LIMIT_REACHED). */
  maxStorageBytes?: number;
  /** Requests per second per token, in bursts of 4× (the rate limiter's budget; default the deployment's). */
  requestsPerSecond?: number;
}

/**
 * On a daemon that relays through an inbox of a deployment of many (its pairing secret names the inbox): the key
 * under which its store keeps that inbox's ID, so that what it mints from other processes too (`inboxd token
 * create`, `inboxd open`) names the inbox, and reaches the daemon through the relay.
 */
export const RELAYED_INBOX_KEY = "relay:inbox";
