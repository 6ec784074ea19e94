import * as v from "valibot";
import { bounded, boundedArray, id, LIMITS } from "../http/limits.ts";
import { noContent, type ApiRouter } from "../http/route-kit.ts";
import { direction, isoDate, pathParam, queryArray, queryBoolean, queryInt, validate, validateBody } from "../http/validate.ts";
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

const MAX_DATE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const page = { cursor: v.optional(bounded(LIMITS.cursorBytes)), direction: v.optional(direction) };
export const ListQuery = v.object({ ...page, accountIDs: v.optional(queryArray) });
export const SearchQuery = v.object({
  ...page,
  accountIDs: v.optional(queryArray),
  inbox: v.optional(v.picklist(["primary", "low-priority", "archive"])),
  includeMuted: v.optional(queryBoolean),
  lastActivityAfter: v.optional(isoDate),
  lastActivityBefore: v.optional(isoDate),
  limit: v.optional(queryInt(1, 200)),
  query: v.optional(bounded(LIMITS.queryTextBytes)),
  scope: v.optional(v.picklist(["titles", "participants"])),
  type: v.optional(v.picklist(["single", "group", "any"])),
  unreadOnly: v.optional(queryBoolean),
});
export const GetQuery = v.object({ maxParticipantCount: v.optional(queryInt(-1, 500)) });

const UserInput = v.object({
  id: v.optional(v.string()),
  email: v.optional(v.string()),
  fullName: v.optional(v.string()),
  phoneNumber: v.optional(v.string()),
  username: v.optional(v.string()),
});
export const CreateBody = v.object({
  accountID: id,
  mode: v.optional(v.picklist(["create", "start"])),
  participantIDs: v.optional(boundedArray(id)),
  type: v.optional(v.picklist(["single", "group"])),
  title: v.optional(bounded(LIMITS.titleBytes)),
  messageText: v.optional(bounded(LIMITS.textBytes)),
  allowInvite: v.optional(v.boolean()),
  user: v.optional(UserInput),
});
export const StartBody = v.object({
  accountID: id,
  user: UserInput,
  allowInvite: v.optional(v.boolean()),
  messageText: v.optional(bounded(LIMITS.textBytes)),
});
export const PatchBody = v.object({
  title: v.optional(v.nullable(v.pipe(v.string(), v.minLength(1, "title must not be empty (send null to reset it)"), v.maxBytes(LIMITS.titleBytes, `must be at most ${LIMITS.titleBytes} bytes`)))),
  description: v.optional(v.nullable(bounded(LIMITS.descriptionBytes))),
  isArchived: v.optional(v.boolean()),
  isLowPriority: v.optional(v.boolean()),
  isPinned: v.optional(v.boolean()),
  isMuted: v.optional(v.boolean()),
  draft: v.optional(v.nullable(v.object({ text: bounded(LIMITS.textBytes) }))),
});
export const ArchiveBody = v.object({ archived: v.optional(v.boolean(), true) });
export const ReminderBody = v.object({
  reminder: v.pipe(
    v.object({
      // Upper bound: the last millisecond of year 9999, the end of what ISO 8601 dates express without extension.
      // A number in the API's types: fractions (Python's time.time() * 1000) are cut to the millisecond.
      remindAtMs: v.optional(v.pipe(v.number(), v.finite(), v.transform(Math.floor), v.minValue(0), v.maxValue(MAX_DATE_MS))),
      remindAt: v.optional(v.pipe(v.string(), v.isoTimestamp("expected an ISO 8601 date-time"), v.check((x) => Date.parse(x) <= MAX_DATE_MS, "date is after year 9999"))),
      dismissOnIncomingMessage: v.optional(v.boolean(), false),
    }),
    v.check((r) => r.remindAtMs !== undefined || r.remindAt !== undefined, "remindAtMs or remindAt is required"),
  ),
});
export const ReadBody = v.object({ messageID: v.optional(id) });

export function chatRoutes(router: ApiRouter) {
  const chatID = (req: { params: Record<string, string> }) => pathParam(req.params, "chatID");
  router
    .get("/v1/chats", (_req, rc) => listChats(rc.app, validate("query", ListQuery, rc.query)))
    .get("/v1/chats/search", (_req, rc) => searchChats(rc.app, validate("query", SearchQuery, rc.query)))
    .post("/v1/chats", async (req, rc) => createChat(rc.app, await validateBody(req, CreateBody)))
    .post("/v1/chats/start", async (req, rc) => createChat(rc.app, { ...(await validateBody(req, StartBody)), mode: "start" }))
    .get("/v1/chats/:chatID", (req, rc) => getChat(rc.app, chatID(req), validate("query", GetQuery, rc.query).maxParticipantCount))
    .patch("/v1/chats/:chatID", async (req, rc) => updateChat(rc.app, chatID(req), await validateBody(req, PatchBody)))
    .post("/v1/chats/:chatID/archive", async (req, rc) => {
      await archiveChat(rc.app, chatID(req), (await validateBody(req, ArchiveBody)).archived);
      return noContent();
    })
    .post("/v1/chats/:chatID/reminders", async (req, rc) => {
      const { reminder } = await validateBody(req, ReminderBody);
      await setReminder(rc.app, chatID(req), reminder.remindAtMs ?? Date.parse(reminder.remindAt!), reminder.dismissOnIncomingMessage);
      return noContent();
    })
    .delete("/v1/chats/:chatID/reminders", async (req, rc) => {
      await clearReminder(rc.app, chatID(req));
      return noContent();
    })
    .post("/v1/chats/:chatID/read", async (req, rc) => markRead(rc.app, chatID(req), (await validateBody(req, ReadBody)).messageID))
    .post("/v1/chats/:chatID/unread", async (req, rc) => markUnread(rc.app, chatID(req), (await validateBody(req, ReadBody)).messageID))
    .post("/v1/chats/:chatID/notify-anyway", (req, rc) => notifyAnyway(rc.app, chatID(req)));
}
