/** "Catch me up" (list_unread) and waiting for the next message (wait_for_message), so agents need not poll. */
import * as v from "valibot";
import { boundedArray, id } from "../../schema/limits.ts";
import { badRequest } from "../../errors.ts";
import type { Message } from "../../schema/wire.ts";
import { getChat } from "../../services/chats.ts";
import { requireChat, type Context } from "../../services/context.ts";
import { sortKeyOf } from "../../services/cursor.ts";
import { findMessage } from "../../services/message-records.ts";
import { listMessages } from "../../services/messages.ts";
import { parseMessageID } from "../../services/present.ts";
import type { ChatRecord } from "../../store/records.ts";
import { capMessage, chatBlock, code, messageBlock, pageHint, plain } from "../format.ts";
import { accountIDs, Chat, describe, int, McpMessage, messageID, paging } from "../schemas.ts";
import { defineTool, type ToolContext } from "../tool.ts";
import { pageOfChats } from "./chats.ts";

const UnreadChat = v.strictObject({
  chat: Chat,
  messages: describe(v.array(McpMessage), "The newest unread messages, oldest first."),
});
const UnreadPage = v.strictObject({
  items: v.array(UnreadChat),
  hasMore: v.boolean(),
  oldestCursor: v.nullable(v.string()),
  newestCursor: v.nullable(v.string()),
});
export type UnreadPage = v.InferOutput<typeof UnreadPage>;

const UnreadInput = v.object({
  accountIDs: v.optional(accountIDs),
  includeMuted: v.optional(describe(v.boolean(), "Include muted chats (default false)."), false),
  limit: v.optional(describe(int(1, 50), "Chats per page (default 10)."), 10),
  messagesPerChat: v.optional(describe(int(1, 20), "Unread messages shown per chat, newest (default 5)."), 5),
  cursor: paging.cursor,
});

/** The inbox's chats with unread messages (not archived, not low priority), newest activity first, with those messages. */
export async function unreadOverview(
  app: Context,
  q: v.InferOutput<typeof UnreadInput>,
): Promise<{ page: UnreadPage; text: string }> {
  const chats = pageOfChats(app, {
    unreadOnly: true,
    inbox: "primary",
    includeMuted: q.includeMuted,
    accountIDs: q.accountIDs,
    limit: q.limit,
    cursor: q.cursor,
  });
  const items: UnreadPage["items"] = [];
  for (const { preview: _preview, ...chat } of chats.items) {
    const newest = (await listMessages(app, chat.id, undefined, undefined)).items;
    const unread = newest.filter((m) => m.isUnread);
    // A chat flagged unread by hand has no unread message: its newest one says what it is about.
    const shown = (unread.length ? unread : newest.slice(0, 1)).slice(0, q.messagesPerChat).reverse();
    items.push({ chat, messages: shown.map((m) => capMessage(m)) });
  }
  const page = { ...chats, items };
  const blocks = items.map(({ chat, messages }) =>
    [chatBlock(chat), ...messages.map((m) => messageBlock(m))].join("\n\n"),
  );
  const head = items.length
    ? `${items.length} chat(s) with unread messages${chats.hasMore ? " (more on the next page)" : ""}. mark_read marks a chat read once handled.`
    : "Nothing unread.";
  return {
    page,
    text: [head, ...blocks, chats.hasMore ? pageHint("list_unread", chats) : ""].filter(Boolean).join("\n\n"),
  };
}

export const listUnreadTool = defineTool({
  name: "list_unread",
  title: "Catch up on unread messages",
  description:
    "What is unread across every account: the inbox's chats with unread messages (archived, low-priority and, by default, muted chats left out), " +
    "newest activity first, each with its newest unread messages.",
  input: UnreadInput,
  output: UnreadPage,
  readOnly: true,
  async run(args, tc) {
    const { page, text } = await unreadOverview(tc.app, args);
    return { structured: page, text };
  },
});

const MAX_WAIT_CHATS = 100;

export const waitForMessageTool = defineTool({
  name: "wait_for_message",
  title: "Wait for the next message",
  description:
    "Blocks until the next message arrives from someone else in the given chats (or in any chat), or until timeoutSeconds pass; " +
    "use it instead of polling. After send_message, pass that chatID and the pending message ID as sinceMessageID: an answer that " +
    "arrived in between is returned at once. Many MCP clients give up on a call after 60 s: keep timeoutSeconds below that.",
  input: v.object({
    chatIDs: v.optional(
      describe(
        v.pipe(boundedArray(id), v.maxLength(MAX_WAIT_CHATS)),
        `Chats to watch (up to ${MAX_WAIT_CHATS}); default: every chat.`,
      ),
    ),
    sinceMessageID: v.optional(
      describe(
        messageID,
        "With exactly one chatID: any message after this one counts, even one that came before this call.",
      ),
    ),
    timeoutSeconds: v.optional(describe(int(1, 300), "How long to wait (default 30)."), 30),
    includeOwn: v.optional(describe(v.boolean(), "Count messages sent from this account too (default false)."), false),
  }),
  output: v.strictObject({ message: v.nullable(McpMessage), timedOut: v.boolean() }),
  readOnly: true,
  async run(args, tc) {
    const message = await waitForMessage(args, tc);
    if (!message)
      return {
        structured: { message: null, timedOut: !tc.signal.aborted },
        text: `No new message within ${args.timeoutSeconds} s.`,
      };
    const capped = capMessage(message);
    const chat = getChat(tc.app, message.chatID, 0);
    return {
      structured: { message: capped, timedOut: false },
      text: `New message in "${plain(chat.title)}" (chatID ${code(chat.id)}):\n\n${messageBlock(capped)}`,
    };
  },
});

