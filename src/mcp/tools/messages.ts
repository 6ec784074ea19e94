/** Message tools: reading, searching and sending. Edits, deletes and reactions are in message-actions.ts. */
import * as v from "valibot";
import { ListQuery, SearchQuery, SendBody } from "../../schema/requests/messages.ts";
import { Base64Body } from "../../schema/requests/assets.ts";
import { boundedArray, id } from "../../schema/limits.ts";
import { Upload } from "../../schema/bridges.ts";
import { getChat } from "../../services/chats.ts";
import { searchMessages } from "../../services/message-search.ts";
import { getMessage, listMessages, sendMessage, type SendInput } from "../../services/messages.ts";
import { capMessage, code, messageBlock, pageHint, plain, TEXT_CAP } from "../format.ts";
import {
  accountIDs,
  chatID,
  describe,
  int,
  isoDateTime,
  McpMessage,
  MessagePage,
  MessageSearchPage,
  messageID,
  paging,
} from "../schemas.ts";
import { defineTool } from "../tool.ts";
import { presentAsset, uploadBase64 } from "../upload.ts";

export const listMessagesTool = defineTool({
  name: "list_messages",
  title: "List a chat's messages",
  description:
    "A chat's messages, 20 per page, starting with the newest; page back with the cursor the answer gives, or start next to any " +
    "message of the chat by passing its ID as cursor. " +
    `Texts longer than ${TEXT_CAP} characters are cut (get_message returns them whole).`,
  input: v.object({
    chatID,
    cursor: v.optional(
      describe(
        ListQuery.entries.cursor.wrapped,
        "A cursor from the previous page (oldestCursor or newestCursor), or the ID of a message of this chat: the page then starts next to it.",
      ),
    ),
    direction: v.optional(
      describe(ListQuery.entries.direction.wrapped, '"before" (default): older than the cursor; "after": newer.'),
    ),
  }),
  output: MessagePage,
  readOnly: true,
  async run({ chatID, cursor, direction }, tc) {
    const chat = getChat(tc.app, chatID, 0);
    const page = await listMessages(tc.app, chatID, cursor, direction);
    const structured = { ...page, items: page.items.map((m) => capMessage(m)) };
    const head = `${page.items.length} message(s) in "${plain(chat.title)}" (chatID ${code(chat.id)}), oldest first:`;
    const body = [...structured.items].reverse().map((m) => messageBlock(m));
    return {
      structured,
      text: [
        page.items.length ? head : `No messages here (chatID ${code(chat.id)}).`,
        ...body,
        pageHint("list_messages", page, direction),
      ].join("\n\n"),
    };
  },
});

const q = SearchQuery.entries;

export const searchMessagesTool = defineTool({
  name: "search_messages",
  title: "Search messages",
  description:
    "Finds messages across chats by their words and filters, newest first, 20 per page. " +
    "The query is LITERAL word matching, not semantic: every word must appear in the message as a whole word, in any order " +
    '(use words people actually type: "dinner", not "evening meal plans"). Without a query, only the filters apply. ' +
    "To search inside known chats, get their IDs first (search_chats) and pass chatIDs.",
  input: v.object({
    query: v.optional(describe(q.query.wrapped, "Words that must all appear (literal, case-insensitive).")),
    chatIDs: v.optional(describe(boundedArray(id), "Only these chats.")),
    accountIDs: v.optional(accountIDs),
    chatType: v.optional(describe(q.chatType.wrapped, "Only group chats or only direct chats.")),
    sender: v.optional(describe(q.sender.wrapped, '"me", "others", or a user ID.')),
    mediaTypes: v.optional(
      describe(
        v.array(v.picklist(["any", "video", "image", "link", "file"])),
        "Only messages with these kinds of media.",
      ),
    ),
    dateAfter: v.optional(describe(isoDateTime, "Only messages strictly after this ISO 8601 date-time.")),
    dateBefore: v.optional(describe(isoDateTime, "Only messages strictly before this ISO 8601 date-time.")),
    excludeLowPriority: v.optional(describe(v.boolean(), "Leave out low-priority chats (default true).")),
    includeMuted: v.optional(describe(v.boolean(), "Include muted chats (default true).")),
    limit: v.optional(describe(int(1, 500), "At most this many messages; a page holds at most 20.")),
    ...paging,
  }),
  output: MessageSearchPage,
  readOnly: true,
  async run(args, tc) {
    const found = await searchMessages(tc.app, args);
    const structured = { ...found, items: found.items.map((m) => capMessage(m)) };
    const head = found.items.length
      ? `${found.items.length} message(s)${found.hasMore ? ", more on the next page" : ""}, newest first:`
      : "No message matches.";
    const body = structured.items.map((m) => messageBlock(m, { chatTitle: found.chats[m.chatID]?.title ?? m.chatID }));
    return { structured, text: [head, ...body, pageHint("search_messages", found, args.direction)].join("\n\n") };
  },
});

