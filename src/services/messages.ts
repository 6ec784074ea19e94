import { ApiError, badRequest, clip, conflict, unprocessable } from "../errors.ts";
import type { Message, Page } from "../schema/wire.ts";
import { CHUNK_SIZE, firstSeqOf, keys, previewOf, type ChatRecord, type MessageRecord } from "../store/records.ts";
import { callNetwork, refuseReadOnly, requireChat, unsupported, type Context } from "./context.ts";
import { attachmentFor, openAsset, takeUpload } from "./assets.ts";
import type { AssetRecord } from "../store/records.ts";
import type { Attachment } from "../schema/wire.ts";
import { isSortKey, seqOfSortKey, sortKeyOf } from "./cursor.ts";
import { messageID, parseMessageID, presentMessage } from "./present.ts";
import { canFetchOlderHistory, fetchOlderHistory } from "./history.ts";
import { appendMessage, findMessage, lookupMessage, termsOf } from "./message-records.ts";

export const MESSAGE_PAGE = 20;

/**
 * A chat's messages, newest first, MESSAGE_PAGE at a time, from `cursor` (exclusive) in `direction`. The cursor is
 * a sortKey or the ID of a message in the chat (see `cursorSeq`).
 */
export async function listMessages(
  ctx: Context,
  chatID: string,
  cursor: string | undefined,
  direction: "before" | "after" | undefined,
): Promise<Page<Message>> {
  const chat = requireChat(ctx, chatID);
  const dir = direction ?? "before";
  const at = cursor === undefined ? undefined : await cursorSeq(ctx, chat, cursor);
  const items: MessageRecord[] = [];
  let hasMore = false;
  if (dir === "before") {
    let seq = at === undefined ? chat.nextSeq - 1 : Math.min(at - 1, chat.nextSeq - 1);
    for (; ; seq--) {
      if (seq < firstSeqOf(chat)) {
        // Past the oldest stored message: a full page only needs to know whether the network has more.
        if (items.length === MESSAGE_PAGE) {
          hasMore = canFetchOlderHistory(ctx, chat);
          break;
        }
        if (seq !== firstSeqOf(chat) - 1 || !(await fetchOlderHistory(ctx, chat))) break;
      }
      const m = await ctx.db.message(chat.no, seq);
      if (!m || m.deleted) continue;
      if (items.length === MESSAGE_PAGE) {
        hasMore = true;
        break;
      }
      items.push(m);
    }
  } else {
    let seq = at === undefined ? firstSeqOf(chat) : at + 1;
    for (; seq < chat.nextSeq; seq++) {
      const m = await ctx.db.message(chat.no, seq);
      if (!m || m.deleted) continue;
      if (items.length === MESSAGE_PAGE) {
        hasMore = true;
        break;
      }
      items.push(m);
    }
    items.reverse();
  }
  return {
    items: items.map((m) => presentMessage(chat, m)),
    hasMore,
    oldestCursor: items.length ? sortKeyOf(items[items.length - 1].seq) : null,
    newestCursor: items.length ? sortKeyOf(items[0].seq) : null,
  };
}

/**
 * The position a message-list cursor stands for. Its three forms are told apart by shape alone, so none can be taken
 * for another:
 * - digits only: a sortKey — what `oldestCursor`/`newestCursor` and every message's `sortKey` are, and what SDK
 *   4.2.x pages with. A position, not a message: it stays valid after its message is deleted.
 * - `<chat no>.<seq>`: a message's API ID (a pending message's ID is the same ID). The dot never occurs in a sortKey,
 *   nor in other endpoints' cursors (base64url). The vendor CLI pages "older than this message ID" this way.
 * - anything else: the network's own ID of a message in this chat, as `GET …/messages/{id}` accepts it. inboxd
 *   never hands network IDs out; one that happens to look like the first two forms reads as them.
 * A message cursor must name a listed message of this chat: one of another chat, a deleted one, or no message at
 * all is a 400 that says which, never a page from somewhere else.
 */
