import type { ChatRecord } from "../store/records.ts";
import { callNetwork, refuseReadOnly, requireChat, unsupported, type Context } from "./context.ts";
import { applyReaction, findMessage } from "./message-records.ts";
import { messageID } from "./present.ts";

async function changeReaction(
  ctx: Context,
  chat: ChatRecord,
  id: string,
  reactionKey: string,
  removed: boolean,
  transactionID?: string,
) {
  const client = ctx.bridges.client(chat.accountID);
  const account = ctx.db.account(chat.accountID)!;
  const method = removed ? client.unreact : client.react;
  if (!method) throw unsupported("reactions");
  refuseReadOnly(client, chat);
  const multiple = client.capabilities({
    networkChatID: chat.networkChatID,
    type: chat.type,
    title: chat.title,
    participants: chat.participants,
  }).multipleReactions;
  const message = await ctx.db.withChat(chat.no, async () => {
    const m = await findMessage(ctx, chat, id);
    const mine = (m.reactions ?? [])
      .filter((r) => r.participantID === account.user.id && r.reactionKey !== reactionKey)
      .map((r) => r.reactionKey);
    if (!removed) mine.push(reactionKey);
    if (m.networkID) await callNetwork(() => method.call(client, chat.networkChatID, m.networkID!, reactionKey, mine));
    applyReaction(m, account.user.id, reactionKey, removed, multiple);
    await ctx.db.putMessage(chat.no, m);
    if (transactionID) ctx.db.noteTransaction(chat.no, m.seq, transactionID);
    return m;
  });
  await ctx.db.commit();
  return message;
}

export async function addReaction(
  ctx: Context,
  chatID: string,
  id: string,
  reactionKey: string,
  transactionID?: string,
) {
  const chat = requireChat(ctx, chatID);
  const txn = transactionID ?? `txn_${crypto.randomUUID()}`;
  const m = await changeReaction(ctx, chat, id, reactionKey, false, txn);
  return {
    success: true as const,
    chatID: chat.id,
    messageID: messageID(chat, m.seq),
    reactionKey,
    transactionID: txn,
  };
}

export async function removeReaction(ctx: Context, chatID: string, id: string, reactionKey: string) {
  const chat = requireChat(ctx, chatID);
  const m = await changeReaction(ctx, chat, id, reactionKey, true);
  return { success: true as const, chatID: chat.id, messageID: messageID(chat, m.seq), reactionKey };
}
