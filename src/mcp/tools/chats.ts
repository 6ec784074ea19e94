/** Chat tools: finding chats and changing a chat's state (archive, reminders, read/unread). */
import * as v from "valibot";
import { ArchiveBody, ReadBody, ReminderBody, SearchQuery } from "../../schema/requests/chats.ts";
import { Reminder } from "../../schema/wire.ts";
import {
  archiveChat,
  clearReminder,
  getChat,
  markRead,
  markUnread,
  searchChats,
  setReminder,
} from "../../services/chats.ts";
import type { Context } from "../../services/context.ts";
import { fromJsonText } from "../../services/present.ts";
import { chatBlock, code, pageHint, personName, plain, when } from "../format.ts";
import { accountIDs, Chat, ChatPage, chatID, describe, int, isoDateTime, paging } from "../schemas.ts";
import { defineTool } from "../tool.ts";

/** Chat lists come from the services as ready JSON (they splice cached chats); tools want the objects. */

export const pageOfChats = (app: Context, query: Parameters<typeof searchChats>[1]) =>
  fromJsonText<v.InferOutput<typeof ChatPage>>(searchChats(app, query));

const { query, inbox, scope, type } = SearchQuery.entries;

export const searchChatsTool = defineTool({
  name: "search_chats",
  title: "Search chats",
  description:
    "Find chats by title, network or participant names, with filters; without a query it lists chats by last activity (newest first). " +
    'Matching is literal: every word must start a word of the title, network or a participant\'s name ("ali smi" finds Alice Smith), ' +
    "case-insensitive, no synonyms. Chat names vary: when unsure which chat the user means, ask. Returns chat IDs for the other tools.",
  input: v.object({
    query: v.optional(describe(query.wrapped, "Words to find (word starts), all of which must match.")),
    scope: v.optional(
      describe(
        scope.wrapped,
        '"titles": title and network only; "participants": participant names only; default both.',
      ),
    ),
    accountIDs: v.optional(accountIDs),
    inbox: v.optional(
      describe(inbox.wrapped, '"primary": not archived, not low priority; "archive"; "low-priority". Default: all.'),
    ),
    type: v.optional(describe(type.wrapped, "Direct chats (single), groups, or any.")),
    unreadOnly: v.optional(describe(v.boolean(), "Only chats with unread messages.")),
    includeMuted: v.optional(describe(v.boolean(), "Include muted chats (default true).")),
    lastActivityAfter: v.optional(describe(isoDateTime, "Only chats active after this ISO 8601 date-time.")),
    lastActivityBefore: v.optional(describe(isoDateTime, "Only chats active before this ISO 8601 date-time.")),
    limit: v.optional(describe(int(1, 200), "Chats per page, 1–200 (default 20)."), 20),
    ...paging,
  }),
  output: ChatPage,
  readOnly: true,
  async run(args, tc) {
    const page = pageOfChats(tc.app, args);
    const head = page.items.length
      ? `${page.items.length} chat(s)${page.hasMore ? ", more on the next page" : ""}:`
      : "No chat matches.";
    return {
      structured: page,
      text: [head, ...page.items.map(chatBlock), pageHint("search_chats", page, args.direction)].join("\n\n"),
    };
  },
});

export const getChatTool = defineTool({
  name: "get_chat",
  title: "Get a chat",
  description:
    "A chat's details: title, network, participants, unread count, archive/mute/pin state, reminder and last message.",
  input: v.object({
    chatID,
    maxParticipantCount: v.optional(
      describe(int(-1, 500), "Participants to list, 0–500 or -1 for all (default 20)."),
      20,
    ),
  }),
  output: Chat,
  readOnly: true,
  async run({ chatID, maxParticipantCount }, tc) {
    const chat = getChat(tc.app, chatID, maxParticipantCount);
    const people = chat.participants.items.map((p) => `- ${p.isSelf ? "You" : personName(p)} (userID ${code(p.id)})`);
    const more = chat.participants.hasMore
      ? [`- …and ${chat.participants.total - chat.participants.items.length} more (raise maxParticipantCount)`]
      : [];
    const draft = chat.draft?.text ? [`Draft: "${plain(chat.draft.text, 200)}"`] : [];
    return {
      structured: chat,
      text: [chatBlock(chat), ...draft, `Participants (${chat.participants.total}):`, ...people, ...more].join("\n"),
    };
  },
});

