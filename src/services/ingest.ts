import type { InboundEvent, InboundMessage, NetworkChat } from "../bridges/connector.ts";
import {
  HISTORY_ROOM,
  firstSeqOf,
  keys,
  type AccountRecord,
  type ChatRecord,
  type MessageRecord,
} from "../store/records.ts";
import type { Db } from "../store/db.ts";
import type { Context } from "./context.ts";
import {
  appendMessage,
  applyReaction,
  countUnread,
  inboundRecord,
  termsOf,
  type NetworkReaction,
} from "./message-records.ts";
import { announceTyping } from "./typing.ts";

/**
 * Turns what a connector reports into stored state. Idempotent per network message ID, so a connector may
 * redeliver (e.g. after a reconnect) without duplicating messages. Typing notices are not stored: they go out live.
 */
export async function ingest(ctx: Context, account: AccountRecord, event: InboundEvent): Promise<void> {
  const { db } = ctx;
  if (event.type === "typing") return announceTyping(ctx, account, event);
  if (event.type === "status") {
    account.status = event.status;
    account.statusText = event.statusText;
    db.saveAccounts();
    return db.commit();
  }
  if (event.type === "chat") {
    const chat = upsertChat(ctx, account, event.chat);
    const count = event.chat.unreadCount;
    // Under the chat's lock: after the messages handed over before it, which would otherwise count on top.
    if (count !== undefined)
      await db.withChat(chat.no, async () => {
        if (chat.unreadCount === count) return;
        chat.unreadCount = count;
        db.saveChat(chat);
      });
    return db.commit();
  }
  const chat =
    db.chats.findNetwork(account.accountID, event.networkChatID) ??
    (event.type === "message"
      ? upsertChat(ctx, account, {
          networkChatID: event.networkChatID,
          type: "single",
          title: event.message.senderName ?? event.message.senderID,
          participants: [
            { ...account.user, isSelf: true },
            { id: event.message.senderID, fullName: event.message.senderName },
          ],
        })
      : undefined);
  if (!chat) return;
  if (event.type === "read") return readOnAnotherDevice(ctx, chat, event.networkMessageID);
  await db.withChat(chat.no, async () => {
    if (event.type === "message") {
      const m = event.message;
      if ((await db.kv.get<number>(keys.networkMessage(chat.no, m.networkMessageID))) !== undefined) return;
      const record = await appendMessage(ctx, chat, await inboundRecord(ctx, chat, m));
      db.kv.put(keys.networkMessage(chat.no, m.networkMessageID), record.seq);
      return;
    }
    if (event.type === "revision") return reviseMessage(ctx, chat, event.message);
    if (event.type === "delete" && (await removeNetworkReaction(ctx, chat, event.networkMessageID, event.senderID)))
      return;
    const seq = await db.kv.get<number>(keys.networkMessage(chat.no, event.networkMessageID));
    const message = seq === undefined ? undefined : await db.message(chat.no, seq);
    if (!message || message.deleted) return;
    if (
      (event.type === "edit" || event.type === "delete") &&
      event.senderID !== undefined &&
      event.senderID !== message.senderID
    )
      return;
    if (event.type === "receipt") return applyReceipt(ctx, chat, message, event);
    if (event.type === "edit") {
      // A network that hands over whole messages repeats an edit with every later change: the same edit is no change.
      if (message.text === event.text && message.editedTs === event.timestamp) return;
      message.text = event.text;
      message.editedTs = event.timestamp;
      db.index.add(termsOf(message), [message.ts, chat.no, message.seq]);
    } else if (event.type === "delete") message.deleted = true;
    else if (event.type === "message-reactions") {
      const key = (r: { senderID?: string; participantID?: string; reactionKey: string }) =>
        `${r.senderID ?? r.participantID}\n${r.reactionKey}`;
      const had = message.reactions ?? [];
      const wanted = new Set(event.reactions.map(key));
      const present = new Set(had.map(key));
      if (had.length === wanted.size && [...wanted].every((k) => present.has(k))) return;
      for (const r of had) if (!wanted.has(key(r))) applyReaction(message, r.participantID, r.reactionKey, true, true);
      for (const r of event.reactions)
        if (!present.has(key(r))) applyReaction(message, r.senderID, r.reactionKey, false, true);
    } else if (event.type === "reactions") {
      const had = (message.reactions ?? []).filter((r) => r.participantID === event.senderID).map((r) => r.reactionKey);
      for (const key of had)
        if (!event.reactionKeys.includes(key)) applyReaction(message, event.senderID, key, true, true);
      for (const key of event.reactionKeys)
        if (!had.includes(key)) applyReaction(message, event.senderID, key, false, true);
    } else {
      applyReaction(message, event.senderID, event.reactionKey, event.removed === true, true);
      if (event.networkReactionID && !event.removed)
        db.kv.put(keys.networkReaction(chat.no, event.networkReactionID), {
          seq: message.seq,
          senderID: event.senderID,
          reactionKey: event.reactionKey,
        } satisfies NetworkReaction);
    }
    await db.putMessage(chat.no, message);
  });
  await db.commit();
}

