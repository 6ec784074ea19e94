import xml from "@xmpp/xml";
import type { Element } from "@xmpp/xml";

/**
 * XMPP message stanzas in and out, as plain data. Pure functions: no connection, no state, so every extension's
 * parsing is testable on its own. The XEPs covered and their namespaces:
 */
export const NS = {
  reply: "urn:xmpp:reply:0", // XEP-0461 replies
  correct: "urn:xmpp:message-correct:0", // XEP-0308 corrections
  reactions: "urn:xmpp:reactions:0", // XEP-0444 reactions
  retract: "urn:xmpp:message-retract:1", // XEP-0424 retractions (the 0.x form via fastening is read too)
  fasten: "urn:xmpp:fasten:0",
  retractOld: "urn:xmpp:message-retract:0",
  receipts: "urn:xmpp:receipts", // XEP-0184 delivery receipts
  markers: "urn:xmpp:chat-markers:0", // XEP-0333 chat markers
  chatStates: "http://jabber.org/protocol/chatstates", // XEP-0085
  carbons: "urn:xmpp:carbons:2", // XEP-0280
  forward: "urn:xmpp:forward:0",
  delay: "urn:xmpp:delay",
  mam: "urn:xmpp:mam:2", // XEP-0313
  sid: "urn:xmpp:sid:0", // XEP-0359 stanza and origin IDs
  oob: "jabber:x:oob", // XEP-0066 out-of-band data (how uploaded files are announced)
  hints: "urn:xmpp:hints", // XEP-0334
  mucUser: "http://jabber.org/protocol/muc#user",
  conference: "jabber:x:conference", // XEP-0249 direct invitations
  fallback: "urn:xmpp:fallback:0",
} as const;

export type ChatState = "composing" | "paused" | "active" | "inactive" | "gone";

/** What one message stanza says, with nothing resolved yet (rooms, nicknames and chats are the client's business). */
export interface ParsedMessage {
  from: string;
  to: string;
  type: string;
  /** The sender's ID for the message (origin-id, else the stanza's id), which corrections and reactions refer to. */
  id?: string;
  /** The server's archive ID (stanza-id) when present. */
  archiveID?: string;
  /** From XEP-0203 delay, when the message is not live (offline storage, archive). */
  timestamp?: number;
  body?: string;
  replyTo?: string;
  replaces?: string;
  /** The sender's whole set of reactions to a message (an empty set removes them all). */
  reactions?: { id: string; keys: string[] };
  retracts?: string;
  receiptRequested: boolean;
  receivedID?: string;
  markable: boolean;
  displayedID?: string;
  chatState?: ChatState;
  links: { url: string; description?: string }[];
  /** A room invitation (mediated or direct): the room's JID and who invited. */
  invite?: { room: string; inviter: string; password?: string };
  /** A room subject change (a message with <subject/> and no body). */
  subject?: string;
}

