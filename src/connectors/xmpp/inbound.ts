import type { Element } from "@xmpp/xml";
import type { InboundEvent, InboundMessage } from "../../bridges/connector.ts";
import { attachmentForLink } from "./media.ts";
import type { Room } from "./muc.ts";
import { bare, NS, parseMessage, resourceOf, unwrap, type ParsedMessage } from "./stanzas.ts";

/** What the translation needs to know about the account. */
export interface InboundContext {
  selfBare: string;
  mediaKey: string;
  rooms: Map<string, Room>;
  /** IDs of messages this client sent (a room reflects them back; they are already stored). */
  sentHere: Set<string>;
}

/** A message stanza in the common model: the events to emit, plus what the client must act on itself. */
export interface Translation {
  events: InboundEvent[];
  invite?: { room: string; inviter: string; password?: string };
  /** Send a delivery receipt (XEP-0184) for this message to this JID. */
  ackTo?: { jid: string; id: string };
}

/**
 * Turns a message stanza (live, carbon or archived) into contract events. `archived` marks history: it never
 * produces typing notices or receipts back to the sender.
 */
export async function translate(stanza: Element, context: InboundContext, archived = false): Promise<Translation> {
  let message = stanza;
  let sentByMe = false;
  // An archived message comes already unwrapped; a live one may be a carbon. Either way, what is left must not be
  // a wrapper itself: anyone can put a carbon or an archive result inside a message, and the archive keeps it.
  if (!archived) {
    const wrapped = unwrap(stanza, context.selfBare);
    if (wrapped?.via === "archive") return { events: [] };
    if (wrapped) {
      message = wrapped.inner;
      sentByMe = wrapped.via === "carbon-sent";
    } else if (isWrapper(stanza)) return { events: [] }; // a carbon from someone else
  }
  if (isWrapper(message)) return { events: [] };
  const parsed = parseMessage(message);
  if (parsed.type === "error") return { events: [] };
  // An invitation comes from the room (mediated) or the inviter (direct); the account's own invitations to others
  // come back through carbons and the archive and are not for it.
  if (parsed.invite)
    return archived || sentByMe || bare(parsed.from) === context.selfBare || context.rooms.has(parsed.invite.room)
      ? { events: [] }
      : { events: [], invite: parsed.invite };
  const where = locate(parsed, context, sentByMe);
  if (!where) return { events: [] };
  const { chatID, senderID, isSender } = where;
  if (isSender && parsed.id && context.sentHere.has(parsed.id)) return { events: [] };
  const events: InboundEvent[] = [];
  const timestamp = parsed.timestamp ?? Date.now();
  if (parsed.replaces && parsed.body !== undefined)
    events.push({
      type: "edit",
      networkChatID: chatID,
      networkMessageID: parsed.replaces,
      text: parsed.body,
      timestamp,
      senderID,
    });
  else if (parsed.retracts)
    events.push({ type: "delete", networkChatID: chatID, networkMessageID: parsed.retracts, senderID });
  else if (parsed.reactions)
    events.push({
      type: "reactions",
      networkChatID: chatID,
      networkMessageID: parsed.reactions.id,
      senderID,
      reactionKeys: parsed.reactions.keys,
    });
  else if ((parsed.body !== undefined || parsed.links.length) && parsed.id) {
    events.push({
      type: "message",
      networkChatID: chatID,
      message: await inboundMessage(parsed, { senderID, isSender, timestamp, senderName: where.senderName }, context),
    });
  }
  if (parsed.receivedID && !isSender)
    events.push({
      type: "receipt",
      networkChatID: chatID,
      networkMessageID: parsed.receivedID,
      userID: senderID,
      kind: "delivered",
      timestamp,
    });
  if (parsed.displayedID) {
    if (isSender) events.push({ type: "read", networkChatID: chatID, networkMessageID: parsed.displayedID });
    else
      events.push({
        type: "receipt",
        networkChatID: chatID,
        networkMessageID: parsed.displayedID,
        userID: senderID,
        kind: "read",
        timestamp,
      });
  }
  if (parsed.chatState && !archived && !isSender)
    events.push({
      type: "typing",
      networkChatID: chatID,
      senderID,
      state: parsed.chatState === "composing" ? "typing" : "paused",
      ...(parsed.chatState === "composing" ? { timeoutMs: 30_000 } : {}),
    });
  const ackTo =
    parsed.receiptRequested && !archived && !isSender && parsed.type !== "groupchat" && parsed.id
      ? { jid: parsed.from, id: parsed.id }
      : undefined;
  return { events, ackTo };
}

