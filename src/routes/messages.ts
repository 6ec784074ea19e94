import * as v from "valibot";
import { bounded, id, LIMITS } from "../http/limits.ts";
import { noContent, type ApiRouter } from "../http/route-kit.ts";
import { badRequest } from "../http/errors.ts";
import { direction, isoDate, pathParam, queryArray, queryBoolean, queryInt, validate, validateBody } from "../http/validate.ts";
import { deleteMessage, editMessage, getMessage, listMessages, sendMessage } from "../services/messages.ts";
import { searchMessages } from "../services/message-search.ts";
import { addReaction, removeReaction } from "../services/reactions.ts";

export const ListQuery = v.object({ cursor: v.optional(bounded(LIMITS.cursorBytes)), direction: v.optional(direction) });
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

export function messageRoutes(router: ApiRouter) {
  const ids = (req: { params: Record<string, string> }) => [pathParam(req.params, "chatID"), pathParam(req.params, "messageID")] as const;
  router
    .get("/v1/messages/search", (_req, rc) => searchMessages(rc.app, validate("query", SearchQuery, rc.query)))
    .get("/v1/chats/:chatID/messages", (req, rc) => {
      const q = validate("query", ListQuery, rc.query);
      return listMessages(rc.app, pathParam(req.params, "chatID"), q.cursor, q.direction);
    })
    .post("/v1/chats/:chatID/messages", async (req, rc) => sendMessage(rc.app, pathParam(req.params, "chatID"), await validateBody(req, SendBody)))
    .get("/v1/chats/:chatID/messages/:messageID", (req, rc) => getMessage(rc.app, ...ids(req)))
    .put("/v1/chats/:chatID/messages/:messageID", async (req, rc) => editMessage(rc.app, ...ids(req), (await validateBody(req, EditBody)).text))
    .delete("/v1/chats/:chatID/messages/:messageID", async (req, rc) => {
      await deleteMessage(rc.app, ...ids(req));
      return noContent();
    })
    .post("/v1/chats/:chatID/messages/:messageID/reactions", async (req, rc) => {
      const body = await validateBody(req, ReactionBody);
      return addReaction(rc.app, ...ids(req), body.reactionKey, body.transactionID);
    })
    .delete("/v1/chats/:chatID/messages/:messageID/reactions", (req, rc) =>
      removeReaction(rc.app, ...ids(req), validate("query", ReactionQuery, rc.query).reactionKey),
    )
    .delete("/v1/chats/:chatID/messages/:messageID/reactions/:reactionKey", (req, rc) => {
      const key = pathParam(req.params, "reactionKey");
      if (!key) throw badRequest("reactionKey is required", [{ code: "required", message: "reactionKey is required", path: ["path", "reactionKey"] }]);
      return removeReaction(rc.app, ...ids(req), key);
    });
}
