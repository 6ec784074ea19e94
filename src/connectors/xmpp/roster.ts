import xml from "@xmpp/xml";
import type { XmppConnection as Client } from "./connection.ts";
import type { User } from "../../schema/wire.ts";

const NS_ROSTER = "jabber:iq:roster";

/** The account's roster (RFC 6121 §2) as users: the JID is the ID and the username, the roster name the full name. */
export async function fetchRoster(xmpp: Client): Promise<User[]> {
  const query = await xmpp.iqCaller.get(xml("query", { xmlns: NS_ROSTER }));
  return (query?.getChildren("item") ?? [])
    .filter((i) => i.attrs.subscription !== "remove")
    .map((i) => rosterUser(i.attrs.jid as string, i.attrs.name as string | undefined));
}

export function rosterUser(jid: string, name?: string): User {
  const id = jid.toLowerCase();
  return { id, username: id, fullName: name || id.split("@")[0] };
}

/** Adds someone to the roster and asks to see their presence (what starting a chat with a new JID implies). */
export async function addToRoster(xmpp: Client, jid: string, name?: string): Promise<void> {
  await xmpp.iqCaller.set(xml("query", { xmlns: NS_ROSTER }, xml("item", { jid, ...(name ? { name } : {}) })));
  await xmpp.send(xml("presence", { to: jid, type: "subscribe" }));
}