export const archiveChatTool = defineTool({
  name: "archive_chat",
  title: "Archive or unarchive a chat",
  description: "Moves a chat to the archive (archived: true, the default) or back to the inbox (archived: false).",
  input: v.object({
    chatID,
    archived: describe(ArchiveBody.entries.archived, "true (default): archive; false: move back to the inbox."),
  }),
  output: v.strictObject({ chatID: v.string(), archived: v.boolean() }),
  readOnly: false,
  idempotent: true,
  async run({ chatID, archived }, tc) {
    await archiveChat(tc.app, chatID, archived);
    const chat = getChat(tc.app, chatID, 0);
    return {
      structured: { chatID: chat.id, archived },
      text: `${archived ? "Archived" : "Moved back to the inbox"}: "${plain(chat.title)}" (chatID ${code(chat.id)}).`,
    };
  },
});

export const setReminderTool = defineTool({
  name: "set_chat_reminder",
  title: "Set a chat reminder",
  description:
    "Sets (or replaces) the chat's reminder: the chat comes back to the user's attention at that time. " +
    "Give reminder.remindAtMs (Unix ms) or reminder.remindAt (ISO 8601); dismissOnIncomingMessage cancels it when someone writes first.",
  input: v.object({ chatID, ...ReminderBody.entries }),
  output: v.strictObject({ chatID: v.string(), reminder: Reminder }),
  readOnly: false,
  idempotent: true,
  async run({ chatID, reminder }, tc) {
    await setReminder(tc.app, chatID, reminder.at, reminder.dismissOnIncomingMessage);
    const chat = getChat(tc.app, chatID, 0);
    const set = chat.reminder!;
    const dismiss = set.dismissOnIncomingMessage ? ", dismissed if someone writes first" : "";
    return {
      structured: { chatID: chat.id, reminder: set },
      text: `Reminder for "${plain(chat.title)}" set for ${when(set.remindAt)}${dismiss}.`,
    };
  },
});

export const clearReminderTool = defineTool({
  name: "clear_chat_reminder",
  title: "Clear a chat reminder",
  description: "Removes the chat's reminder, if it has one.",
  input: v.object({ chatID }),
  output: v.strictObject({ chatID: v.string(), cleared: v.literal(true) }),
  readOnly: false,
  destructive: true,
  idempotent: true,
  async run({ chatID }, tc) {
    await clearReminder(tc.app, chatID);
    return { structured: { chatID, cleared: true as const }, text: `Reminder cleared for chat ${code(chatID)}.` };
  },
});

const readInput = v.object({
  chatID,
  messageID: v.optional(
    describe(ReadBody.entries.messageID.wrapped, "Up to (read) or from (unread) this message; default: the newest."),
  ),
});

export const markReadTool = defineTool({
  name: "mark_read",
  title: "Mark a chat read",
  description:
    "Marks the chat read up to a message (default: all of it); the network sends a read receipt where it has them.",
  input: readInput,
  output: Chat,
  readOnly: false,
  idempotent: true,
  openWorld: true,
  async run({ chatID, messageID }, tc) {
    const chat = await markRead(tc.app, chatID, messageID);
    return {
      structured: chat,
      text: `Marked read: "${plain(chat.title)}" (chatID ${code(chat.id)}), ${chat.unreadCount} unread left.`,
    };
  },
});

export const markUnreadTool = defineTool({
  name: "mark_unread",
  title: "Mark a chat unread",
  description: "Flags the chat unread, or makes a message and everything after it unread (messageID).",
  input: readInput,
  output: Chat,
  readOnly: false,
  idempotent: true,
  async run({ chatID, messageID }, tc) {
    const chat = await markUnread(tc.app, chatID, messageID);
    return {
      structured: chat,
      text: `Marked unread: "${plain(chat.title)}" (chatID ${code(chat.id)}), ${chat.unreadCount} unread.`,
    };
  },
});
