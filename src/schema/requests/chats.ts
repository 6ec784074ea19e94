import * as v from "valibot";
import { bounded, boundedArray, id, LIMITS } from "../limits.ts";
import { direction, isoDate, queryArray, queryBoolean, queryInt } from "../query.ts";
import { extension } from "../wire.ts";
import { SendBody } from "./messages.ts";

/** Chats: the request schemas (query and body) of their routes, which MCP tools and /v0 share. */
export const MAX_DATE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
export const page = { cursor: v.optional(bounded(LIMITS.cursorBytes)), direction: v.optional(direction) };
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
  labelID: v.optional(
    v.pipe(id, v.metadata(extension("only chats with this label (GET /v1/labels); an unknown label is a 422."))),
  ),
});
export const GetQuery = v.object({ maxParticipantCount: v.optional(queryInt(-1, 500)) });

export const UserInput = v.object({
  id: v.optional(v.string()),
  email: v.optional(v.string()),
  fullName: v.optional(v.string()),
  phoneNumber: v.optional(v.string()),
  username: v.optional(v.string()),
});
export const CreateBody = v.object({
  accountID: id,
  mode: v.optional(
    v.pipe(
      v.picklist(["create", "start"]),
      v.metadata(extension("4.2.x input: `start` finds or starts a direct chat with `user`.")),
    ),
  ),
  participantIDs: v.optional(boundedArray(id)),
  type: v.optional(v.picklist(["single", "group"])),
  title: v.optional(bounded(LIMITS.titleBytes)),
  messageText: v.optional(bounded(LIMITS.textBytes)),
  allowInvite: v.optional(v.pipe(v.boolean(), v.metadata(extension("4.2.x input, with mode `start`.")))),
  user: v.optional(
    v.pipe(UserInput, v.metadata(extension("4.2.x input, with mode `start`: who to start a chat with."))),
  ),
});
export const StartBody = v.object({
  accountID: id,
  user: UserInput,
  allowInvite: v.optional(v.boolean()),
  messageText: v.optional(bounded(LIMITS.textBytes)),
});
/** An ISO 8601 date-time no later than year 9999 (the end of what ISO 8601 dates express without extension). */
export const dateTimeInput = v.pipe(
  v.string(),
  v.isoTimestamp("expected an ISO 8601 date-time"),
  v.check((x) => Date.parse(x) <= MAX_DATE_MS, "date is after year 9999"),
);
/** Disappearing-message timers: any network's fits in a signed 32-bit number of seconds (68 years). */
export const MAX_EXPIRY_SECONDS = 2 ** 31 - 1;
/** Attachments of one draft (the official clients take a handful). */
export const MAX_DRAFT_ATTACHMENTS = 100;
/** 5.0.0 DraftAttachmentInput: a message attachment (the upload and its overrides), with an optional ID. */
export const DraftAttachmentInput = v.object({ ...SendBody.entries.attachment.wrapped.entries, id: v.optional(id) });

export const PatchBody = v.object({
  title: v.optional(
    v.nullable(
      v.pipe(
        v.string(),
        v.minLength(1, "title must not be empty (send null to reset it)"),
        v.maxBytes(LIMITS.titleBytes, `must be at most ${LIMITS.titleBytes} bytes`),
      ),
    ),
  ),
  description: v.optional(v.nullable(bounded(LIMITS.descriptionBytes))),
  isArchived: v.optional(v.boolean()),
  isLowPriority: v.optional(v.boolean()),
  isPinned: v.optional(v.boolean()),
  isMuted: v.optional(v.boolean()),
  mutedUntil: v.optional(
    v.pipe(
      v.nullable(dateTimeInput),
      v.metadata(
        extension(
          "with `isMuted: true` (or alone): mute until this time, then unmute on its own; null drops the end time of a mute.",
        ),
      ),
      v.transform((x) => (x === null ? null : Date.parse(x))),
    ),
  ),
  draft: v.optional(
    v.pipe(
      v.nullable(
        v.object({
          text: bounded(LIMITS.textBytes),
          attachments: v.optional(
            v.pipe(
              v.record(id, DraftAttachmentInput),
              v.check(
                (x) => Object.keys(x).length <= MAX_DRAFT_ATTACHMENTS,
                `must have at most ${MAX_DRAFT_ATTACHMENTS} attachments`,
              ),
              v.description(
                "Draft attachments keyed by attachment ID, each an upload (`uploadID` from POST /v1/assets/upload; unknown: 422). The draft keeps them until it is cleared.",
              ),
            ),
          ),
        }),
      ),
      v.description(
        "The draft (this device only): set only when the current one is empty; null clears text and attachments.",
      ),
    ),
  ),
  imgURL: v.optional(
    v.pipe(
      v.nullable(
        v.pipe(
          v.string(),
          v.minLength(1, "imgURL must not be empty (send null to remove the picture)"),
          v.maxBytes(LIMITS.urlBytes, `must be at most ${LIMITS.urlBytes} bytes`),
        ),
      ),
      v.description(
        `The chat's picture, set on the network: an uploaded image's \`uploadID\` or \`srcURL\`, or — on the daemon — the absolute path (or file:// URL) of an image file on its machine: a regular file (not a symbolic link) the daemon can read, up to ${LIMITS.avatarBytes} bytes, whose content is PNG, JPEG, GIF or WebP (the extension is not trusted); it is stored as an asset. A Worker has no file system: upload first. Anything else is a 422 saying which rule it broke; null removes the picture. 422 NOT_SUPPORTED where the network cannot.`,
      ),
    ),
  ),
  messageExpirySeconds: v.optional(
    v.pipe(
      v.nullable(
        v.pipe(
          v.number(),
          v.integer("expected a whole number of seconds"),
          v.minValue(0, "must be 0 (off) or more"),
          v.maxValue(MAX_EXPIRY_SECONDS),
        ),
      ),
      v.description(
        "Disappearing-message timer in seconds, set on the network (0: off); null clears it. 422 NOT_SUPPORTED where the network has none.",
      ),
    ),
  ),
  labelIDs: v.optional(
    v.pipe(
      boundedArray(id),
      v.metadata(
        extension("replaces the chat's labels (IDs from GET /v1/labels; [] removes all); an unknown ID is a 422."),
      ),
    ),
  ),
});
export const ArchiveBody = v.object({ archived: v.optional(v.boolean(), true) });
export const ReminderBody = v.object({
  reminder: v.pipe(
    v.object({
      // Upper bound: the last millisecond of year 9999, the end of what ISO 8601 dates express without extension.
      // A number in the API's types: fractions (Python's time.time() * 1000) are cut to the millisecond.
      remindAtMs: v.optional(
        v.pipe(v.number(), v.finite(), v.transform(Math.floor), v.minValue(0), v.maxValue(MAX_DATE_MS)),
      ),
      remindAt: v.optional(dateTimeInput),
      dismissOnIncomingMessage: v.optional(v.boolean(), false),
    }),
    v.check((r) => r.remindAtMs !== undefined || r.remindAt !== undefined, "remindAtMs or remindAt is required"),
    // Handlers get one time however it was sent.
    v.transform((r) => ({
      at: r.remindAtMs ?? Date.parse(r.remindAt!),
      dismissOnIncomingMessage: r.dismissOnIncomingMessage,
    })),
  ),
});
export const ReadBody = v.object({ messageID: v.optional(id) });