export function parseMessage(stanza: Element): ParsedMessage {
  const attr = (el: Element | undefined, name: string) => (el?.attrs[name] as string | undefined) || undefined;
  const delay = stanza.getChild("delay", NS.delay);
  const stamp = attr(delay, "stamp");
  const reactions = stanza.getChild("reactions", NS.reactions);
  const fastened = stanza.getChild("apply-to", NS.fasten);
  const invite = stanza.getChild("x", NS.mucUser)?.getChild("invite");
  const direct = stanza.getChild("x", NS.conference);
  const states: ChatState[] = ["composing", "paused", "active", "inactive", "gone"];
  const originID = attr(stanza.getChild("origin-id", NS.sid), "id");
  const body = stanza.getChildText("body") ?? undefined;
  const subject = stanza.getChild("subject");
  return {
    from: attr(stanza, "from") ?? "",
    to: attr(stanza, "to") ?? "",
    type: attr(stanza, "type") ?? "normal",
    // RFC 6120 makes the id optional: then the server's archive ID names the message.
    id: originID ?? attr(stanza, "id") ?? attr(stanza.getChild("stanza-id", NS.sid), "id"),
    archiveID: attr(stanza.getChild("stanza-id", NS.sid), "id"),
    timestamp: timestampOf(stamp),
    body: withoutFallback(stanza, body),
    replyTo: attr(stanza.getChild("reply", NS.reply), "id"),
    replaces: attr(stanza.getChild("replace", NS.correct), "id"),
    reactions:
      reactions && attr(reactions, "id")
        ? {
            id: attr(reactions, "id")!,
            keys: reactions
              .getChildren("reaction")
              .map((r) => r.text())
              .filter(Boolean),
          }
        : undefined,
    retracts:
      attr(stanza.getChild("retract", NS.retract), "id") ??
      (fastened?.getChild("retract", NS.retractOld) ? attr(fastened, "id") : undefined),
    receiptRequested: stanza.getChild("request", NS.receipts) !== undefined,
    receivedID: attr(stanza.getChild("received", NS.receipts), "id"),
    markable: stanza.getChild("markable", NS.markers) !== undefined,
    displayedID: attr(stanza.getChild("displayed", NS.markers), "id"),
    chatState: states.find((s) => stanza.getChild(s, NS.chatStates) !== undefined),
    links: stanza.getChildren("x", NS.oob).flatMap((x) => {
      const url = x.getChildText("url")?.trim();
      return url && isWebURL(url) ? [{ url, description: x.getChildText("desc") || undefined }] : [];
    }),
    invite: invite
      ? {
          room: bare(attr(stanza, "from") ?? ""),
          inviter: attr(invite, "from") ?? "",
          password: stanza.getChild("x", NS.mucUser)?.getChildText("password") ?? undefined,
        }
      : direct && attr(direct, "jid")
        ? { room: bare(attr(direct, "jid")!), inviter: attr(stanza, "from") ?? "", password: attr(direct, "password") }
        : undefined,
    subject: subject && body === undefined ? subject.text() : undefined,
  };
}

/** A <delay> stamp as ms since epoch: never in the future (a sender's clock can be anything), undefined if unreadable. */
function timestampOf(stamp: string | undefined): number | undefined {
  if (!stamp) return undefined;
  const at = Date.parse(stamp);
  return Number.isFinite(at) ? Math.min(at, Date.now()) : undefined;
}

