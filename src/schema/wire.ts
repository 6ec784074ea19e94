/**
 * Wire shapes of /v1 (the union of the spec's generation and SDK 5.0.0, wire-compat §1) as valibot schemas: the
 * TypeScript types the services build are inferred from them, and the served OpenAPI document describes them
 * (src/spec/openapi.ts). Objects are strict: the document lists every field the API sends, and the scenario suite
 * fails on a field it does not list.
 */
import * as v from "valibot";

/**
 * What the document says of a field or parameter the official 5.0.0 API does not have (`v.metadata(extension(…))`):
 * a description and the `x-inboxd-extension` marker that src/spec/openapi.test.ts checks for.
 */
export const extension = (description: string) => ({
  description: `inboxd extension: ${description}`,
  "x-inboxd-extension": true,
});

const dateTime = v.pipe(v.string(), v.isoTimestamp(), v.description("ISO 8601 date-time (UTC)"));

export const User = v.pipe(
  v.strictObject({
    id: v.pipe(v.string(), v.description("Stable user ID on the network.")),
    username: v.optional(v.string()),
    phoneNumber: v.optional(v.string()),
    email: v.optional(v.string()),
    fullName: v.optional(v.string()),
    imgURL: v.optional(v.string()),
    cannotMessage: v.optional(v.boolean()),
    isSelf: v.optional(v.boolean()),
  }),
  v.description("A person on a network."),
);
export type User = v.InferOutput<typeof User>;

export const BridgeRef = v.strictObject({
  id: v.string(),
  provider: v.picklist(["cloud", "self-hosted", "local", "platform-sdk"]),
  type: v.string(),
});
export type BridgeRef = v.InferOutput<typeof BridgeRef>;

export const AccountStatus = v.picklist([
  "connected",
  "connecting",
  "backfilling",
  "connection_required",
  "reconnect_required",
  "attention_required",
  "disconnected",
  "disabled",
]);
export type AccountStatus = v.InferOutput<typeof AccountStatus>;

export const Account = v.pipe(
  v.strictObject({
    accountID: v.string(),
    user: User,
    bridge: BridgeRef,
    status: v.pipe(AccountStatus, v.metadata(extension("the connection state of the account."))),
    network: v.optional(v.string()),
    loginID: v.optional(v.pipe(v.string(), v.metadata(extension("the bridge login this account belongs to.")))),
    statusText: v.optional(v.pipe(v.string(), v.metadata(extension("the account's status in words.")))),
    capabilities: v.optional(
      v.pipe(v.record(v.string(), v.unknown()), v.metadata(extension("what the account's network supports."))),
    ),
    via: v.optional(
      v.pipe(
        v.strictObject({
          bridge: BridgeRef,
          accountID: v.string(),
          servers: v.array(v.string()),
          iconURL: v.optional(v.string()),
        }),
        v.metadata(
          extension(
            "for an account that comes through another account: through another Desktop API server, its bridge and account ID there, and the instance IDs of the inboxd servers it passed through, nearest first; for a network bridged into Matrix, the bridge (`type`: the bridged protocol), the ID of the Matrix account it comes through (`servers` empty) and, when the bridge names one, the network's icon (`iconURL`, served by /v1/assets/serve).",
          ),
        ),
      ),
    ),
  }),
  v.description("A chat account on one network."),
);
export type Account = v.InferOutput<typeof Account>;

export const Reaction = v.strictObject({
  id: v.string(),
  participantID: v.string(),
  reactionKey: v.string(),
  emoji: v.optional(v.boolean()),
  imgURL: v.optional(v.string()),
});
export type Reaction = v.InferOutput<typeof Reaction>;

export const Attachment = v.strictObject({
  type: v.picklist(["unknown", "img", "video", "audio"]),
  id: v.optional(v.string()),
  duration: v.optional(v.number()),
  fileName: v.optional(v.string()),
  fileSize: v.optional(v.number()),
  isGif: v.optional(v.boolean()),
  isSticker: v.optional(v.boolean()),
  isVoiceNote: v.optional(v.boolean()),
  mimeType: v.optional(v.string()),
  posterImg: v.optional(v.string()),
  size: v.optional(v.strictObject({ width: v.number(), height: v.number() })),
  srcURL: v.optional(v.string()),
});
export type Attachment = v.InferOutput<typeof Attachment>;

