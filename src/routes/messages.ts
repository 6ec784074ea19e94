import * as v from "valibot";
import { noContent, type Api } from "../http/route-kit.ts";
import { badRequest } from "../errors.ts";
import { extension, Message, MessageSearchPage, pageOf } from "../schema/wire.ts";
import { deleteMessage, editMessage, getMessage, listMessages, sendMessage } from "../services/messages.ts";
import { searchMessagesJSON } from "../services/message-search.ts";
import { addReaction, removeReaction } from "../services/reactions.ts";
import {
  ListQuery,
  SendBody,
  EditBody,
  ReactionBody,
  ReactionQuery,
  DeleteQuery,
  SearchQuery,
} from "../schema/requests/messages.ts";

const SentMessage = v.strictObject({
  chatID: v.string(),
  pendingMessageID: v.pipe(
    v.string(),
    v.description("The new message's ID; its sendStatus says when the network took it."),
  ),
});
const EditedMessage = v.strictObject({ ...Message.entries, messageID: v.string(), success: v.literal(true) });
const ReactionResult = v.strictObject({
  success: v.literal(true),
  chatID: v.string(),
  messageID: v.string(),
  reactionKey: v.string(),
  transactionID: v.optional(
    v.pipe(
      v.string(),
      v.metadata(
        extension("the transaction ID of an addition (the one sent, or a generated one); a removal answers none."),
      ),
    ),
  ),
});

export function messageRoutes(api: Api) {
  const tag = "Messages";
  api
    .add(
      {
        method: "GET",
        path: "/v1/messages/search",
        operationId: "searchMessages",
        summary: "Search messages",
        tag,
        query: SearchQuery,
        response: MessageSearchPage,
        description:
          "Messages with every literal word of `query` (case-insensitive), newest first, at most 20 per page, with filters.",
      },
      ({ rc, query }) => searchMessagesJSON(rc.app, query),
    )
    .add(
      {
        method: "GET",
        path: "/v1/chats/:chatID/messages",
        operationId: "listMessages",
        summary: "List messages",
        tag,
        query: ListQuery,
        response: pageOf(Message),
        description:
          "A chat's messages, newest first, 20 per page; `cursor` with `direction` pages older (`before`) or newer (`after`) than a cursor or a message ID.",
      },
      ({ rc, params, query }) => listMessages(rc.app, params.chatID, query.cursor, query.direction),
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats/:chatID/messages",
        operationId: "sendMessage",
        summary: "Send a message",
        tag,
        body: SendBody,
        response: SentMessage,
        description:
          "Text, a reply (`replyToMessageID`) and/or one uploaded attachment (`attachment.uploadID` from the asset upload).",
      },
      ({ rc, params, body }) => sendMessage(rc.app, params.chatID, body),
    )
    .add(
      {
        method: "GET",
        path: "/v1/chats/:chatID/messages/:messageID",
        operationId: "getMessage",
        summary: "Retrieve a message",
        tag,
        response: Message,
      },
      ({ rc, params }) => getMessage(rc.app, params.chatID, params.messageID),
    )
    .add(
      {
        method: "PUT",
        path: "/v1/chats/:chatID/messages/:messageID",
        operationId: "editMessage",
        summary: "Edit a message",
        tag,
        body: EditBody,
        response: EditedMessage,
      },
      ({ rc, params, body }) => editMessage(rc.app, params.chatID, params.messageID, body.text),
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/chats/:chatID/messages/:messageID",
        operationId: "deleteMessage",
        summary: "Delete a message",
        tag,
        query: DeleteQuery,
        description:
          "Deletes a message for everyone (the network is asked to), or with `forEveryone=false` only on this device.",
        responses: { 204: { description: "Deleted." } },
      },
      async ({ rc, params, query }) => {
        await deleteMessage(rc.app, params.chatID, params.messageID, { forEveryone: query.forEveryone });
        return noContent();
      },
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats/:chatID/messages/:messageID/reactions",
        operationId: "addReaction",
        summary: "Add a reaction",
        tag,
        body: ReactionBody,
        response: ReactionResult,
      },
      ({ rc, params, body }) =>
        addReaction(rc.app, params.chatID, params.messageID, body.reactionKey, body.transactionID),
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/chats/:chatID/messages/:messageID/reactions",
        operationId: "removeReactionByQuery",
        extension: true,
        summary: "Remove a reaction (key in the query)",
        tag,
        query: ReactionQuery,
        response: ReactionResult,
        description: "The 4.2.x form of removeReaction: `reactionKey` as a query parameter.",
      },
      ({ rc, params, query }) => removeReaction(rc.app, params.chatID, params.messageID, query.reactionKey),
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/chats/:chatID/messages/:messageID/reactions/:reactionKey",
        operationId: "removeReaction",
        summary: "Remove a reaction",
        tag,
        response: ReactionResult,
      },
      ({ rc, params }) => {
        if (!params.reactionKey)
          throw badRequest("reactionKey is required", [
            { code: "required", message: "reactionKey is required", path: ["path", "reactionKey"] },
          ]);
        return removeReaction(rc.app, params.chatID, params.messageID, params.reactionKey);
      },
    );
}
