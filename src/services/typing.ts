import type { InboundEvent, TypingState } from "../bridges/connector.ts";
import { domainEvent } from "../schema/events.ts";
import type { AccountRecord } from "../store/records.ts";
import { callNetwork, requireChat, unsupported, type Context } from "./context.ts";

/**
 * Typing notifications, both ways. Nothing here is stored: what goes out is passed to the network as it is asked
 * for, and what comes in becomes a live `typing` event on /v1/ws (src/events/protocol.ts), like `focus`, so
 * webhooks never see it and a client that connects later does not learn that someone was typing.
 */

/** POST /v1/chats/{chatID}/typing: tells the chat's other participants that the user is typing, or stopped. */
export async function setTyping(
  ctx: Context,
  chatID: string,
  state: TypingState,
): Promise<{ chatID: string; state: TypingState }> {
  const chat = requireChat(ctx, chatID);
  const client = ctx.bridges.client(chat.accountID);
  if (!client.setTyping) throw unsupported("sending typing notifications");
  await callNetwork(() => client.setTyping!(chat.networkChatID, state));
  return { chatID: chat.id, state };
}

/**
 * Someone typing in a chat, as a connector reports it. A chat this device does not know yet shows nothing: chats
 * are created by their first message or the network's chat list, never by a typing notice alone.
 */
export function announceTyping(
  ctx: Context,
  account: AccountRecord,
  event: Extract<InboundEvent, { type: "typing" }>,
): void {
  const chat = ctx.db.chats.findNetwork(account.accountID, event.networkChatID);
  if (!chat) return;
  const typing = {
    participantID: event.senderID,
    state: event.state,
    ...(event.timeoutMs === undefined ? {} : { timeoutMs: event.timeoutMs }),
  };
  ctx.announce(domainEvent("typing", new Date(ctx.now()).toISOString(), chat.id, [chat.id], { typing }));
}
