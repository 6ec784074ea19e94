import type { InboundEvent, InboundMessage } from "../../bridges/connector.ts";
import type { Attachment } from "../../schema/wire.ts";
import { htmlToText, stripReplyFallback } from "./formatting.ts";
import { encryptedFileOf, encryptedMediaID } from "./encrypted-media.ts";
import type { MatrixEvent } from "./event.ts";
import { memberName, type Room } from "./rooms.ts";

/**
 * Set in an encrypted event's `unsigned` by the client when it could not decrypt it: "waiting" for its room key
 * (the message is revised once the key arrives), or "failed".
 */
export const UNREADABLE = "inboxd.unreadable";
const UNREADABLE_TEXT: Record<string, string> = {
  waiting: "🔒 Waiting for this message's key: it shows here once the key arrives from the sender's devices.",
  failed: "🔒 This encrypted message cannot be decrypted on this device.",
};
const NO_CRYPTO =
  "🔒 This message is end-to-end encrypted, and this account's device cannot decrypt it (end-to-end encryption needs a password login, which gives inboxd a device of its own).";

/** The longest text kept from one event; a homeserver caps events at 64 KiB, a hostile one might not. */
const MAX_TEXT = 64 * 1024;

export interface TimelineContext {
  room: Room;
  selfID: string;
}

const relation = (content: Record<string, unknown>) =>
  content["m.relates_to"] && typeof content["m.relates_to"] === "object"
    ? (content["m.relates_to"] as Record<string, unknown>)
    : undefined;

/** What one room event means in the common model: nothing, a message, an edit, a reaction or a deletion. */
export function translate(event: MatrixEvent, ctx: TimelineContext): InboundEvent[] {
  const chat = ctx.room.id;
  if (!event.event_id) return [];
  const rel = relation(event.content);
  switch (event.type) {
    case "m.reaction": {
      const target = rel?.rel_type === "m.annotation" && typeof rel.event_id === "string" ? rel.event_id : undefined;
      const key = typeof rel?.key === "string" ? rel.key.slice(0, 256) : undefined;
      if (!target || !key) return [];
      return [
        {
          type: "reaction",
          networkChatID: chat,
          networkMessageID: target,
          senderID: event.sender,
          reactionKey: key,
          networkReactionID: event.event_id,
        },
      ];
    }
    case "m.room.redaction": {
      const target = event.redacts ?? (typeof event.content.redacts === "string" ? event.content.redacts : undefined);
      return target ? [{ type: "delete", networkChatID: chat, networkMessageID: target, senderID: event.sender }] : [];
    }
    case "m.room.message":
    case "m.sticker":
    case "m.room.encrypted": {
      if (isRedacted(event)) return [];
      // An edit or reaction still encrypted has nothing to show: it applies once it can be read.
      if (event.type === "m.room.encrypted" && (rel?.rel_type === "m.replace" || rel?.rel_type === "m.annotation"))
        return [];
      if (rel?.rel_type === "m.replace" && typeof rel.event_id === "string") {
        const replacement = event.content["m.new_content"];
        if (!replacement || typeof replacement !== "object") return [];
        const text = bodyText(replacement as Record<string, unknown>);
        if (text === undefined) return [];
        return [
          {
            type: "edit",
            networkChatID: chat,
            networkMessageID: rel.event_id,
            text,
            timestamp: event.origin_server_ts,
            senderID: event.sender,
          },
        ];
      }
      const message = messageOf(event, ctx);
      return message ? [{ type: "message", networkChatID: chat, message }] : [];
    }
    default: {
      const notice = event.state_key !== undefined ? stateNotice(event, ctx) : undefined;
      return notice
        ? [{ type: "message", networkChatID: chat, message: base(event, ctx, { type: "NOTICE", text: notice }) }]
        : [];
    }
  }
}

function isRedacted(event: MatrixEvent): boolean {
  return event.unsigned?.redacted_because !== undefined && Object.keys(event.content).length === 0;
}

function base(event: MatrixEvent, ctx: TimelineContext, rest: Partial<InboundMessage>): InboundMessage {
  return {
    networkMessageID: event.event_id,
    senderID: event.sender,
    senderName: memberName(ctx.room, event.sender),
    timestamp: event.origin_server_ts,
    ...(event.sender === ctx.selfID ? { isSender: true } : {}),
    ...rest,
  };
}