/**
 * A stored message's content as the network reads it now (a Matrix message decrypted once its key came): the new
 * text is searchable; what other events changed since (reactions, deletion, an edit's time) stays. Caller holds the
 * chat's lock.
 */
async function reviseMessage(ctx: Context, chat: ChatRecord, m: InboundMessage) {
  const { db } = ctx;
  const seq = await db.kv.get<number>(keys.networkMessage(chat.no, m.networkMessageID));
  const message = seq === undefined ? undefined : await db.message(chat.no, seq);
  // Only the sender's own message is revised: a revision names it by ID, and an ID alone is the network's word.
  if (!message || message.deleted || message.senderID !== m.senderID) return;
  const now = await inboundRecord(ctx, chat, m);
  message.type = now.type;
  message.text = now.text;
  message.attachments = now.attachments;
  message.linkedMessageID = now.linkedMessageID;
  db.index.add(termsOf(message), [message.ts, chat.no, message.seq]);
  await db.putMessage(chat.no, message);
}

/** Creates the chat on first sight, or refreshes title and participants. */
export function upsertChat(ctx: Context, account: AccountRecord, network: NetworkChat): ChatRecord {
  const { db } = ctx;
  const existing = db.chats.findNetwork(account.accountID, network.networkChatID);
  if (existing) {
    // A chat can change kind on the network (Matrix: a room added to or dropped from the account's DMs).
    existing.type = network.type;
    existing.title = network.title;
    existing.participants = network.participants;
    applyNetworkState(existing, network);
    db.saveChat(existing);
    return existing;
  }
  const historyRoom = ctx.bridges.attached(account.accountID)?.fetchHistory !== undefined ? HISTORY_ROOM : 0;
  const chat = createChatRecord(db, account.accountID, network, ctx.now(), historyRoom);
  if (applyNetworkState(chat, network)) db.saveChat(chat);
  return chat;
}

/** What the network keeps for the chat (picture, member count, flags), where it said; true if any changed. */
function applyNetworkState(chat: ChatRecord, network: NetworkChat): boolean {
  const before = JSON.stringify([
    chat.imgURL,
    chat.participantCount,
    chat.isPinned,
    chat.isMuted,
    chat.isLowPriority,
    chat.isArchived,
  ]);
  if (network.imgURL !== undefined) chat.imgURL = network.imgURL || undefined;
  if (network.participantCount !== undefined) chat.participantCount = network.participantCount;
  if (network.isPinned !== undefined) chat.isPinned = network.isPinned;
  if (network.isLowPriority !== undefined) chat.isLowPriority = network.isLowPriority;
  if (network.isArchived !== undefined) chat.isArchived = network.isArchived;
  if (network.isMuted !== undefined && network.isMuted !== chat.isMuted) {
    chat.isMuted = network.isMuted;
    chat.mutedUntil = undefined;
  }
  return (
    before !==
    JSON.stringify([
      chat.imgURL,
      chat.participantCount,
      chat.isPinned,
      chat.isMuted,
      chat.isLowPriority,
      chat.isArchived,
    ])
  );
}