interface WaitArgs {
  chatIDs?: string[];
  sinceMessageID?: string;
  timeoutSeconds: number;
  includeOwn: boolean;
}

/**
 * The first message that counts, or undefined. A message counts when it was stored after the call began: its seq is
 * at or past the position its chat had then (the chat's next seq). Positions are read in the same turn as the hub is
 * first listened to, so nothing falls between the two. With sinceMessageID the position is just after that message
 * instead, and what came in between is read from the chat first. A message stored earlier never counts, whatever its
 * timestamp says or however it changes while the call waits (a reaction, an edit, a send status all arrive as
 * message.upserted too).
 */
async function waitForMessage(args: WaitArgs, tc: ToolContext): Promise<Message | undefined> {
  const { app } = tc;
  if (args.sinceMessageID && args.chatIDs?.length !== 1)
    throw badRequest("sinceMessageID needs exactly one chatID", [
      { code: "invalid", message: "give exactly one chatID", path: ["arguments", "chatIDs"] },
    ]);
  const watched = args.chatIDs?.map((chatID) => requireChat(app, chatID));
  const since =
    args.sinceMessageID === undefined
      ? undefined
      : { chat: watched![0], seq: (await findMessage(app, watched![0], args.sinceMessageID)).seq };
  // No await from here until the hub is listened to.
  const from = since
    ? (chatNo: number) => (chatNo === since.chat.no ? since.seq + 1 : undefined)
    : startPositions(app, watched);
  const watchedIDs = watched && new Set(watched.map((chat) => chat.id));
  const isNew = (m: Message) => {
    const at = parseMessageID(m.id);
    const start = at && from(at.chatNo);
    return (args.includeOwn || !m.isSender) && start !== undefined && at!.seq >= start;
  };

  let found: (m: Message) => void = () => undefined;
  const arrived = new Promise<Message>((resolve) => (found = resolve));
  const stop = tc.events.add({
    deliver(events) {
      for (const event of events) {
        if (!event.body.startsWith('"type":"message.upserted"') || (watchedIDs && !watchedIDs.has(event.chatID)))
          continue;
        const entries = (JSON.parse(`{${event.body}`) as { entries?: Message[] }).entries ?? [];
        const first = entries.find(isNew);
        if (first) return found(first);
      }
    },
  });
  try {
    if (since) {
      const after = await listMessages(app, since.chat.id, sortKeyOf(since.seq), "after");
      const first = [...after.items].reverse().find(isNew);
      if (first) return first;
    }
    const time = deadline(args.timeoutSeconds, tc);
    try {
      return await Promise.race([arrived, time.up]);
    } finally {
      time.clear();
    }
  } finally {
    stop();
  }
}

/**
 * Where each chat stands now (its next seq), by chat number: the watched chats', or every chat's. A chat made later
 * stands at 0, so all of its messages are new; a chat not watched has no position.
 */
function startPositions(app: Context, watched: ChatRecord[] | undefined): (chatNo: number) => number | undefined {
  if (watched) {
    const next = new Map(watched.map((chat) => [chat.no, chat.nextSeq]));
    return (chatNo) => next.get(chatNo);
  }
  const chats = app.db.chats.all();
  let top = -1;
  for (const chat of chats) top = Math.max(top, chat.no);
  // One number per chat number (8 bytes each), not a map: a call may watch 100,000 chats for minutes.
  const next = new Float64Array(top + 1);
  for (const chat of chats) next[chat.no] = chat.nextSeq;
  return (chatNo) => (chatNo < next.length ? next[chatNo] : 0);
}

/** `up` resolves when the time is up or the call is cancelled; progress is reported every 10 s until `clear`. */
function deadline(seconds: number, tc: ToolContext): { up: Promise<undefined>; clear(): void } {
  const started = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ticker: ReturnType<typeof setInterval> | undefined;
  let onAbort = () => undefined as void;
  const up = new Promise<undefined>((resolve) => {
    onAbort = () => resolve(undefined);
    timer = setTimeout(onAbort, seconds * 1000);
    ticker = setInterval(
      () => void tc.progress((Date.now() - started) / 1000, seconds, "waiting for a message").catch(() => undefined),
      10_000,
    );
    tc.signal.addEventListener("abort", onAbort);
  });
  return {
    up,
    clear() {
      clearTimeout(timer);
      clearInterval(ticker);
      tc.signal.removeEventListener("abort", onAbort);
    },
  };
}