async function cursorSeq(ctx: Context, chat: ChatRecord, cursor: string): Promise<number> {
  if (isSortKey(cursor)) return seqOfSortKey(cursor);
  const quoted = clip(cursor);
  const parsed = parseMessageID(cursor);
  if (parsed && parsed.chatNo !== chat.no) {
    const other = ctx.db.chats.get(parsed.chatNo);
    if (other && (await ctx.db.message(other.no, parsed.seq)))
      throw badCursor(
        "message_in_another_chat",
        `cursor ${quoted} is a message of another chat (${other.id}), not of chat ${chat.id}`,
      );
    throw badCursor("unknown_message", `cursor ${quoted} is not the ID of a message in chat ${chat.id}`);
  }
  const message = await lookupMessage(ctx, chat, cursor);
  if (message?.deleted)
    throw badCursor(
      "message_deleted",
      `cursor ${quoted} is a deleted message of chat ${chat.id}: page from a message that is still listed`,
    );
  if (message) return message.seq;
  if (parsed) throw badCursor("unknown_message", `cursor ${quoted} is not the ID of a message in chat ${chat.id}`);
  throw badCursor(
    "invalid_cursor",
    `invalid cursor ${clip(cursor, 40)}: expected a page's oldestCursor or newestCursor, a message's sortKey, or the ID of a message in chat ${chat.id}`,
  );
}

const badCursor = (code: string, message: string) =>
  badRequest(message, [{ code, message, path: ["query", "cursor"] }]);

export async function getMessage(ctx: Context, chatID: string, id: string): Promise<Message> {
  const chat = requireChat(ctx, chatID);
  return presentMessage(chat, await findMessage(ctx, chat, id));
}

export interface SendInput {
  text?: string;
  replyToMessageID?: string;
  attachment?: {
    uploadID: string;
    fileName?: string;
    mimeType?: string;
    duration?: number;
    size?: { width: number; height: number };
    type?: string;
  };
}

export async function sendMessage(
  ctx: Context,
  chatID: string,
  input: SendInput,
): Promise<{ chatID: string; pendingMessageID: string }> {
  const chat = requireChat(ctx, chatID);
  if (!input.attachment && (!input.text || input.text.trim() === ""))
    throw badRequest("text or an attachment is required", [
      { code: "required", message: "text must not be empty", path: ["body", "text"] },
    ]);
  const client = ctx.bridges.client(chat.accountID);
  refuseReadOnly(client, chat);
  const account = ctx.db.account(chat.accountID)!;
  let replyTo: MessageRecord | undefined;
  if (input.replyToMessageID) {
    replyTo = await findMessage(ctx, chat, input.replyToMessageID).catch(() => {
      throw unprocessable(`replyToMessageID ${input.replyToMessageID} is not a message of this chat`, [
        "body",
        "replyToMessageID",
      ]);
    });
  }
  let sent: { attachment: Attachment; messageType: MessageRecord["type"]; asset: AssetRecord } | undefined;
  if (input.attachment) {
    const asset = await takeUpload(ctx, input.attachment.uploadID);
    sent = { ...attachmentFor(ctx.assets, asset, input.attachment), asset };
  }
  const record = await ctx.db.withChat(chat.no, () =>
    appendMessage(ctx, chat, {
      senderID: account.user.id,
      senderName: account.user.fullName,
      ts: Math.max(ctx.now(), chat.lastActivity),
      type: sent?.messageType ?? "TEXT",
      text: input.text || undefined,
      attachments: sent ? [sent.attachment] : undefined,
      isSender: true,
      linkedMessageID: replyTo ? messageID(chat, replyTo.seq) : undefined,
      sendStatus: "pending",
    }),
  );
  const upload = sent;
  const attachment = upload && { info: upload.attachment, open: () => openAsset(ctx.assets, upload.asset) };
  // Hand the message to the network while the pending record is being committed: a network that confirms at once
  // (the sandbox, a fast server) then lands its confirmation in the same commit instead of a second one. The
  // response still waits for the pending record to be durable. For a network reached over a socket (a client that
  // holds a connection), one turn of the event loop comes first: the commit's write is synchronous on the daemon
  // (SQLite) and would otherwise keep the request off the wire until it is done (through another inboxd, send →
  // Echo's answer p50 10.4 → 7.8 ms). Not for the in-process sandbox, whose sends would only wait longer.
  void client
    .send(chat.networkChatID, { text: input.text || undefined, replyTo: replyTo?.networkID, attachment })
    .then(
      (receipt) => settleSend(ctx, chat, record.seq, { networkID: receipt.networkMessageID }),
      (error: unknown) =>
        settleSend(ctx, chat, record.seq, {
          failed: error instanceof Error ? error.message : "the network refused the message",
        }),
    )
    .catch(() => undefined);
  if (client.holdsConnection) await turnOfTheEventLoop();
  await ctx.db.commit();
  return { chatID: chat.id, pendingMessageID: messageID(chat, record.seq) };
}