/** Only http(s) links that parse, and whose path decodes, become attachments. */
function isWebURL(text: string): boolean {
  try {
    const url = new URL(text);
    decodeURIComponent(url.pathname);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** Drops the part of a body that XEP-0428 marks as fallback for old clients (a quoted reply, a retraction notice). */
function withoutFallback(stanza: Element, body: string | undefined): string | undefined {
  if (body === undefined) return undefined;
  let text = body;
  for (const fallback of stanza.getChildren("fallback", NS.fallback)) {
    if (fallback.attrs.for === NS.retract) return undefined;
    const range = fallback.getChild("body");
    if (fallback.attrs.for === NS.reply && range) {
      const start = Number(range.attrs.start ?? 0);
      const end = Number(range.attrs.end ?? 0);
      // XEP-0426: offsets count Unicode code points.
      const points = [...text];
      text = [...points.slice(0, start), ...points.slice(end)].join("");
    }
  }
  return text;
}

/**
 * The message inside a carbon (XEP-0280) or an archive result (XEP-0313), with where it came from. Carbons are
 * accepted only from the account's own bare JID: anyone else could forge them.
 */
export function unwrap(
  stanza: Element,
  selfBare: string,
):
  | { inner: Element; via: "carbon-sent" | "carbon-received" | "archive"; archiveID?: string; queryID?: string }
  | undefined {
  const from = (stanza.attrs.from as string | undefined) ?? selfBare;
  for (const kind of ["sent", "received"] as const) {
    const carbon = stanza.getChild(kind, NS.carbons);
    if (!carbon) continue;
    if (bare(from) !== selfBare) return undefined;
    const inner = carbon.getChild("forwarded", NS.forward)?.getChild("message");
    return inner ? { inner, via: kind === "sent" ? "carbon-sent" : "carbon-received" } : undefined;
  }
  const result = stanza.getChild("result", NS.mam);
  if (!result) return undefined;
  const forwarded = result.getChild("forwarded", NS.forward);
  const inner = forwarded?.getChild("message");
  if (!inner) return undefined;
  // The archive's timestamp is on the forwarded wrapper; copy it onto the message so parseMessage sees it.
  const delay = forwarded!.getChild("delay", NS.delay);
  if (delay && !inner.getChild("delay", NS.delay))
    inner.append(xml("delay", { xmlns: NS.delay, stamp: delay.attrs.stamp }));
  return {
    inner,
    via: "archive",
    archiveID: result.attrs.id as string,
    queryID: result.attrs.queryid as string | undefined,
  };
}

export function bare(jid: string): string {
  const slash = jid.indexOf("/");
  return (slash < 0 ? jid : jid.slice(0, slash)).toLowerCase();
}

export function resourceOf(jid: string): string | undefined {
  const slash = jid.indexOf("/");
  return slash < 0 ? undefined : jid.slice(slash + 1);
}

export interface OutgoingText {
  to: string;
  type: "chat" | "groupchat";
  id: string;
  body: string;
  replyTo?: { id: string; to: string };
  link?: string;
}

/** A new message: markable, asking for a receipt (1:1 only, as XEP-0184 advises against it in rooms), with origin-id. */
export function textMessage(message: OutgoingText): Element {
  const children: Element[] = [
    xml("body", {}, message.body),
    xml("origin-id", { xmlns: NS.sid, id: message.id }),
    xml("markable", { xmlns: NS.markers }),
  ];
  if (message.type === "chat")
    children.push(xml("request", { xmlns: NS.receipts }), xml("active", { xmlns: NS.chatStates }));
  if (message.replyTo) children.push(xml("reply", { xmlns: NS.reply, to: message.replyTo.to, id: message.replyTo.id }));
  if (message.link) children.push(xml("x", { xmlns: NS.oob }, xml("url", {}, message.link)));
  return xml("message", { to: message.to, type: message.type, id: message.id }, ...children);
}

export function correction(to: string, type: string, id: string, replaces: string, body: string): Element {
  return xml(
    "message",
    { to, type, id },
    xml("body", {}, body),
    xml("replace", { xmlns: NS.correct, id: replaces }),
    xml("origin-id", { xmlns: NS.sid, id }),
  );
}

/** The full set of this account's reactions to a message; the store hint keeps it in archives (Prosody drops it otherwise). */
export function reactionSet(to: string, type: string, id: string, messageID: string, keys: string[]): Element {
  return xml(
    "message",
    { to, type, id },
    xml("reactions", { xmlns: NS.reactions, id: messageID }, ...keys.map((k) => xml("reaction", {}, k))),
    xml("store", { xmlns: NS.hints }),
  );
}

export function retraction(to: string, type: string, id: string, messageID: string): Element {
  return xml(
    "message",
    { to, type, id },
    xml("retract", { xmlns: NS.retract, id: messageID }),
    xml("fallback", { xmlns: NS.fallback, for: NS.retract }),
    xml("body", {}, "This person attempted to retract a previous message, but it's unsupported by your client."),
    xml("store", { xmlns: NS.hints }),
  );
}

export function receipt(to: string, id: string, messageID: string): Element {
  return xml("message", { to, id }, xml("received", { xmlns: NS.receipts, id: messageID }));
}

export function displayed(to: string, type: string, id: string, messageID: string): Element {
  return xml(
    "message",
    { to, type, id },
    xml("displayed", { xmlns: NS.markers, id: messageID }),
    xml("store", { xmlns: NS.hints }),
  );
}

export function chatState(to: string, type: string, state: ChatState): Element {
  return xml("message", { to, type }, xml(state, { xmlns: NS.chatStates }), xml("no-store", { xmlns: NS.hints }));
}
