/** "Catch me up" (list_unread) and waiting for the next message (wait_for_message), so agents need not poll. */
import * as v from "valibot";
import { boundedArray, id } from "../../http/limits.ts";
import { badRequest } from "../../http/errors.ts";
import type { Message } from "../../schema/wire.ts";
import { getChat } from "../../services/chats.ts";
import type { Context } from "../../services/context.ts";
import { getMessage, listMessages } from "../../services/messages.ts";
import { capMessage, chatBlock, code, messageBlock, pageHint, plain } from "../format.ts";
import { accountIDs, Chat, describe, int, McpMessage, messageID, paging } from "../schemas.ts";
import { defineTool, type ToolContext } from "../tool.ts";
import { pageOfChats } from "./chats.ts";

const UnreadChat = v.strictObject({ chat: Chat, messages: describe(v.array(McpMessage), "The newest unread messages, oldest first.") });
const UnreadPage = v.strictObject({ items: v.array(UnreadChat), hasMore: v.boolean(), oldestCursor: v.nullable(v.string()), newestCursor: v.nullable(v.string()) });
export type UnreadPage = v.InferOutput<typeof UnreadPage>;

const UnreadInput = v.object({
  accountIDs: v.optional(accountIDs),
  includeMuted: v.optional(describe(v.boolean(), "Include muted chats (default false)."), false),
  limit: v.optional(describe(int(1, 50), "Chats per page (default 10)."), 10),
  messagesPerChat: v.optional(describe(int(1, 20), "Unread messages shown per chat, newest (default 5)."), 5),
  cursor: paging.cursor,
});

/** The inbox's chats with unread messages (not archived, not low priority), newest activity first, with those messages. */
export async function unreadOverview(app: Context, q: v.InferOutput<typeof UnreadInput>): Promise<{ page: UnreadPage; text: string }> {
  const chats = pageOfChats(app, { unreadOnly: true, inbox: "primary", includeMuted: q.includeMuted, accountIDs: q.accountIDs, limit: q.limit, cursor: q.cursor });
  const items: UnreadPage["items"] = [];
  for (const { preview: _preview, ...chat } of chats.items) {
    const newest = (await listMessages(app, chat.id, undefined, undefined)).items;
    const unread = newest.filter((m) => m.isUnread);
    // A chat flagged unread by hand has no unread message: its newest one says what it is about.
    const shown = (unread.length ? unread : newest.slice(0, 1)).slice(0, q.messagesPerChat).reverse();
    items.push({ chat, messages: shown.map((m) => capMessage(m)) });
  }
  const page = { ...chats, items };
  const blocks = items.map(({ chat, messages }) => [chatBlock(chat), ...messages.map((m) => messageBlock(m))].join("\n\n"));
  const head = items.length ? `${items.length} chat(s) with unread messages${chats.hasMore ? " (more on the next page)" : ""}. mark_read marks a chat read once handled.` : "Nothing unread.";
  return { page, text: [head, ...blocks, chats.hasMore ? pageHint("list_unread", chats) : ""].filter(Boolean).join("\n\n") };
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
    chatIDs: v.optional(describe(v.pipe(boundedArray(id), v.maxLength(MAX_WAIT_CHATS)), `Chats to watch (up to ${MAX_WAIT_CHATS}); default: every chat.`)),
    sinceMessageID: v.optional(describe(messageID, "With exactly one chatID: any message after this one counts, even one that came before this call.")),
    timeoutSeconds: v.optional(describe(int(1, 300), "How long to wait (default 30)."), 30),
    includeOwn: v.optional(describe(v.boolean(), "Count messages sent from this account too (default false)."), false),
  }),
  output: v.strictObject({ message: v.nullable(McpMessage), timedOut: v.boolean() }),
  readOnly: true,
  async run(args, tc) {
    const message = await waitForMessage(args, tc);
    if (!message) return { structured: { message: null, timedOut: !tc.signal.aborted }, text: `No new message within ${args.timeoutSeconds} s.` };
    const capped = capMessage(message);
    const chat = getChat(tc.app, message.chatID, 0);
    return { structured: { message: capped, timedOut: false }, text: `New message in "${plain(chat.title)}" (chatID ${code(chat.id)}):\n\n${messageBlock(capped)}` };
  },
});

interface WaitArgs {
  chatIDs?: string[];
  sinceMessageID?: string;
  timeoutSeconds: number;
  includeOwn: boolean;
}

/**
 * The first message that counts, or undefined. Per watched chat, "new" means after a baseline sortKey (the newest
 * message when the call starts, or sinceMessageID): baselines are taken, then the hub is listened to, then each chat
 * is read once more after its baseline, so a message that lands in between is found either way. With no chats given,
 * every chat is watched and a message counts when it is timestamped after the call started (allowing for clock skew).
 */
async function waitForMessage(args: WaitArgs, tc: ToolContext): Promise<Message | undefined> {
  const { app } = tc;
  if (args.sinceMessageID && args.chatIDs?.length !== 1) throw badRequest("sinceMessageID needs exactly one chatID", [{ code: "invalid", message: "give exactly one chatID", path: ["arguments", "chatIDs"] }]);
  const counts = (m: Message) => args.includeOwn || !m.isSender;
  const startedAt = Date.now() - 2000;
  const baselines = new Map<string, string>();
  for (const chatID of args.chatIDs ?? []) {
    const chat = getChat(app, chatID, 0);
    const since = args.sinceMessageID ? await getMessage(app, chat.id, args.sinceMessageID) : (await listMessages(app, chat.id, undefined, undefined)).items[0];
    baselines.set(chat.id, since?.sortKey ?? "");
  }
  const isNew = (m: Message) => counts(m) && (args.chatIDs ? m.sortKey > (baselines.get(m.chatID) ?? "\uffff") : !m.editedTimestamp && Date.parse(m.timestamp) >= startedAt);

  let found: (m: Message) => void = () => undefined;
  const arrived = new Promise<Message>((resolve) => (found = resolve));
  const stop = tc.events.add({
    deliver(events) {
      for (const event of events) {
        if (!event.body.startsWith('"type":"message.upserted"') || (args.chatIDs && !baselines.has(event.chatID))) continue;
        const entries = (JSON.parse(`{${event.body}`) as { entries?: Message[] }).entries ?? [];
        const first = entries.find(isNew);
        if (first) return found(first);
      }
    },
  });
  try {
    for (const [chatID, baseline] of baselines) {
      const after = await listMessages(app, chatID, baseline || undefined, "after");
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

/** `up` resolves when the time is up or the call is cancelled; progress is reported every 10 s until `clear`. */
function deadline(seconds: number, tc: ToolContext): { up: Promise<undefined>; clear(): void } {
  const started = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ticker: ReturnType<typeof setInterval> | undefined;
  let onAbort = () => undefined as void;
  const up = new Promise<undefined>((resolve) => {
    onAbort = () => resolve(undefined);
    timer = setTimeout(onAbort, seconds * 1000);
    ticker = setInterval(() => void tc.progress((Date.now() - started) / 1000, seconds, "waiting for a message").catch(() => undefined), 10_000);
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
