import * as v from "valibot";
import { noContent, type Api } from "../http/route-kit.ts";
import { Chat, extension, Message, pageOf } from "../schema/wire.ts";
import {
  archiveChat,
  clearReminder,
  createChat,
  getChat,
  listChats,
  markRead,
  markUnread,
  notifyAnyway,
  searchChats,
  setReminder,
  updateChat,
} from "../services/chats.ts";
import {
  ListQuery,
  SearchQuery,
  GetQuery,
  CreateBody,
  StartBody,
  PatchBody,
  ArchiveBody,
  ReminderBody,
  ReadBody,
} from "../schema/requests/chats.ts";

const ChatPage = pageOf(Chat);
const CreatedChat = v.strictObject({
  ...Chat.entries,
  chatID: v.pipe(v.string(), v.description("The chat's ID (4.2.x clients read this field).")),
  status: v.optional(
    v.pipe(v.picklist(["existing", "created"]), v.description("start mode: whether the direct chat already existed.")),
  ),
  preview: v.optional(v.pipe(Message, v.metadata(extension("the chat's last message, as in lists.")))),
});
const done = { 204: { description: "Done." } };

export function chatRoutes(api: Api) {
  const tag = "Chats";
  api
    .add(
      {
        method: "GET",
        path: "/v1/chats",
        operationId: "listChats",
        whileLoading: true,
        summary: "List chats",
        tag,
        query: ListQuery,
        response: ChatPage,
        description: "Chats by last activity, newest first, with the last message as `preview`.",
      },
      ({ rc, query }) => listChats(rc.app, query),
    )
    .add(
      {
        method: "GET",
        path: "/v1/chats/search",
        operationId: "searchChats",
        whileLoading: true,
        summary: "Search chats",
        tag,
        query: SearchQuery,
        response: ChatPage,
        description:
          "Chats whose title, network or participants' names contain every word of `query` as the start of a word (case-insensitive), with filters.",
      },
      ({ rc, query }) => searchChats(rc.app, query),
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats",
        operationId: "createChat",
        summary: "Create a chat",
        tag,
        body: CreateBody,
        response: CreatedChat,
        description:
          "Creates a group or direct chat from `participantIDs`; the 4.2.x form `mode: start` with `user` finds or starts a direct chat instead (5.0.0 clients use POST /v1/chats/start).",
      },
      ({ rc, body }) => createChat(rc.app, body),
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats/start",
        operationId: "startChat",
        summary: "Start a direct chat",
        tag,
        body: StartBody,
        response: CreatedChat,
      },
      ({ rc, body }) => createChat(rc.app, { ...body, mode: "start" }),
    )
    .add(
      {
        method: "GET",
        path: "/v1/chats/:chatID",
        operationId: "getChat",
        summary: "Retrieve chat details",
        tag,
        query: GetQuery,
        response: Chat,
      },
      ({ rc, params, query }) => getChat(rc.app, params.chatID, query.maxParticipantCount),
    )
    .add(
      {
        method: "PATCH",
        path: "/v1/chats/:chatID",
        operationId: "patchChat",
        summary: "Update chat",
        tag,
        body: PatchBody,
        response: Chat,
        description:
          "Title, description, archive/low-priority/pin/mute state (with an optional end), draft (text and attachments), picture, disappearing-message timer and labels; only the fields sent change. The picture and the timer go to the network: 422 NOT_SUPPORTED where it has no such setting, and nothing of the request is applied.",
      },
      ({ rc, params, body }) => updateChat(rc.app, params.chatID, body),
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats/:chatID/archive",
        operationId: "archiveChat",
        summary: "Archive or unarchive a chat",
        tag,
        body: ArchiveBody,
        responses: done,
      },
      async ({ rc, params, body }) => {
        await archiveChat(rc.app, params.chatID, body.archived);
        return noContent();
      },
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats/:chatID/reminders",
        operationId: "setChatReminder",
        summary: "Create a chat reminder",
        tag,
        body: ReminderBody,
        responses: done,
      },
      async ({ rc, params, body: { reminder } }) => {
        await setReminder(rc.app, params.chatID, reminder.at, reminder.dismissOnIncomingMessage);
        return noContent();
      },
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/chats/:chatID/reminders",
        operationId: "clearChatReminder",
        summary: "Delete a chat reminder",
        tag,
        responses: done,
      },
      async ({ rc, params }) => {
        await clearReminder(rc.app, params.chatID);
        return noContent();
      },
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats/:chatID/read",
        operationId: "markChatRead",
        summary: "Mark a chat as read",
        tag,
        body: ReadBody,
        response: Chat,
        description: "Up to `messageID` when given, else up to the last message.",
      },
      ({ rc, params, body }) => markRead(rc.app, params.chatID, body.messageID),
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats/:chatID/unread",
        operationId: "markChatUnread",
        summary: "Mark a chat as unread",
        tag,
        body: ReadBody,
        response: Chat,
      },
      ({ rc, params, body }) => markUnread(rc.app, params.chatID, body.messageID),
    )
    .add(
      {
        method: "POST",
        path: "/v1/chats/:chatID/notify-anyway",
        operationId: "notifyAnyway",
        summary: "Notify anyway",
        tag,
        response: Chat,
        description:
          "Asks the network to notify the chat's participants of its latest message even where they silenced notifications (iMessage's \"Notify Anyway\"); answers the chat. The sandbox network records each request (Echo's `!settings` reports `notifiedAnyway` for its chat); networks without such a notice (XMPP) answer 422 NOT_SUPPORTED, as accounts' `capabilities.notifyAnyway` says beforehand.",
      },
      ({ rc, params }) => notifyAnyway(rc.app, params.chatID),
    );
}
