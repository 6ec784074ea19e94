import type { InboundMessage, NetworkChat } from "../../bridges/connector.ts";
import type { Attachment, User } from "../../schema/wire.ts";

/** The upstream's wire shapes, as far as they are read here (5.0.0 and inboxd answer both). */
export interface UpstreamChat {
  id: string;
  accountID: string;
  title?: string;
  type?: "single" | "group";
  imgURL?: string | null;
  participants?: { items?: (User & { isSelf?: boolean })[]; hasMore?: boolean; total?: number };
  unreadCount?: number;
  isArchived?: boolean;
  isMuted?: boolean;
  isPinned?: boolean;
  isLowPriority?: boolean;
}

export interface UpstreamMessage {
  id: string;
  chatID: string;
  accountID: string;
  senderID: string;
  senderName?: string;
  timestamp: string;
  type?: string;
  text?: string;
  editedTimestamp?: string;
  isSender?: boolean;
  isDeleted?: boolean;
  linkedMessageID?: string;
  attachments?: (Attachment & { type?: string })[];
  reactions?: { id: string; participantID: string; reactionKey: string }[];
}

const TYPES = new Set(["TEXT", "NOTICE", "IMAGE", "VIDEO", "VOICE", "AUDIO", "FILE", "STICKER", "LOCATION"]);

/**
 * Media URLs of the upstream, rewritten as URLs of this login: `mxc://desktop-api.<loginID>/<the upstream URL,
 * base64url>`. The upstream's own URLs (`mxc://inboxd/…` on another inboxd) would otherwise read as this server's
 * assets, or another network's.
 */
export class MediaURLs {
  private readonly host: string;
  constructor(loginID: string) {
    this.host = `desktop-api.${loginID.replace(/[^A-Za-z0-9.-]/g, "-")}`;
  }
  wrap(url: string): string {
    return `mxc://${this.host}/${base64url(url)}`;
  }
  /** The upstream URL behind one of this login's URLs; undefined for any other URL. */
  unwrap(url: string): string | undefined {
    const prefix = `mxc://${this.host}/`;
    if (!url.startsWith(prefix)) return undefined;
    try {
      return new TextDecoder().decode(
        Uint8Array.from(atob(url.slice(prefix.length).replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)),
      );
    } catch {
      return undefined;
    }
  }
}

const base64url = (text: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(text)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

export function chatOf(chat: UpstreamChat, media: MediaURLs): NetworkChat {
  const participants = (chat.participants?.items ?? []).map((p) => ({ ...p }));
  const total = chat.participants?.total;
  return {
    networkChatID: chat.id,
    type: chat.type === "group" ? "group" : "single",
    title: chat.title ?? chat.id,
    participants,
    ...(total !== undefined && total > participants.length ? { participantCount: total } : {}),
    // The upstream's own picture URL (its mxc://, or the file:// of its asset it serves through /v1/assets/serve).
    ...(chat.imgURL && /^((local)?mxc|file):\/\//.test(chat.imgURL) ? { imgURL: media.wrap(chat.imgURL) } : {}),
    ...(typeof chat.isPinned === "boolean" ? { isPinned: chat.isPinned } : {}),
    ...(typeof chat.isMuted === "boolean" ? { isMuted: chat.isMuted } : {}),
    ...(typeof chat.isLowPriority === "boolean" ? { isLowPriority: chat.isLowPriority } : {}),
    ...(typeof chat.isArchived === "boolean" ? { isArchived: chat.isArchived } : {}),
    ...(typeof chat.unreadCount === "number" ? { unreadCount: chat.unreadCount } : {}),
  };
}

export function messageOf(m: UpstreamMessage, media: MediaURLs, withReactions = false): InboundMessage {
  const edited = m.editedTimestamp ? Date.parse(m.editedTimestamp) : NaN;
  return {
    networkMessageID: m.id,
    senderID: m.senderID,
    ...(m.senderName ? { senderName: m.senderName } : {}),
    timestamp: Date.parse(m.timestamp) || Date.now(),
    type: m.type && TYPES.has(m.type) ? (m.type as InboundMessage["type"]) : "TEXT",
    ...(m.text !== undefined ? { text: m.text } : {}),
    ...(Number.isFinite(edited) ? { editedTimestamp: edited } : {}),
    isSender: m.isSender === true,
    ...(m.linkedMessageID ? { replyTo: m.linkedMessageID } : {}),
    ...(m.attachments?.length ? { attachments: m.attachments.map((a) => attachmentOf(a, media)) } : {}),
    ...(withReactions && m.reactions?.length ? { reactions: reactionsOf(m) } : {}),
  };
}

export const reactionsOf = (m: UpstreamMessage) =>
  (m.reactions ?? []).map((r) => ({ senderID: r.participantID, reactionKey: r.reactionKey }));

function attachmentOf(a: Attachment & { type?: string }, media: MediaURLs): Attachment {
  const type = a.type === "img" || a.type === "video" || a.type === "audio" ? a.type : "unknown";
  const out: Attachment = { type };
  if (a.id && /^(local)?mxc:\/\//.test(a.id)) out.id = media.wrap(a.id);
  for (const key of ["duration", "fileName", "fileSize", "isGif", "isSticker", "isVoiceNote", "mimeType"] as const)
    if (a[key] !== undefined) (out as Record<string, unknown>)[key] = a[key];
  if (a.size && typeof a.size.width === "number" && typeof a.size.height === "number")
    out.size = { width: a.size.width, height: a.size.height };
  return out;
}

/** The 5.0.0 attachment type for a file sent through the API here. */
export function sendTypeOf(info: Attachment): "image" | "video" | "audio" | "file" | "gif" | "voice-note" | "sticker" {
  if (info.type === "img") return info.isGif ? "gif" : info.isSticker ? "sticker" : "image";
  if (info.type === "video") return "video";
  if (info.type === "audio") return info.isVoiceNote ? "voice-note" : "audio";
  return "file";
}