/** The message as the contract has it; a link the body only repeats (how files are shared) becomes an attachment. */
export async function inboundMessage(
  parsed: ParsedMessage,
  who: { senderID: string; senderName?: string; isSender: boolean; timestamp: number },
  context: Pick<InboundContext, "mediaKey">,
): Promise<InboundMessage> {
  let text = parsed.body;
  const attachments = [];
  for (const link of parsed.links) {
    attachments.push(await attachmentForLink(context.mediaKey, link.url, link.description));
    if (text !== undefined) text = text.replace(link.url, "").trim() || undefined;
  }
  return {
    networkMessageID: parsed.id!,
    senderID: who.senderID,
    ...(who.senderName ? { senderName: who.senderName } : {}),
    timestamp: who.timestamp,
    ...(text !== undefined ? { text } : {}),
    isSender: who.isSender,
    ...(parsed.replyTo ? { replyTo: parsed.replyTo } : {}),
    ...(attachments.length ? { attachments } : {}),
  };
}

/** Which chat a message belongs to and who sent it: a room and an occupant, or the other person of a 1:1 chat. */
export function locate(
  parsed: Pick<ParsedMessage, "from" | "to" | "type">,
  context: Pick<InboundContext, "selfBare" | "rooms">,
  sentByMe = false,
) {
  const fromBare = bare(parsed.from);
  const room =
    context.rooms.get(fromBare) ?? (parsed.type !== "groupchat" ? context.rooms.get(bare(parsed.to)) : undefined);
  if (room && parsed.type !== "groupchat") {
    // A private message with a room member (XEP-0045 §7.5): its own chat, named by the member's room address.
    const incoming = fromBare === room.jid;
    const occupantJID = incoming ? parsed.from : parsed.to;
    if (!resourceOf(occupantJID)) return undefined;
    return {
      chatID: occupantJID,
      senderID: incoming ? occupantJID : context.selfBare,
      senderName: incoming ? resourceOf(occupantJID) : undefined,
      isSender: !incoming,
    };
  }
  if (room) {
    const nick = resourceOf(parsed.from);
    if (!nick) return undefined; // the room itself speaking (subject, status)
    const occupant = room.occupants.get(nick);
    // Only our own nickname (confirmed by the room's status 110) is us: an occupant's claimed JID is not proof.
    const isSender = nick === room.nick;
    return {
      chatID: room.jid,
      senderID: isSender ? context.selfBare : (occupant?.jid ?? parsed.from),
      senderName: nick,
      isSender,
    };
  }
  if (parsed.type === "groupchat") return undefined; // a room this account has left
  const isSender = sentByMe || fromBare === context.selfBare;
  const peer = isSender ? bare(parsed.to || context.selfBare) : fromBare;
  if (!peer) return undefined;
  return {
    chatID: peer,
    senderID: isSender ? context.selfBare : peer,
    senderName: undefined as string | undefined,
    isSender,
  };
}

/** Carbons (XEP-0280) and archive results (XEP-0313) wrap other messages. */
function isWrapper(message: Element): boolean {
  return (
    message.getChild("sent", NS.carbons) !== undefined ||
    message.getChild("received", NS.carbons) !== undefined ||
    message.getChild("result", NS.mam) !== undefined
  );
}
