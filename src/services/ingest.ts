import type { InboundEvent, NetworkChat } from "../bridges/connector.ts";
import { keys, type AccountRecord, type ChatRecord } from "../store/records.ts";
import type { Db } from "../store/db.ts";
import type { Context } from "./context.ts";
import { appendMessage, termsOf } from "./messages.ts";
import { messageID } from "./present.ts";
import { applyReaction } from "./reactions.ts";
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
    upsertChat(ctx, account, event.chat);
    return db.commit();
  }
  const chat =
    db.chats.findNetwork(account.accountID, event.networkChatID) ??
    (event.type === "message"
      ? upsertChat(ctx, account, {
          networkChatID: event.networkChatID,
          type: "single",
          title: event.message.senderName ?? event.message.senderID,
          participants: [{ ...account.user, isSelf: true }, { id: event.message.senderID, fullName: event.message.senderName }],
        })
      : undefined);
  if (!chat) return;
  await db.withChat(chat.no, async () => {
    if (event.type === "message") {
      const m = event.message;
      if ((await db.kv.get<number>(keys.networkMessage(chat.no, m.networkMessageID))) !== undefined) return;
      const replyTo = m.replyTo === undefined ? undefined : await db.kv.get<number>(keys.networkMessage(chat.no, m.replyTo));
      const record = await appendMessage(ctx, chat, {
        senderID: m.senderID,
        senderName: m.senderName,
        ts: m.timestamp,
        type: "TEXT",
        text: m.text,
        isSender: m.isSender === true,
        attachments: m.attachments,
        linkedMessageID: replyTo === undefined ? undefined : messageID(chat, replyTo),
        networkID: m.networkMessageID,
      });
      db.kv.put(keys.networkMessage(chat.no, m.networkMessageID), record.seq);
      return;
    }
    const seq = await db.kv.get<number>(keys.networkMessage(chat.no, event.networkMessageID));
    const message = seq === undefined ? undefined : await db.message(chat.no, seq);
    if (!message) return;
    if (event.type === "edit") {
      message.text = event.text;
      message.editedTs = event.timestamp;
      db.index.add(termsOf(message), [message.ts, chat.no, message.seq]);
    } else if (event.type === "delete") message.deleted = true;
    else applyReaction(message, event.senderID, event.reactionKey, event.removed === true, true);
    await db.putMessage(chat.no, message);
  });
  await db.commit();
}

/** Creates the chat on first sight, or refreshes title and participants. */
export function upsertChat(ctx: Context, account: AccountRecord, network: NetworkChat): ChatRecord {
  const { db } = ctx;
  const existing = db.chats.findNetwork(account.accountID, network.networkChatID);
  if (existing) {
    existing.title = network.title;
    existing.participants = network.participants;
    db.saveChat(existing);
    return existing;
  }
  return createChatRecord(db, account.accountID, network, ctx.now());
}

/** Allocates, stores and lists a new chat with the defaults of a fresh conversation. */
export function createChatRecord(db: Db, accountID: string, network: NetworkChat, lastActivity: number): ChatRecord {
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
    lastReadSeq: -1,
    lastActivity,
    nextSeq: 0,
  };
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
