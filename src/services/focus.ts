import { badRequest } from "../errors.ts";
import type { Context } from "./context.ts";
import { requireChat } from "./context.ts";
import { findMessage } from "./message-records.ts";
import { domainEvent } from "../schema/events.ts";

export interface FocusInput {
  chatID?: string;
  messageID?: string;
  draftText?: string;
  draftAttachmentPath?: string;
}

/**
 * POST /v1/focus. The desktop app brings its window forward, opens the chat (at the message) and fills the draft;
 * a daemon has no window, so this checks that the chat and message exist (404 otherwise) and logs a `focus` event,
 * with what was asked, for a UI to follow (on /v1/ws, the event streams and webhooks). No record changes.
 */
export async function focus(ctx: Context, input: FocusInput): Promise<{ success: true }> {
  if (input.messageID !== undefined && input.chatID === undefined)
    throw badRequest("messageID needs the chatID of its chat", [
      { code: "required", message: "chatID is required with messageID", path: ["body", "chatID"] },
    ]);
  const chat = input.chatID === undefined ? undefined : requireChat(ctx, input.chatID);
  if (chat && input.messageID !== undefined) await findMessage(ctx, chat, input.messageID);
  const focusing = { ...input, chatID: chat?.id };
  ctx.db.noteEvent(
    domainEvent("focus", new Date(ctx.now()).toISOString(), chat?.id ?? "", chat ? [chat.id] : [], { focus: focusing }),
  );
  await ctx.db.commit();
  return { success: true };
}