/** Lets pending I/O callbacks run (setImmediate where the runtime has it: no timer clamp). */
const turnOfTheEventLoop = () =>
  new Promise<void>((resolve) => (typeof setImmediate === "function" ? setImmediate(resolve) : setTimeout(resolve, 0)));

async function settleSend(
  ctx: Context,
  chat: ChatRecord,
  seq: number,
  outcome: { networkID?: string; failed?: string },
) {
  await ctx.db.withChat(chat.no, async () => {
    const m = await ctx.db.message(chat.no, seq);
    if (!m) return;
    m.sendStatus = outcome.failed ? "failed" : "sent";
    if (outcome.failed) m.statusText = outcome.failed;
    m.statusTs = ctx.now();
    if (outcome.networkID) {
      m.networkID = outcome.networkID;
      ctx.db.kv.put(keys.networkMessage(chat.no, outcome.networkID), seq);
    }
    await ctx.db.putMessage(chat.no, m);
  });
  await ctx.db.commit();
}

export async function editMessage(
  ctx: Context,
  chatID: string,
  id: string,
  text: string,
): Promise<Message & { messageID: string; success: true }> {
  const chat = requireChat(ctx, chatID);
  const client = ctx.bridges.client(chat.accountID);
  const updated = await ctx.db.withChat(chat.no, async () => {
    const m = await findMessage(ctx, chat, id);
    if (m.attachments?.length) throw unprocessable("messages with attachments cannot be edited", ["path", "messageID"]);
    if (!m.isSender) throw unprocessable("only your own messages can be edited", ["path", "messageID"]);
    if (m.sendStatus === "pending") throw conflict("the message is still being sent");
    if (!client.edit) throw unsupported("editing");
    refuseReadOnly(client, chat);
    if (m.networkID) await callNetwork(() => client.edit!(chat.networkChatID, m.networkID!, text));
    m.text = text;
    m.editedTs = ctx.now();
    await ctx.db.putMessage(chat.no, m);
    ctx.db.index.add(termsOf(m), [m.ts, chat.no, m.seq]);
    return m;
  });
  await ctx.db.commit();
  const message = presentMessage(chat, updated);
  return { ...message, messageID: message.id, success: true };
}

/**
 * Deletes a message: for everyone (default) the network is asked first and the message goes only once it agreed;
 * `forEveryone: false` deletes it on this device alone — the network is not told, so the other party keeps it —
 * which needs nothing from the network (not even a connected client).
 */
export async function deleteMessage(
  ctx: Context,
  chatID: string,
  id: string,
  options: { forEveryone?: boolean } = {},
): Promise<void> {
  const chat = requireChat(ctx, chatID);
  const forEveryone = options.forEveryone ?? true;
  const client = forEveryone ? ctx.bridges.client(chat.accountID) : undefined;
  await ctx.db.withChat(chat.no, async () => {
    const m = await findMessage(ctx, chat, id);
    if (m.sendStatus === "pending")
      throw unprocessable("a message cannot be deleted while it is being sent", ["path", "messageID"]);
    if (client && !client.delete)
      throw new ApiError(
        422,
        "NOT_SUPPORTED",
        "deleting messages for everyone is not supported by this network (forEveryone=false deletes it on this device)",
      );
    if (client && m.networkID) await callNetwork(() => client.delete!(chat.networkChatID, m.networkID!));
    m.deleted = true;
    await ctx.db.putMessage(chat.no, m);
    if (chat.preview?.seq === m.seq) {
      chat.preview = previewOf(await newestVisible(ctx, chat, m.seq));
      ctx.db.saveChat(chat);
    }
  });
  await ctx.db.commit();
}

async function newestVisible(ctx: Context, chat: ChatRecord, below: number): Promise<MessageRecord | undefined> {
  for (let seq = below - 1; seq >= firstSeqOf(chat) && seq >= below - 4 * CHUNK_SIZE; seq--) {
    const m = await ctx.db.message(chat.no, seq);
    if (m && !m.deleted) return m;
  }
  return undefined;
}