export const getMessageTool = defineTool({
  name: "get_message",
  title: "Get a message",
  description: `One message with its attachments, reactions and send status. Its text is cut at ${TEXT_CAP} characters unless fullText is true.`,
  input: v.object({
    chatID,
    messageID,
    fullText: v.optional(describe(v.boolean(), "Return the whole text however long (up to 64 KiB).")),
  }),
  output: McpMessage,
  readOnly: true,
  async run({ chatID, messageID, fullText }, tc) {
    const message = capMessage(await getMessage(tc.app, chatID, messageID), fullText ? Infinity : TEXT_CAP);
    return { structured: message, text: messageBlock(message) };
  },
});

const { type: attachmentType, ...byUpload } = SendBody.entries.attachment.wrapped.entries;
const Attachment = v.union([
  describe(
    v.strictObject({ ...byUpload, type: attachmentType }),
    "A file uploaded before (upload_asset, or POST /v1/assets/upload).",
  ),
  describe(
    v.strictObject({
      ...Base64Body.entries,
      fileName: describe(byUpload.fileName.wrapped, "The file's name, with its extension."),
      type: attachmentType,
    }),
    "The file itself, as base64 (up to 12 MB; larger files: upload over HTTP, then send the uploadID).",
  ),
]);

export const sendMessageTool = defineTool({
  name: "send_message",
  title: "Send a message",
  description:
    "Sends a message to a chat: text (Markdown allowed), optionally as a reply, optionally with one attachment — an uploadID, or the file " +
    "itself as base64 content with its fileName. Answers at once with a pending message ID; the network confirms it shortly " +
    "(get_message shows its send status). To wait for an answer, call wait_for_message with this chatID and sinceMessageID.",
  input: v.object({
    chatID,
    text: v.optional(describe(SendBody.entries.text.wrapped, "The message text (Markdown).")),
    replyToMessageID: v.optional(
      describe(SendBody.entries.replyToMessageID.wrapped, "Send as a reply to this message."),
    ),
    attachment: v.optional(Attachment),
  }),
  output: v.strictObject({ chatID: v.string(), pendingMessageID: v.string(), upload: v.optional(Upload) }),
  readOnly: false,
  openWorld: true,
  long: ["attachment"],
  async run({ chatID, text, replyToMessageID, attachment }, tc) {
    const chat = getChat(tc.app, chatID, 0);
    let upload: v.InferOutput<typeof Upload> | undefined;
    let file: SendInput["attachment"];
    if (attachment && "content" in attachment) {
      const { content, ...rest } = attachment;
      upload = presentAsset(
        tc.app,
        await uploadBase64(tc.app, { content, fileName: rest.fileName, mimeType: rest.mimeType }),
      );
      file = { uploadID: upload.uploadID, type: rest.type };
    } else file = attachment;
    const sent = await sendMessage(tc.app, chat.id, { text, replyToMessageID, attachment: file });
    const what = [text ? "text" : "", upload || file ? "an attachment" : ""].filter(Boolean).join(" and ");
    return {
      structured: { ...sent, ...(upload ? { upload } : {}) },
      text: `Sent ${what} to "${plain(chat.title)}" (chatID ${code(chat.id)}): pending messageID ${code(sent.pendingMessageID)}.`,
    };
  },
});