export const MessageType = v.picklist([
  "TEXT",
  "NOTICE",
  "IMAGE",
  "VIDEO",
  "VOICE",
  "AUDIO",
  "FILE",
  "STICKER",
  "LOCATION",
  "REACTION",
]);
export type MessageType = v.InferOutput<typeof MessageType>;

export const Message = v.strictObject({
  id: v.string(),
  accountID: v.string(),
  chatID: v.string(),
  senderID: v.string(),
  senderName: v.optional(v.string()),
  sortKey: v.pipe(v.string(), v.description("Sortable position of the message in its chat.")),
  timestamp: dateTime,
  type: MessageType,
  text: v.optional(v.string()),
  attachments: v.optional(v.array(Attachment)),
  reactions: v.optional(v.array(Reaction)),
  isSender: v.boolean(),
  isUnread: v.optional(v.boolean()),
  linkedMessageID: v.optional(v.string()),
  editedTimestamp: v.optional(dateTime),
  sendStatus: v.optional(
    v.strictObject({
      status: v.picklist(["SUCCESS", "PENDING", "FAIL_RETRIABLE", "FAIL_PERMANENT"]),
      timestamp: dateTime,
      message: v.optional(v.string()),
      deliveredToUsers: v.optional(
        v.pipe(
          v.array(v.string()),
          v.description("User IDs the message was delivered to, when reported by the network."),
        ),
      ),
    }),
  ),
  seen: v.optional(
    v.pipe(
      v.union([dateTime, v.record(v.string(), dateTime)]),
      v.description(
        "Own messages: when the other person read it (a single chat), or who read it and when (a group), when the network reports read receipts.",
      ),
    ),
  ),
});
export type Message = v.InferOutput<typeof Message>;

export const Reminder = v.strictObject({
  remindAt: dateTime,
  remindAtMs: v.number(),
  dismissOnIncomingMessage: v.boolean(),
  isFired: v.boolean(),
  firedAt: v.optional(dateTime),
});

/** An attachment of a chat's draft (5.0.0 DraftAttachment): an upload, kept with the draft until it is cleared. */
export const DraftAttachment = v.strictObject({
  id: v.pipe(v.string(), v.description("The attachment's ID: its key in `attachments`.")),
  type: v.pipe(
    v.picklist(["file", "gif", "recorded_audio"]),
    v.description("`gif` for a GIF, `recorded_audio` for a voice note, `file` for anything else."),
  ),
  mimeType: v.optional(v.string()),
  fileName: v.optional(v.string()),
  filePath: v.optional(
    v.pipe(
      v.string(),
      v.description("The file's path in the daemon's asset directory (the Worker has none: see srcURL)."),
    ),
  ),
  fileSize: v.optional(v.number()),
  audioDurationSeconds: v.optional(v.number()),
  size: v.optional(v.strictObject({ width: v.number(), height: v.number() })),
  uploadID: v.pipe(
    v.string(),
    v.metadata(
      extension("the upload the attachment is; send it with POST /v1/chats/{chatID}/messages `attachment.uploadID`."),
    ),
  ),
  srcURL: v.pipe(v.string(), v.metadata(extension("the file as a local asset URL that /v1/assets/serve serves."))),
});
export type DraftAttachment = v.InferOutput<typeof DraftAttachment>;

export const ChatDraft = v.strictObject({
  text: v.string(),
  attachments: v.optional(
    v.pipe(v.record(v.string(), DraftAttachment), v.description("Draft attachments keyed by attachment ID.")),
  ),
});
export type ChatDraft = v.InferOutput<typeof ChatDraft>;