/** The text of a message's content: `formatted_body` as text where it is HTML, else `body`, reply fallback dropped. */
function bodyText(content: Record<string, unknown>): string | undefined {
  const html =
    content.format === "org.matrix.custom.html" && typeof content.formatted_body === "string"
      ? content.formatted_body.slice(0, MAX_TEXT * 2)
      : undefined;
  if (html !== undefined) return htmlToText(html).slice(0, MAX_TEXT);
  if (typeof content.body !== "string") return undefined;
  return stripReplyFallback(content.body).slice(0, MAX_TEXT);
}

const MEDIA: Record<string, { message: NonNullable<InboundMessage["type"]>; attachment: Attachment["type"] }> = {
  "m.image": { message: "IMAGE", attachment: "img" },
  "m.video": { message: "VIDEO", attachment: "video" },
  "m.audio": { message: "AUDIO", attachment: "audio" },
  "m.file": { message: "FILE", attachment: "unknown" },
};

function messageOf(event: MatrixEvent, ctx: TimelineContext): InboundMessage | undefined {
  const c = event.content;
  if (event.type === "m.room.encrypted")
    return base(event, ctx, {
      type: "NOTICE",
      text: UNREADABLE_TEXT[String(event.unsigned?.[UNREADABLE])] ?? NO_CRYPTO,
    });
  const rel = relation(c);
  const reply = (rel?.["m.in_reply_to"] as { event_id?: unknown } | undefined)?.event_id;
  // A thread's message answers the thread root, unless it is a real reply inside the thread (is_falling_back false).
  const replyTo =
    rel?.rel_type === "m.thread" && typeof rel.event_id === "string" && rel.is_falling_back !== false
      ? rel.event_id
      : typeof reply === "string"
        ? reply
        : undefined;
  const edited = editedAt(event);
  const common: Partial<InboundMessage> = {
    ...(replyTo ? { replyTo } : {}),
    ...(edited ? { editedTimestamp: edited } : {}),
  };
  const msgtype = event.type === "m.sticker" ? "m.sticker" : typeof c.msgtype === "string" ? c.msgtype : undefined;
  if (msgtype === "m.text" || msgtype === "m.notice" || msgtype === "m.emote") {
    const text = bodyText(c);
    if (text === undefined) return undefined;
    if (msgtype === "m.emote")
      return base(event, ctx, { ...common, text: `* ${memberName(ctx.room, event.sender)} ${text}` });
    return base(event, ctx, { ...common, type: msgtype === "m.notice" ? "NOTICE" : "TEXT", text });
  }
  if (msgtype === "m.location") {
    const uri = typeof c.geo_uri === "string" ? c.geo_uri.slice(0, 200) : "";
    return base(event, ctx, {
      ...common,
      type: "LOCATION",
      text: [typeof c.body === "string" ? c.body.slice(0, MAX_TEXT) : "", uri].filter(Boolean).join("\n"),
    });
  }
  const media =
    msgtype === "m.sticker"
      ? { message: "STICKER" as const, attachment: "img" as const }
      : msgtype
        ? MEDIA[msgtype]
        : undefined;
  if (!media) {
    // An unknown msgtype still has a body meant to be shown (the spec's fallback rule).
    const text = bodyText(c);
    return text === undefined ? undefined : base(event, ctx, { ...common, text });
  }
  const attachment = attachmentOf(c, media.attachment, msgtype === "m.sticker", event.event_id, ctx.room.id);
  const fileName = typeof c.filename === "string" ? c.filename : undefined;
  // With `filename` set, `body` is a caption (spec 1.10); otherwise it is the file's name.
  const caption = fileName && typeof c.body === "string" && c.body !== fileName ? bodyText(c) : undefined;
  const voice = c["org.matrix.msc3245.voice"] !== undefined && media.message === "AUDIO";
  return base(event, ctx, {
    ...common,
    type: voice ? "VOICE" : media.message,
    ...(caption ? { text: caption } : {}),
    attachments: attachment ? [attachment] : [],
  });
}

