/** Tools that change a sent message: edit, delete, react. */
import * as v from "valibot";
import { EditBody, ReactionBody, ReactionQuery } from "../../schema/requests/messages.ts";
import { deleteMessage, editMessage } from "../../services/messages.ts";
import { addReaction, removeReaction } from "../../services/reactions.ts";
import { capMessage, code, messageBlock, plain } from "../format.ts";
import { chatID, describe, McpMessage, messageID } from "../schemas.ts";
import { defineTool } from "../tool.ts";

export const editMessageTool = defineTool({
  name: "edit_message",
  title: "Edit a message",
  description: "Replaces the text of a message you sent (messages with attachments cannot be edited).",
  input: v.object({ chatID, messageID, text: describe(EditBody.entries.text, "The new text.") }),
  output: McpMessage,
  readOnly: false,
  destructive: true,
  idempotent: true,
  openWorld: true,
  async run({ chatID, messageID, text }, tc) {
    const { messageID: _id, success: _ok, ...message } = await editMessage(tc.app, chatID, messageID, text);
    const edited = capMessage(message);
    return { structured: edited, text: `Edited:\n\n${messageBlock(edited)}` };
  },
});

export const deleteMessageTool = defineTool({
  name: "delete_message",
  title: "Delete a message",
  description:
    "Deletes a message (for everyone, where the network can). It leaves every list and search. Confirm with the user first.",
  input: v.object({ chatID, messageID }),
  output: v.strictObject({ chatID: v.string(), messageID: v.string(), deleted: v.literal(true) }),
  readOnly: false,
  destructive: true,
  idempotent: false,
  openWorld: true,
  async run({ chatID, messageID }, tc) {
    await deleteMessage(tc.app, chatID, messageID);
    return {
      structured: { chatID, messageID, deleted: true as const },
      text: `Deleted messageID ${code(messageID)} in chat ${code(chatID)}.`,
    };
  },
});

const reactionKey = describe(
  ReactionBody.entries.reactionKey,
  "The reaction: an emoji (👍) or a network's reaction key.",
);
const Reaction = v.strictObject({
  chatID: v.string(),
  messageID: v.string(),
  reactionKey: v.string(),
  success: v.literal(true),
});

export const addReactionTool = defineTool({
  name: "add_reaction",
  title: "React to a message",
  description:
    "Adds your reaction (an emoji) to a message. The transactionID comes back on the live event of the change.",
  input: v.object({
    chatID,
    messageID,
    reactionKey,
    transactionID: v.optional(ReactionBody.entries.transactionID.wrapped),
  }),
  output: v.strictObject({ ...Reaction.entries, transactionID: v.string() }),
  readOnly: false,
  idempotent: true,
  openWorld: true,
  async run({ chatID, messageID, reactionKey, transactionID }, tc) {
    const done = await addReaction(tc.app, chatID, messageID, reactionKey, transactionID);
    return { structured: done, text: `Reacted ${plain(reactionKey, 40)} to messageID ${code(done.messageID)}.` };
  },
});

export const removeReactionTool = defineTool({
  name: "remove_reaction",
  title: "Remove a reaction",
  description: "Removes your reaction (the given reactionKey) from a message.",
  input: v.object({
    chatID,
    messageID,
    reactionKey: describe(ReactionQuery.entries.reactionKey, "The reaction to take back."),
  }),
  output: Reaction,
  readOnly: false,
  destructive: true,
  idempotent: true,
  openWorld: true,
  async run({ chatID, messageID, reactionKey }, tc) {
    const done = await removeReaction(tc.app, chatID, messageID, reactionKey);
    return { structured: done, text: `Removed your ${plain(reactionKey, 40)} from messageID ${code(done.messageID)}.` };
  },
});