export const Chat = v.strictObject({
  id: v.string(),
  localChatID: v.pipe(v.string(), v.description("This device's short number for the chat.")),
  accountID: v.string(),
  network: v.string(),
  title: v.string(),
  description: v.optional(v.nullable(v.string())),
  type: v.picklist(["single", "group"]),
  isReadOnly: v.optional(v.boolean()),
  participants: v.strictObject({ items: v.array(User), hasMore: v.boolean(), total: v.number() }),
  lastActivity: v.optional(dateTime),
  unreadCount: v.number(),
  lastReadMessageSortKey: v.optional(v.string()),
  isArchived: v.boolean(),
  isMuted: v.boolean(),
  isPinned: v.boolean(),
  isLowPriority: v.boolean(),
  isMarkedUnread: v.boolean(),
  draft: v.nullable(ChatDraft),
  imgURL: v.optional(
    v.pipe(
      v.string(),
      v.description(
        "The chat's picture as set through this API (and given to the network): a local asset URL (file:// on the daemon, localmxc:// in the Worker) that /v1/assets/serve serves.",
      ),
    ),
  ),
  messageExpirySeconds: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.description(
        "Disappearing-message timer in seconds as set through this API (and given to the network), when one is set (0: off).",
      ),
    ),
  ),
  mutedUntil: v.optional(
    v.pipe(
      dateTime,
      v.metadata(extension("when a timed mute ends; `isMuted` turns false then and this field goes away.")),
    ),
  ),
  labelIDs: v.pipe(
    v.array(v.string()),
    v.metadata(extension("the device-local labels of the chat (GET /v1/labels), in the order they were set.")),
  ),
  reminder: v.optional(v.pipe(Reminder, v.metadata(extension("the chat's reminder, when one is set.")))),
  preview: v.optional(
    v.pipe(Message, v.description("The chat's last message (5.0.0 calls a chat with it ChatWithPreview).")),
  ),
});
export type Chat = v.InferOutput<typeof Chat>;

/** A device-local chat label. */
export const Label = v.pipe(
  v.strictObject({
    id: v.pipe(v.string(), v.description("Stable label ID; chats list it in `labelIDs`.")),
    name: v.string(),
  }),
  v.metadata(extension("a chat label of this device.")),
);
export type Label = v.InferOutput<typeof Label>;

const cursor = v.pipe(v.nullable(v.string()), v.description("Opaque cursor; null when the page is empty."));

/** A page of items with the cursors of its two ends (wire-compat §4). */
export const pageOf = <S extends v.GenericSchema>(item: S) =>
  v.strictObject({ items: v.array(item), hasMore: v.boolean(), oldestCursor: cursor, newestCursor: cursor });

export interface Page<T> {
  items: T[];
  hasMore: boolean;
  oldestCursor: string | null;
  newestCursor: string | null;
}

/** The error body of /v1 (wire-compat §2). */
export const ErrorBody = v.strictObject({
  code: v.pipe(v.string(), v.description("Machine-readable error code, e.g. INVALID_REQUEST, NOT_FOUND.")),
  message: v.string(),
  details: v.optional(
    v.union([
      v.strictObject({
        issues: v.array(
          v.strictObject({ code: v.string(), message: v.string(), path: v.array(v.union([v.string(), v.number()])) }),
        ),
      }),
      v.record(v.string(), v.unknown()),
    ]),
  ),
});

/** A page of message search: the messages and the chats they are in, by chat ID. */
export const MessageSearchPage = v.strictObject({
  ...pageOf(Message).entries,
  chats: v.pipe(v.record(v.string(), Chat), v.description("The chats of the messages on this page, by chat ID.")),
});

export const UnifiedSearchResult = v.strictObject({
  results: v.strictObject({
    chats: v.pipe(v.array(Chat), v.description("Chats whose title or network has every word (word starts).")),
    in_groups: v.pipe(v.array(Chat), v.description("Group chats with a participant whose name has every word.")),
    messages: MessageSearchPage,
  }),
});

export const Success = v.strictObject({ success: v.literal(true) });
