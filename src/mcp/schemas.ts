/**
 * Schemas the tools share. Inputs are JSON-typed (numbers, booleans and arrays as such, not query strings) and built
 * from the same pieces as the REST schemas (src/schema/limits.ts); outputs are the wire schemas, with message text
 * capped for MCP (`textTruncated` says when).
 */
import * as v from "valibot";
import { bounded, boundedArray, id, LIMITS } from "../schema/limits.ts";
import { Chat, Message, pageOf } from "../schema/wire.ts";

export const describe = <S extends v.GenericSchema>(schema: S, description: string) =>
  v.pipe(schema, v.description(description));

export const chatID = describe(id, "The chat's ID (from search_chats, list_unread, search or get_chat).");
export const messageID = describe(id, "The message's ID (messageID in message listings).");
export const accountIDs = describe(boundedArray(id), "Only these accounts (accountID from get_accounts).");
export const isoDateTime = v.pipe(
  v.string(),
  v.isoTimestamp("expected an ISO 8601 date-time, e.g. 2026-01-31T18:00:00Z"),
  v.transform((s) => Date.parse(s)),
);
export const int = (min: number, max: number) => v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));

/** Cursor and direction, as every list tool takes them. */
export const paging = {
  cursor: v.optional(
    describe(
      bounded(LIMITS.cursorBytes),
      "A cursor from the previous page of this same call (oldestCursor or newestCursor).",
    ),
  ),
  direction: v.optional(
    describe(v.picklist(["before", "after"]), '"before" (default): older than the cursor; "after": newer.'),
  ),
};

export const McpMessage = v.strictObject({
  ...Message.entries,
  textTruncated: v.optional(
    describe(
      v.literal(true),
      `The text was cut at 1000 characters; get_message with fullText: true returns all of it.`,
    ),
  ),
});
export type McpMessage = v.InferOutput<typeof McpMessage>;

export { Chat };
export const ChatPage = pageOf(Chat);
export const MessagePage = pageOf(McpMessage);
export const MessageSearchPage = v.strictObject({ ...MessagePage.entries, chats: v.record(v.string(), Chat) });
