/**
 * The /v0 wire shapes, built from /v1's (src/schema/wire.ts) by what the spec says differs: a v0 Message also has
 * `messageID` (equal to `id`) and a `sortKey` that may be a string or an integer; a v0 Chat has `network`, a nullable
 * `localChatID` and a `lastReadMessageSortKey` of either type. inboxd sends strings; the types are what v0 clients
 * were promised. Everything else /v1 sends is sent here too (extra fields never break clients).
 */
import * as v from "valibot";
import { Account, Chat, Message, User, type Page } from "../schema/wire.ts";
import type { MessageSearchResult } from "../services/message-search.ts";

const stringOrInteger = (description: string) =>
  v.pipe(v.union([v.string(), v.pipe(v.number(), v.integer())]), v.description(description));

export const V0Message = v.strictObject({
  ...Message.entries,
  messageID: v.pipe(v.string(), v.description("The message's ID again (equal to `id`), where v0 clients read it.")),
  sortKey: stringOrInteger(
    "Sortable position of the message in its chat; opaque (a string here, an integer in some v0 servers).",
  ),
});
export type V0Message = v.InferOutput<typeof V0Message>;

export const V0Chat = v.strictObject({
  ...Chat.entries,
  network: v.pipe(v.string(), v.description("Display-only network name; actions take `accountID`.")),
  localChatID: v.pipe(
    v.nullable(v.string()),
    v.description("This device's short number for the chat; v0 actions accept it as `chatID`."),
  ),
  lastReadMessageSortKey: v.optional(stringOrInteger("sortKey of the last message read.")),
  preview: v.optional(v.pipe(V0Message, v.description("The last message."))),
});
export type V0Chat = v.InferOutput<typeof V0Chat>;

export const V0Account = v.strictObject({
  accountID: Account.entries.accountID,
  network: v.pipe(v.string(), v.description("Display-only network name; actions take `accountID`.")),
  user: User,
});

export const V0ChatPage = v.strictObject({
  items: v.array(V0Chat),
  hasMore: v.boolean(),
  oldestCursor: v.nullable(v.string()),
  newestCursor: v.nullable(v.string()),
});

export const V0MessageSearchPage = v.strictObject({
  items: v.array(V0Message),
  chats: v.pipe(v.record(v.string(), V0Chat), v.description("The chats of the messages on this page, by chat ID.")),
  hasMore: v.boolean(),
  oldestCursor: v.nullable(v.string()),
  newestCursor: v.nullable(v.string()),
});

export const V0SearchResult = v.strictObject({
  results: v.strictObject({
    chats: v.pipe(v.array(V0Chat), v.description("Chats whose title or network has every word (word starts).")),
    in_groups: v.pipe(v.array(V0Chat), v.description("Group chats with a participant whose name has every word.")),
    messages: V0MessageSearchPage,
  }),
});

/**
 * What a v0 action answers: `success` and the action's own data. v0 clients also read an `error` field; inboxd
 * never sends `success: false` with it — a failed action answers an error status with the v0 error body — but the
 * field stays documented for them.
 */
export const actionResult = <E extends v.ObjectEntries>(entries: E) =>
  v.strictObject({
    success: v.pipe(
      v.boolean(),
      v.description("true: the action was done (a failure answers an error status instead)."),
    ),
    error: v.optional(
      v.pipe(v.string(), v.description("Not sent by inboxd: failures answer an error status with the v0 error body.")),
    ),
    ...entries,
  });

export const toV0Message = (message: Message): V0Message => ({ ...message, messageID: message.id });

export function toV0Chat(chat: Chat): V0Chat {
  const { preview, ...rest } = chat;
  return preview ? { ...rest, preview: toV0Message(preview) } : rest;
}

export function toV0ChatPage(page: Page<Chat>) {
  return { ...page, items: page.items.map(toV0Chat) };
}

export function toV0MessageSearch(page: MessageSearchResult) {
  const chats: Record<string, V0Chat> = {};
  for (const [id, chat] of Object.entries(page.chats)) chats[id] = toV0Chat(chat);
  return { ...page, items: page.items.map(toV0Message), chats };
}
