import type { Chat, Message, User } from "../schema/wire.ts";
import type { Db } from "../store/db.ts";
import { firstSeqOf, type ChatRecord, type MessageRecord } from "../store/records.ts";
import { sortKeyOf } from "./cursor.ts";

/** Turns stored records into wire objects. Message IDs are `<chat no>.<seq>`: unique on the device and stable. */
export function messageID(chat: ChatRecord, seq: number): string {
  return `${chat.no}.${seq}`;
}

export function parseMessageID(id: string): { chatNo: number; seq: number } | undefined {
  const m = /^(\d{1,9})\.(\d{1,12})$/.exec(id);
  return m ? { chatNo: Number(m[1]), seq: Number(m[2]) } : undefined;
}

export function presentMessage(chat: ChatRecord, m: MessageRecord): Message {
  const out: Message = {
    id: messageID(chat, m.seq),
    chatID: chat.id,
    accountID: chat.accountID,
    senderID: m.senderID,
    sortKey: sortKeyOf(m.seq),
    timestamp: new Date(m.ts).toISOString(),
    type: m.type,
    isSender: m.isSender,
    isUnread: !m.isSender && m.seq > chat.lastReadSeq,
  };
  if (m.senderName !== undefined) out.senderName = m.senderName;
  if (m.text !== undefined) out.text = m.text;
  if (m.attachments?.length) out.attachments = m.attachments;
  if (m.reactions?.length) out.reactions = m.reactions;
  if (m.linkedMessageID !== undefined) out.linkedMessageID = m.linkedMessageID;
  if (m.editedTs !== undefined) out.editedTimestamp = new Date(m.editedTs).toISOString();
  if (m.sendStatus !== undefined)
    out.sendStatus = {
      status: m.sendStatus === "sent" ? "SUCCESS" : m.sendStatus === "pending" ? "PENDING" : "FAIL_PERMANENT",
      timestamp: new Date(m.statusTs ?? m.ts).toISOString(),
      ...(m.statusText ? { message: m.statusText } : {}),
    };
  if (m.deliveredTo?.length && out.sendStatus) out.sendStatus.deliveredToUsers = m.deliveredTo;
  if (m.seenBy) out.seen = presentSeen(chat, m.seenBy);
  return out;
}

/** A single chat's receipt is the other person's read time; a group's names each reader. */
function presentSeen(chat: ChatRecord, seenBy: Record<string, number>): string | Record<string, string> {
  const entries = Object.entries(seenBy).map(([user, ts]) => [user, new Date(ts).toISOString()] as const);
  if (chat.type === "single") return entries.reduce((latest, [, at]) => (at > latest ? at : latest), entries[0][1]);
  return Object.fromEntries(entries);
}

export function presentChat(
  db: Db,
  chat: ChatRecord,
  options: { maxParticipants?: number; preview?: boolean } = {},
): Chat {
  const max = options.maxParticipants ?? -1;
  const all = chat.participants;
  const items = (max < 0 ? all : all.slice(0, max)).map(presentUser);
  const account = db.account(chat.accountID);
  const out: Chat = {
    id: chat.id,
    localChatID: String(chat.no),
    accountID: chat.accountID,
    network: account?.networkName ?? "Unknown",
    title: chat.title,
    type: chat.type,
    participants: {
      items,
      hasMore: items.length < Math.max(all.length, chat.participantCount ?? 0),
      total: Math.max(all.length, chat.participantCount ?? 0),
    },
    lastActivity: new Date(chat.lastActivity).toISOString(),
    unreadCount: chat.unreadCount,
    isArchived: chat.isArchived,
    isMuted: chat.isMuted,
    isPinned: chat.isPinned,
    isLowPriority: chat.isLowPriority,
    isMarkedUnread: chat.markedUnread === true,
    draft: chat.draft ?? null,
    labelIDs: chat.labelIDs ?? [],
  };
  if (chat.description !== undefined) out.description = chat.description;
  if (chat.imgURL !== undefined) out.imgURL = chat.imgURL;
  if (chat.messageExpirySeconds !== undefined) out.messageExpirySeconds = chat.messageExpirySeconds;
  if (chat.mutedUntil !== undefined) out.mutedUntil = new Date(chat.mutedUntil).toISOString();
  if (chat.lastReadSeq >= firstSeqOf(chat)) out.lastReadMessageSortKey = sortKeyOf(chat.lastReadSeq);
  if (chat.reminder)
    out.reminder = {
      remindAt: new Date(chat.reminder.at).toISOString(),
      remindAtMs: chat.reminder.at,
      dismissOnIncomingMessage: chat.reminder.dismissOnIncomingMessage,
      isFired: chat.reminder.firedAt !== undefined,
      ...(chat.reminder.firedAt !== undefined ? { firedAt: new Date(chat.reminder.firedAt).toISOString() } : {}),
    };
  if (options.preview && chat.preview) out.preview = presentMessage(chat, chat.preview);
  return out;
}

/**
 * A person as newer clients read them: `cannotMessage` always said (false unless the network says otherwise: the
 * connector contract lets a network mark a user it has no path to).
 */
export function presentUser(user: User): User {
  return user.cannotMessage === undefined ? { ...user, cannotMessage: false } : user;
}

/** A response body already serialised (chat lists splice cached per-chat JSON instead of re-serialising). */
export class JsonText {
  constructor(readonly text: string | Uint8Array) {}
}

/** The object behind a JsonText, for callers that reshape it (the /v0 layer, MCP tools). */
export function fromJsonText<T>(body: JsonText): T {
  return JSON.parse(typeof body.text === "string" ? body.text : new TextDecoder().decode(body.text)) as T;
}

/** How a chat shows beside search results: its first 20 participants, no preview. */
export const RESULT_CHAT = { maxParticipants: 20 };

/** The search-result form of a chat (RESULT_CHAT) as JSON, cached per chat and dropped with chatListJSON's. */
export function chatResultJSON(db: Db, chat: ChatRecord): string {
  let text = db.presentedInResults.get(chat.no);
  if (text === undefined) {
    text = JSON.stringify(presentChat(db, chat, RESULT_CHAT));
    db.presentedInResults.set(chat.no, text);
  }
  return text;
}

/**
 * The list form of a chat (all participants, with preview) as JSON, cached per chat. `Db.saveChat` — the one way
 * every chat change is persisted — drops the entry, so the cache can never serve a stale chat.
 */
export function chatListJSON(db: Db, chat: ChatRecord): string {
  let text = db.presented.get(chat.no);
  if (text === undefined) {
    text = JSON.stringify(presentChat(db, chat, { preview: true }));
    db.presented.set(chat.no, text);
  }
  return text;
}
