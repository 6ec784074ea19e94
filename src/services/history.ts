import { keys, firstSeqOf, type ChatRecord, type MessageRecord } from "../store/records.ts";
import type { InboundMessage } from "../bridges/connector.ts";
import type { Context } from "./context.ts";
import { applyReaction, inboundRecord, termsOf, type NetworkReaction } from "./message-records.ts";

/** How many older messages one fetch asks the network for. */
export const HISTORY_BATCH = 50;

/** Whether paging past the oldest stored message of the chat may still find something on the network. */
export function canFetchOlderHistory(ctx: Context, chat: ChatRecord): boolean {
  return (
    !chat.historyComplete && firstSeqOf(chat) > 0 && ctx.bridges.attached(chat.accountID)?.fetchHistory !== undefined
  );
}

/**
 * Backward backfill (bridgev2's "backfill on scroll"): asks the network for messages older than the oldest stored
 * one and stores them below it. Answers whether anything was added; a network that is not connected or fails adds
 * nothing, so paging ends there for now instead of failing the client's request.
 */
export async function fetchOlderHistory(ctx: Context, chat: ChatRecord): Promise<boolean> {
  const client = ctx.bridges.attached(chat.accountID);
  if (!canFetchOlderHistory(ctx, chat) || !client?.fetchHistory) return false;
  // The network is asked outside the chat's lock (it may take seconds, and live messages must not wait for it);
  // the answer is stored under the lock, unless another fetch moved the chat's start meanwhile.
  const start = firstSeqOf(chat);
  const oldest = await oldestWithNetworkID(ctx, chat);
  if (!oldest) return false;
  const page = await client
    .fetchHistory(chat.networkChatID, { networkMessageID: oldest.networkID!, timestamp: oldest.ts }, HISTORY_BATCH)
    .catch(() => undefined);
  if (!page) return false;
  const added = await ctx.db.withChat(chat.no, async () => {
    if (firstSeqOf(chat) !== start) return 1; // someone else prepended: the caller reads on from the new start
    const fresh: InboundMessage[] = [];
    for (const m of page.messages)
      if (
        (await ctx.db.kv.get<number>(keys.networkMessage(chat.no, m.networkMessageID))) === undefined &&
        !fresh.some((f) => f.networkMessageID === m.networkMessageID)
      )
        fresh.push(m);
    const room = firstSeqOf(chat);
    const count = Math.min(fresh.length, room);
    // Newest first, each one slot further down; what does not fit below seq 0 is dropped (a billion messages in).
    for (let i = 0; i < count; i++) await prepend(ctx, chat, fresh[fresh.length - 1 - i], room - 1 - i);
    chat.firstSeq = room - count;
    if (!page.hasMore || chat.firstSeq === 0) chat.historyComplete = true;
    ctx.db.saveChat(chat);
    return count;
  });
  await ctx.db.commit();
  return added > 0;
}

async function oldestWithNetworkID(ctx: Context, chat: ChatRecord): Promise<MessageRecord | undefined> {
  for (let seq = firstSeqOf(chat); seq < chat.nextSeq; seq++) {
    const m = await ctx.db.message(chat.no, seq);
    if (m?.networkID) return m;
  }
  return undefined;
}

/** Stores an older message at `seq`: already read (it is history), never the chat's preview. */
async function prepend(ctx: Context, chat: ChatRecord, m: InboundMessage, seq: number) {
  const record: MessageRecord = { ...(await inboundRecord(ctx, chat, m)), seq };
  for (const r of m.reactions ?? []) {
    applyReaction(record, r.senderID, r.reactionKey, false, true);
    if (r.networkReactionID)
      ctx.db.kv.put(keys.networkReaction(chat.no, r.networkReactionID), {
        seq,
        senderID: r.senderID,
        reactionKey: r.reactionKey,
      } satisfies NetworkReaction);
  }
  await ctx.db.putMessage(chat.no, record);
  ctx.db.kv.put(keys.networkMessage(chat.no, m.networkMessageID), seq);
  ctx.db.index.add(termsOf(record), [record.ts, chat.no, record.seq]);
}