function attachmentOf(
  c: Record<string, unknown>,
  type: Attachment["type"],
  sticker: boolean,
  eventID: string,
  roomID: string,
): Attachment | undefined {
  // An encrypted file (`file`) is named with the event that holds its key (encrypted-media.ts), not with the key.
  const file = encryptedFileOf(c.file);
  const url = file
    ? encryptedMediaID(file.url, roomID, eventID)
    : typeof c.url === "string" && /^mxc:\/\/[^/]+\/[^/?#]+$/.test(c.url)
      ? c.url
      : undefined;
  if (!url) return undefined;
  const info = c.info && typeof c.info === "object" ? (c.info as Record<string, unknown>) : {};
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);
  const fileName = typeof c.filename === "string" ? c.filename : typeof c.body === "string" ? c.body : undefined;
  const [w, h, size, duration] = [num(info.w), num(info.h), num(info.size), num(info.duration)];
  return {
    type,
    id: url,
    ...(fileName ? { fileName: fileName.slice(0, 255) } : {}),
    ...(typeof info.mimetype === "string" ? { mimeType: info.mimetype.slice(0, 100) } : {}),
    ...(size !== undefined ? { fileSize: size } : {}),
    ...(w !== undefined && h !== undefined ? { size: { width: w, height: h } } : {}),
    ...(duration !== undefined ? { duration: duration / 1000 } : {}),
    ...(sticker ? { isSticker: true } : {}),
    ...(typeof info.mimetype === "string" && info.mimetype === "image/gif" ? { isGif: true } : {}),
    ...(c["org.matrix.msc3245.voice"] !== undefined ? { isVoiceNote: true } : {}),
  };
}

/**
 * The time of the newest edit the server bundled with the event (history). Servers before spec 1.7 also put the
 * edited content in place of the original, so the text is already the edited one there.
 */
function editedAt(event: MatrixEvent): number | undefined {
  const replace = (event.unsigned?.["m.relations"] as Record<string, { origin_server_ts?: unknown }> | undefined)?.[
    "m.replace"
  ];
  return typeof replace?.origin_server_ts === "number" ? replace.origin_server_ts : undefined;
}

/** Membership and room-setting changes shown as notices, as Element shows them; others (power levels, ACLs) are not. */
function stateNotice(event: MatrixEvent, ctx: TimelineContext): string | undefined {
  const who = memberName(ctx.room, event.sender);
  const c = event.content;
  const prev = (event.unsigned?.prev_content ?? {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" ? v.slice(0, 255) : undefined);
  switch (event.type) {
    case "m.room.member": {
      const target = event.state_key!;
      const targetName = str(c.displayname) ?? str(prev.displayname) ?? target;
      const membership = str(c.membership);
      const before = str(prev.membership);
      if (membership === "join" && before === "join") {
        if (str(c.displayname) !== str(prev.displayname))
          return c.displayname
            ? `${str(prev.displayname) ?? target} changed their display name to ${str(c.displayname)}`
            : `${str(prev.displayname) ?? target} removed their display name`;
        return undefined; // an avatar change: not worth a line
      }
      if (membership === "join") return `${targetName} joined`;
      if (membership === "invite") return `${who} invited ${targetName}`;
      if (membership === "ban") return `${who} banned ${targetName}${str(c.reason) ? `: ${str(c.reason)}` : ""}`;
      if (membership === "leave") {
        if (event.sender !== target)
          return before === "invite"
            ? `${who} withdrew ${targetName}'s invitation`
            : `${who} removed ${targetName}${str(c.reason) ? `: ${str(c.reason)}` : ""}`;
        return before === "invite" ? `${targetName} declined the invitation` : `${targetName} left`;
      }
      if (membership === "knock") return `${targetName} asked to join`;
      return undefined;
    }
    case "m.room.name":
      return str(c.name) ? `${who} changed the room name to ${str(c.name)}` : `${who} removed the room name`;
    case "m.room.topic":
      return str(c.topic) ? `${who} changed the topic to "${str(c.topic)}"` : `${who} removed the topic`;
    case "m.room.avatar":
      return str(c.url) ? `${who} changed the room picture` : `${who} removed the room picture`;
    case "m.room.encryption":
      return `${who} turned on end-to-end encryption`;
    case "m.room.create":
      return `${who} created the room`;
    case "m.room.tombstone":
      return `${who} upgraded this room${str(c.body) ? `: ${str(c.body)}` : ""}`;
    default:
      return undefined;
  }
}
