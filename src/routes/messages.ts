import * as v from "valibot";
import { bounded, id, LIMITS } from "../http/limits.ts";
import { noContent, type Api } from "../http/route-kit.ts";
import { badRequest } from "../http/errors.ts";
import { describedQueryBoolean, direction, isoDate, queryArray, queryBoolean, queryInt } from "../http/validate.ts";
import { extension, Message, MessageSearchPage, pageOf } from "../schema/wire.ts";
import { deleteMessage, editMessage, getMessage, listMessages, sendMessage } from "../services/messages.ts";
import { searchMessages } from "../services/message-search.ts";
import { addReaction, removeReaction } from "../services/reactions.ts";

const messageCursor = v.pipe(
  bounded(LIMITS.cursorBytes),
  v.description(
    "Opaque pagination cursor, used together with `direction`: a page's `oldestCursor` or `newestCursor`, a message's `sortKey`, " +
      "or the ID of a message in this chat (the page then starts next to that message, which it does not include). " +
      "A message of another chat, a deleted message or an unknown value is a 400 that says which.",
  ),
);
export const ListQuery = v.object({ cursor: v.optional(messageCursor), direction: v.optional(direction) });
export const SendBody = v.object({
  text: v.optional(bounded(LIMITS.textBytes)),
  replyToMessageID: v.optional(id),
  attachment: v.optional(
    v.object({
      uploadID: id,
      fileName: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(255))),
      mimeType: v.optional(v.pipe(v.string(), v.regex(/^[\w.+-]+\/[\w.+-]+$/, "expected a MIME type like image/png"))),
      duration: v.optional(v.pipe(v.number(), v.minValue(0))),
      size: v.optional(v.object({ width: v.pipe(v.number(), v.minValue(0)), height: v.pipe(v.number(), v.minValue(0)) })),
      // 4.2.x: gif | voiceNote | sticker; 5.0.0 adds image | video | audio | file | voice-note
      type: v.optional(v.picklist(["gif", "voiceNote", "sticker", "image", "video", "audio", "file", "voice-note"])),
    }),
  ),
});
export const EditBody = v.object({ text: v.pipe(v.string(), v.minLength(1, "text must not be empty"), v.maxBytes(LIMITS.textBytes, `must be at most ${LIMITS.textBytes} bytes`)) });
export const ReactionBody = v.object({
  reactionKey: id,
  transactionID: v.optional(bounded(LIMITS.idBytes)),
});
export const ReactionQuery = v.object({ reactionKey: id });
export const DeleteQuery = v.object({
  forEveryone: v.optional(describedQueryBoolean("true (default): delete on the network too; false: delete only on this device, the network is not told."), "true"),
});
export const SearchQuery = v.object({
  query: v.optional(bounded(LIMITS.queryTextBytes)),
  accountIDs: v.optional(queryArray),
  chatIDs: v.optional(queryArray),
  chatType: v.optional(v.picklist(["group", "single"])),
  cursor: v.optional(bounded(LIMITS.cursorBytes)),
  direction: v.optional(direction),
  dateAfter: v.optional(isoDate),
  dateBefore: v.optional(isoDate),
  excludeLowPriority: v.optional(queryBoolean),
  includeMuted: v.optional(queryBoolean),
  limit: v.optional(queryInt(1, 500)),
  mediaTypes: v.optional(v.pipe(queryArray, v.array(v.picklist(["any", "video", "image", "link", "file"])))),
  sender: v.optional(bounded(LIMITS.idBytes)),
});

const SentMessage = v.strictObject({
  chatID: v.string(),
  pendingMessageID: v.pipe(v.string(), v.description("The new message's ID; its sendStatus says when the network took it.")),
});
const EditedMessage = v.strictObject({ ...Message.entries, messageID: v.string(), success: v.literal(true) });
const ReactionResult = v.strictObject({
  success: v.literal(true),
  chatID: v.string(),
  messageID: v.string(),
  reactionKey: v.string(),
  transactionID: v.optional(v.pipe(v.string(), v.metadata(extension("the transaction ID of an addition (the one sent, or a generated one); a removal answers none.")))),
});

export function messageRoutes(api: Api) {
  const tag = "Messages";
  api
    .add({ method: "GET", path: "/v1/messages/search", operationId: "searchMessages", summary: "Search messages", tag, query: SearchQuery, response: MessageSearchPage,
      description: "Messages with every literal word of `query` (case-insensitive), newest first, at most 20 per page, with filters." },
      ({ rc, query }) => searchMessages(rc.app, query))
    .add({ method: "GET", path: "/v1/chats/:chatID/messages", operationId: "listMessages", summary: "List messages", tag, query: ListQuery, response: pageOf(Message),
      description: "A chat's messages, newest first, 20 per page; `cursor` with `direction` pages older (`before`) or newer (`after`) than a cursor or a message ID." },
      ({ rc, params, query }) => listMessages(rc.app, params.chatID, query.cursor, query.direction))
    .add({ method: "POST", path: "/v1/chats/:chatID/messages", operationId: "sendMessage", summary: "Send a message", tag, body: SendBody, response: SentMessage,
      description: "Text, a reply (`replyToMessageID`) and/or one uploaded attachment (`attachment.uploadID` from the asset upload)." },
      ({ rc, params, body }) => sendMessage(rc.app, params.chatID, body))
    .add({ method: "GET", path: "/v1/chats/:chatID/messages/:messageID", operationId: "getMessage", summary: "Retrieve a message", tag, response: Message },
      ({ rc, params }) => getMessage(rc.app, params.chatID, params.messageID))
    .add({ method: "PUT", path: "/v1/chats/:chatID/messages/:messageID", operationId: "editMessage", summary: "Edit a message", tag, body: EditBody, response: EditedMessage },
      ({ rc, params, body }) => editMessage(rc.app, params.chatID, params.messageID, body.text))
    .add({ method: "DELETE", path: "/v1/chats/:chatID/messages/:messageID", operationId: "deleteMessage", summary: "Delete a message", tag, query: DeleteQuery,
      description: "Deletes a message for everyone (the network is asked to), or with `forEveryone=false` only on this device.", responses: { 204: { description: "Deleted." } } },
      async ({ rc, params, query }) => {
        await deleteMessage(rc.app, params.chatID, params.messageID, { forEveryone: query.forEveryone });
        return noContent();
      })
    .add({ method: "POST", path: "/v1/chats/:chatID/messages/:messageID/reactions", operationId: "addReaction", summary: "Add a reaction", tag, body: ReactionBody, response: ReactionResult },
      ({ rc, params, body }) => addReaction(rc.app, params.chatID, params.messageID, body.reactionKey, body.transactionID))
    .add({ method: "DELETE", path: "/v1/chats/:chatID/messages/:messageID/reactions", operationId: "removeReactionByQuery", extension: true, summary: "Remove a reaction (key in the query)", tag, query: ReactionQuery, response: ReactionResult,
      description: "The 4.2.x form of removeReaction: `reactionKey` as a query parameter." },
      ({ rc, params, query }) => removeReaction(rc.app, params.chatID, params.messageID, query.reactionKey))
    .add({ method: "DELETE", path: "/v1/chats/:chatID/messages/:messageID/reactions/:reactionKey", operationId: "removeReaction", summary: "Remove a reaction", tag, response: ReactionResult },
      ({ rc, params }) => {
        if (!params.reactionKey) throw badRequest("reactionKey is required", [{ code: "required", message: "reactionKey is required", path: ["path", "reactionKey"] }]);
        return removeReaction(rc.app, params.chatID, params.messageID, params.reactionKey);
      });
}
