import type { InboundMessage } from "../bridges/connector.ts";
import { notFound } from "../errors.ts";
import { LIMITS } from "../schema/limits.ts";
import type { Reaction } from "../schema/wire.ts";
import { keys, previewOf, type ChatRecord, type MessageRecord } from "../store/records.ts";
import { ALL_TERM, mediaTerm, tokenize } from "../store/search-index.ts";
import type { Context } from "./context.ts";
import { messageID, parseMessageID } from "./present.ts";

/**
 * How a stored message is made, found, indexed, counted and reacted to: the record-level steps that the API's
 * operations (messages.ts, reactions.ts, chats.ts) and the inbound path (ingest.ts, history.ts) share. Nothing here
 * talks to a network or announces anything; callers hold the chat lock and commit.
 */

/** Terms a message is indexed under: its words, every-message, and its media kinds. */
export function termsOf(m: MessageRecord): string[] {
  const terms = tokenize(m.text);
  terms.push(ALL_TERM);
  if (m.text && /https?:\/\/\S/i.test(m.text)) terms.push(mediaTerm("link"));
  for (const a of m.attachments ?? []) {
    terms.push(mediaTerm("any"));
    terms.push(mediaTerm(a.type === "img" ? "image" : a.type === "video" ? "video" : "file"));
  }
  return [...new Set(terms)];
}

/** Finds a message by API ID, sortKey-free pending ID (the same thing here) or network message ID. */
export async function findMessage(ctx: Context, chat: ChatRecord, id: string): Promise<MessageRecord> {
  const message = await lookupMessage(ctx, chat, id);
  if (!message || message.deleted) throw notFound(`message ${id} in chat ${chat.id}`);
  return message;
}

/**
 * The stored record that `id` names in this chat, deleted or not: an API ID (`<chat no>.<seq>`) of this chat, or a
 * network message ID. An API ID of another chat names nothing here. Callers turn a miss into their own error.
 */
export async function lookupMessage(ctx: Context, chat: ChatRecord, id: string): Promise<MessageRecord | undefined> {
  const parsed = parseMessageID(id);
  if (parsed) return parsed.chatNo === chat.no ? ctx.db.message(chat.no, parsed.seq) : undefined;
  // A network ID is looked up only if it could be one: IDs are bounded like every ID the API takes.
  if (new TextEncoder().encode(id).length > LIMITS.idBytes) return undefined;
  const seq = await ctx.db.kv.get<number>(keys.networkMessage(chat.no, id));
  return seq === undefined ? undefined : ctx.db.message(chat.no, seq);
}

/**
 * Appends a message to a chat and updates the chat (activity, preview, unread, reminder). Caller holds the chat
 * lock and commits.
 */
export async function appendMessage(
  ctx: Context,
  chat: ChatRecord,
  message: Omit<MessageRecord, "seq">,
): Promise<MessageRecord> {
  const record: MessageRecord = { ...message, seq: chat.nextSeq };
  await ctx.db.putMessage(chat.no, record);
  ctx.db.chats.update(chat, (c) => {
    c.nextSeq = record.seq + 1;
    c.lastActivity = Math.max(c.lastActivity, record.ts);
    c.preview = previewOf(record);
    if (record.isSender) {
      c.lastReadSeq = record.seq;
      c.unreadCount = 0;
      c.markedUnread = false;
    } else {
      c.unreadCount++;
      if (c.reminder?.dismissOnIncomingMessage) c.reminder = undefined;
    }
  });
  ctx.db.saveChat(chat);
  ctx.db.index.add(termsOf(record), [record.ts, chat.no, record.seq]);
  return record;
}

/**
 * How many messages from others are unread after a read position (what unreadCount shows); the chat's own by
 * default. Callers that move the position count first and then change the chat in one step with saveChat: a
 * commit that another request triggers during the count must not store (or snapshot) half a change.
 */
export async function countUnread(ctx: Context, chat: ChatRecord, lastReadSeq = chat.lastReadSeq): Promise<number> {
  let n = 0;
  for (let seq = lastReadSeq + 1; seq < chat.nextSeq; seq++) {
    const m = await ctx.db.message(chat.no, seq);
    if (m && !m.deleted && !m.isSender) n++;
  }
  return n;
}

/** A network's message as a stored record (its reply resolved to the stored message it answers, if any). */
export async function inboundRecord(
  ctx: Context,
  chat: ChatRecord,
  m: InboundMessage,
): Promise<Omit<MessageRecord, "seq">> {
  const replyTo =
    m.replyTo === undefined ? undefined : await ctx.db.kv.get<number>(keys.networkMessage(chat.no, m.replyTo));
  return {
    senderID: m.senderID,
    senderName: m.senderName,
    ts: m.timestamp,
    type: m.type ?? "TEXT",
    text: m.text,
    editedTs: m.editedTimestamp,
    isSender: m.isSender === true,
    attachments: m.attachments,
    linkedMessageID: replyTo === undefined ? undefined : messageID(chat, replyTo),
    networkID: m.networkMessageID,
  };
}

/** Where a reaction the network identified lives, so that deleting that reaction later removes it. */
export interface NetworkReaction {
  seq: number;
  senderID: string;
  reactionKey: string;
}

const EMOJI = /\p{Extended_Pictographic}/u;

/** Adds or removes one participant's reaction on a stored message (caller holds the chat lock). */
export function applyReaction(
  message: MessageRecord,
  participantID: string,
  reactionKey: string,
  removed: boolean,
  multiple: boolean,
) {
  const id = multiple ? `${participantID}${reactionKey}` : participantID;
  const rest = (message.reactions ?? []).filter((r) => r.id !== id);
  if (!removed) {
    const reaction: Reaction = { id, participantID, reactionKey, emoji: EMOJI.test(reactionKey) };
    rest.push(reaction);
  }
  message.reactions = rest;
}
