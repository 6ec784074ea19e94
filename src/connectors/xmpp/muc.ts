import xml from "@xmpp/xml";
import type { XmppConnection as Client } from "./connection.ts";
import type { Element } from "@xmpp/xml";
import { NetworkError } from "../../bridges/connector.ts";
import { bare, resourceOf } from "./stanzas.ts";

export const NS_MUC = "http://jabber.org/protocol/muc";
const NS_MUC_USER = "http://jabber.org/protocol/muc#user";
const NS_MUC_OWNER = "http://jabber.org/protocol/muc#owner";
const NS_DISCO_INFO = "http://jabber.org/protocol/disco#info";

export interface Occupant {
  nick: string;
  /** The occupant's real bare JID, when the room shows it to us (non-anonymous rooms, or to moderators). */
  jid?: string;
}

/** A group chat (XEP-0045 room) as this account sees it. */
export interface Room {
  jid: string;
  nick: string;
  title: string;
  occupants: Map<string, Occupant>;
}

/**
 * Joins a room and resolves on our own presence in it (status 110). Room history is not replayed on join: the
 * client reads the room's archive (XEP-0313) instead, which knows where it left off. A room we just created
 * (status 201) is configured before anyone else can join it.
 */
export async function joinRoom(
  xmpp: Client,
  room: string,
  nick: string,
  options: { title?: string; password?: string; timeoutMs?: number } = {},
): Promise<{ created: boolean }> {
  const self = `${room}/${nick}`;
  const answer = new Promise<Element>((resolve, reject) => {
    const timer = setTimeout(
      () => done(new NetworkError("unavailable", `no answer from room ${room}`)),
      options.timeoutMs ?? 10_000,
    );
    const onStanza = (stanza: Element) => {
      if (!stanza.is("presence") || bare(String(stanza.attrs.from ?? "")) !== room) return;
      if (stanza.attrs.type === "error")
        return done(
          new NetworkError(
            "rejected",
            `cannot join ${room}: ${stanza.getChild("error")?.getChildElements()[0]?.name ?? "refused"}`,
          ),
        );
      const codes = statusCodes(stanza);
      if (codes.includes("110") || stanza.attrs.from === self) done(undefined, stanza);
    };
    const done = (error?: Error, stanza?: Element) => {
      clearTimeout(timer);
      xmpp.removeListener("stanza", onStanza);
      if (error) reject(error);
      else resolve(stanza!);
    };
    xmpp.on("stanza", onStanza);
  });
  const join = xmpp.send(
    xml(
      "presence",
      { to: self },
      xml(
        "x",
        { xmlns: NS_MUC },
        xml("history", { maxstanzas: "0" }),
        ...(options.password ? [xml("password", {}, options.password)] : []),
      ),
    ),
  );
  const [, presence] = await Promise.all([join, answer]);
  const created = statusCodes(presence).includes("201");
  if (created) await configureRoom(xmpp, room, options.title);
  return { created };
}

/**
 * A new room: persistent (it outlives everyone leaving), archived, and showing members' real JIDs to members, so
 * messages can be attributed to people rather than nicknames.
 */
async function configureRoom(xmpp: Client, room: string, title?: string) {
  const values: Record<string, string> = {
    FORM_TYPE: "http://jabber.org/protocol/muc#roomconfig",
    "muc#roomconfig_persistentroom": "1",
    "muc#roomconfig_whois": "anyone",
    "muc#roomconfig_enablearchiving": "1",
    "muc#roomconfig_publicroom": "0",
  };
  if (title) values["muc#roomconfig_roomname"] = title;
  const fields = Object.entries(values).map(([name, value]) => xml("field", { var: name }, xml("value", {}, value)));
  await xmpp.iqCaller.set(
    xml("query", { xmlns: NS_MUC_OWNER }, xml("x", { xmlns: "jabber:x:data", type: "submit" }, ...fields)),
    room,
  );
}

/** A mediated invitation (XEP-0045 §7.8.2): the room relays it, so it works whether or not the person is online. */
export async function inviteToRoom(xmpp: Client, room: string, jid: string): Promise<void> {
  await xmpp.send(xml("message", { to: room }, xml("x", { xmlns: NS_MUC_USER }, xml("invite", { to: jid }))));
}

/** The room's name from service discovery, or its local part. */
export async function roomTitle(xmpp: Client, room: string): Promise<string> {
  const info = await xmpp.iqCaller.get(xml("query", { xmlns: NS_DISCO_INFO }), room).catch(() => undefined);
  return (info?.getChild("identity")?.attrs.name as string | undefined) || room.split("@")[0];
}

/** Applies an occupant's presence to the room; answers whether the room's membership changed. */
export function applyOccupantPresence(room: Room, presence: Element): boolean {
  const nick = resourceOf(String(presence.attrs.from ?? ""));
  if (!nick) return false;
  const item = presence.getChild("x", NS_MUC_USER)?.getChild("item");
  if (presence.attrs.type === "unavailable") {
    // Leaving does not end membership of the conversation: keep them listed (as other networks list members).
    return false;
  }
  const jid = item?.attrs.jid ? bare(String(item.attrs.jid)) : undefined;
  const known = room.occupants.get(nick);
  if (known && known.jid === jid) return false;
  room.occupants.set(nick, { nick, jid: jid ?? known?.jid });
  return true;
}

export function statusCodes(presence: Element): string[] {
  return (presence.getChild("x", NS_MUC_USER)?.getChildren("status") ?? []).map((s) => String(s.attrs.code));
}