/** A delete naming a reaction the network identified (`networkReactionID`) removes that reaction; false if it names none. */
async function removeNetworkReaction(
  ctx: Context,
  chat: ChatRecord,
  networkID: string,
  senderID: string | undefined,
): Promise<boolean> {
  const key = keys.networkReaction(chat.no, networkID);
  const reaction = await ctx.db.kv.get<NetworkReaction>(key);
  if (!reaction) return false;
  if (senderID !== undefined && senderID !== reaction.senderID) return true;
  ctx.db.kv.remove(key);
  const message = await ctx.db.message(chat.no, reaction.seq);
  if (!message || message.deleted) return true;
  applyReaction(message, reaction.senderID, reaction.reactionKey, true, true);
  await ctx.db.putMessage(chat.no, message);
  return true;
}

/** Allocates, stores and lists a new chat with the defaults of a fresh conversation. */
export function createChatRecord(
  db: Db,
  accountID: string,
  network: NetworkChat,
  lastActivity: number,
  firstSeq = 0,
): ChatRecord {
  const no = db.allocateChatNo();
  const chat: ChatRecord = {
    no,
    id: chatIDFor(accountID, network.networkChatID, no),
    accountID,
    networkChatID: network.networkChatID,
    type: network.type,
    title: network.title,
    participants: network.participants,
    isArchived: false,
    isMuted: false,
    isPinned: false,
    isLowPriority: false,
    unreadCount: 0,
    lastReadSeq: firstSeq - 1,
    lastActivity,
    nextSeq: firstSeq,
  };
  if (firstSeq > 0) chat.firstSeq = firstSeq;
  db.chats.insert(chat);
  db.saveChat(chat);
  return chat;
}

/** Chat IDs look like the spec's (`!<opaque>:<server>`): a hash of account and network ID plus the local number. */
export function chatIDFor(accountID: string, networkChatID: string, no: number): string {
  let h = 0x811c9dc5;
  const text = `${accountID}\n${networkChatID}`;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return `!${(h >>> 0).toString(36)}${no.toString(36)}:${accountID.replace(/[^A-Za-z0-9._-]/g, "-")}.inboxd`;
}

/**
 * A delivery or read receipt for one of this account's messages. A read receipt also covers the account's earlier
 * messages up to one that person had already read (bounded: receipts for ancient messages stop there).
 */
async function applyReceipt(
  ctx: Context,
  chat: ChatRecord,
  message: MessageRecord,
  event: Extract<InboundEvent, { type: "receipt" }>,
) {
  if (event.kind === "delivered") {
    if (message.deliveredTo?.includes(event.userID)) return;
    message.deliveredTo = [...(message.deliveredTo ?? []), event.userID];
    return ctx.db.putMessage(chat.no, message);
  }
  for (let seq = message.seq, scanned = 0; seq >= firstSeqOf(chat) && scanned < RECEIPT_REACH; seq--, scanned++) {
    const m = seq === message.seq ? message : await ctx.db.message(chat.no, seq);
    if (!m || m.deleted || !m.isSender) continue;
    if (m.seenBy?.[event.userID] !== undefined) break;
    m.seenBy = { ...m.seenBy, [event.userID]: event.timestamp };
    await ctx.db.putMessage(chat.no, m);
  }
}
const RECEIPT_REACH = 200;

/** The account read the chat elsewhere: same bookkeeping as a local mark-read, without telling the network again. */
async function readOnAnotherDevice(ctx: Context, chat: ChatRecord, networkMessageID: string) {
  await ctx.db.withChat(chat.no, async () => {
    const seq = await ctx.db.kv.get<number>(keys.networkMessage(chat.no, networkMessageID));
    if (seq === undefined || seq <= chat.lastReadSeq) return;
    const unreadCount = await countUnread(ctx, chat, seq);
    Object.assign(chat, { lastReadSeq: seq, unreadCount, markedUnread: false });
    ctx.db.saveChat(chat);
  });
  await ctx.db.commit();
}
