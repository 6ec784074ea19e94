import type { XmppEndpoint } from "./connection.ts";
import type { ScramKeys } from "./scram.ts";

/**
 * What an XMPP account keeps between runs (the account's connector state: stored with the account, never returned
 * by the API). Credentials are SCRAM keys where the server offers SCRAM, which every Prosody and ejabberd does; the
 * password is kept only for a server that offers nothing but PLAIN.
 */
export interface XmppState {
  /** The account's bare JID. */
  jid: string;
  endpoint: XmppEndpoint;
  secret: { keys: ScramKeys } | { password: string };
  /** This device's resource, stable so the server sees one client across restarts. */
  resource: string;
  /** Signs the attachment IDs this account hands out (media.ts). */
  mediaKey: string;
  /** The newest archive (XEP-0313) IDs read: the account's own archive and each room's. */
  archive: { own?: string; rooms: Record<string, string> };
  /** Rooms to join on every connect. */
  rooms: Record<string, { nick: string; password?: string }>;
}

export function readState(state: Record<string, unknown>): XmppState {
  const s = state as unknown as Partial<XmppState>;
  return {
    jid: String(s.jid ?? ""),
    endpoint: s.endpoint!,
    secret: s.secret!,
    resource: s.resource ?? `inboxd-${crypto.randomUUID().slice(0, 8)}`,
    mediaKey: s.mediaKey!,
    archive: { own: s.archive?.own, rooms: { ...s.archive?.rooms } },
    rooms: { ...s.rooms },
  };
}
