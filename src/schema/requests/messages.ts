import * as v from "valibot";
import { bounded, id, LIMITS } from "../limits.ts";
import { describedQueryBoolean, direction, isoDate, queryArray, queryBoolean, queryInt } from "../query.ts";

/** Messages: the request schemas (query and body) of their routes, which MCP tools and /v0 share. */
export const messageCursor = v.pipe(
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
      size: v.optional(
        v.object({ width: v.pipe(v.number(), v.minValue(0)), height: v.pipe(v.number(), v.minValue(0)) }),
      ),
      // 4.2.x: gif | voiceNote | sticker; 5.0.0 adds image | video | audio | file | voice-note
      type: v.optional(v.picklist(["gif", "voiceNote", "sticker", "image", "video", "audio", "file", "voice-note"])),
    }),
  ),
});
export const EditBody = v.object({
  text: v.pipe(
    v.string(),
    v.minLength(1, "text must not be empty"),
    v.maxBytes(LIMITS.textBytes, `must be at most ${LIMITS.textBytes} bytes`),
  ),
});
export const ReactionBody = v.object({
  reactionKey: id,
  transactionID: v.optional(bounded(LIMITS.idBytes)),
});
export const ReactionQuery = v.object({ reactionKey: id });
export const DeleteQuery = v.object({
  forEveryone: v.optional(
    describedQueryBoolean(
      "true (default): delete on the network too; false: delete only on this device, the network is not told.",
    ),
    "true",
  ),
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
