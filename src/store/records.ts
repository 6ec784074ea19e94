import { LIMITS } from "../schema/limits.ts";
import type { Attachment, ChatDraft, Reaction, User } from "../schema/wire.ts";

/** Persisted shapes. Wire objects are derived from these in `services/present.ts`. */

export interface AccountRecord {
  accountID: string;
  /** Connector (network) that serves the account, e.g. "sandbox". */
  network: string;
  networkName: string;
  user: User;
  loginID: string;
  /** The network's ID of this account (stable across reconnects). */
  remoteID?: string;
  status:
    | "connected"
    | "connecting"
    | "backfilling"
    | "connection_required"
    | "reconnect_required"
    | "attention_required"
    | "disconnected"
    | "disabled";
  statusText?: string;
  /** Connector-owned state (e.g. a sandbox seed); never returned by the API. */
  state?: Record<string, unknown>;
  /** Set for an account that comes through another Desktop API server (the desktop-api network). */
  origin?: AccountOrigin;
}

/**
 * Where an account served through another Desktop API server comes from: the bridge it has there, its account ID
 * there, and the instance IDs of the inboxd servers it passed through, nearest first (empty for a server that has
 * none, like the desktop app).
 */
export interface AccountOrigin {
  bridge: { id: string; provider: "cloud" | "self-hosted" | "local" | "platform-sdk"; type: string };
  accountID: string;
  servers: string[];
  /** The network's icon where the account's source names one (a Matrix bridge's protocol avatar, an mxc URL). */
  iconURL?: string;
}

/** A bridge login: one signed-in network identity, holding one or more accounts. */
export interface LoginRecord {
  loginID: string;
  /** Connector network of the login. */
  network: string;
  remoteID: string;
  user: User;
  createdAt: string;
}

export interface ChatRecord {
  /** Device-local number: the key of every per-chat record, and the chat's localChatID. */
  no: number;
  id: string;
  accountID: string;
  /** Connector-side identifier of the conversation. */
  networkChatID: string;
  type: "single" | "group";
  title: string;
  description?: string | null;
  participants: User[];
  /** The member count the network gave, where `participants` holds fewer (a large room). */
  participantCount?: number;
  isArchived: boolean;
  isMuted: boolean;
  isPinned: boolean;
  isLowPriority: boolean;
  unreadCount: number;
  markedUnread?: boolean;
  /** Highest seq the user has read; firstSeq - 1 when nothing is read. */
  lastReadSeq: number;
  /** ms since epoch of the newest message or of creation. */
  lastActivity: number;
  /** seq the next message gets; messages are numbered firstSeq… in arrival order. */
  nextSeq: number;
  /**
   * seq of the oldest message slot (absent: 0). Chats of a network that can fetch older history start high
   * (HISTORY_ROOM) and grow downwards when a client pages past the oldest stored message.
   */
  firstSeq?: number;
  /** Set once the network said it has nothing older than firstSeq. */
  historyComplete?: boolean;
  preview?: MessageRecord;
  /** `firedAt` is set when the reminder has gone off; it stays on the chat until cleared. */
  reminder?: { at: number; dismissOnIncomingMessage: boolean; firedAt?: number };
  /** Attachments are uploads kept while the draft holds them (chat-draft.ts). */
  draft?: ChatDraft | null;
  /** Device-local labels (LabelRecord IDs), in the order they were set. */
  labelIDs?: string[];
  /** The chat's picture as set through the API (and given to the network): the srcURL of a local image asset. */
  imgURL?: string;
  /** Disappearing-message timer in seconds, as a client set it and the network took it (0: off). */
  messageExpirySeconds?: number;
  /** ms since epoch when a timed mute ends (isMuted is then cleared); absent for a mute without end. */
  mutedUntil?: number;
}

/** A device-local chat label (GET /v1/labels); chats refer to it by `id`. */
export interface LabelRecord {
  id: string;
  name: string;
  createdAt: number;
}

export interface MessageRecord {
  seq: number;
  senderID: string;
  senderName?: string;
  ts: number;
  type: "TEXT" | "NOTICE" | "IMAGE" | "VIDEO" | "VOICE" | "AUDIO" | "FILE" | "STICKER" | "LOCATION" | "REACTION";
  text?: string;
  isSender: boolean;
  linkedMessageID?: string;
  reactions?: Reaction[];
  attachments?: Attachment[];
  editedTs?: number;
  deleted?: boolean;
  sendStatus?: "pending" | "sent" | "failed";
  statusTs?: number;
  /** Why a send failed, as the network said. */
  statusText?: string;
  /** Connector-side message ID once the network confirmed it. */
  networkID?: string;
  /** Own messages: who the network said received it. */
  deliveredTo?: string[];
  /** Own messages: who read it, and when (ms since epoch). */
  seenBy?: Record<string, number>;
}

/** Room below a history-fetching chat's first message: sortKeys stay 12 digits and positive. */
export const HISTORY_ROOM = 1_000_000_000;
export const firstSeqOf = (chat: ChatRecord) => chat.firstSeq ?? 0;

export interface TokenRecord {
  name: string;
  scopes: ("read" | "write")[];
  createdAt: string;
  /** First characters of the token, to tell tokens apart in `token list` without storing the secret. */
  hint: string;
  /** ms since epoch after which the token is refused (OAuth access tokens); absent: it never expires. */
  expiresAt?: number;
  /** The OAuth client the token was issued to (absent for tokens made with `inboxd token create`). */
  clientID?: string;
  clientName?: string;
}

/** Storage keys. Raw IDs never appear in keys (they contain `:` and `!`); numbers do. */
export const keys = {
  meta: "meta",
  accounts: "accounts",
  logins: "logins",
  labels: "labels",
  chat: (no: number) => `chat:${no}`,
  /** The chat snapshot's head, and its parts (chat-snapshot.ts). */
  chatSnapshot: "chatsnap",
  chatSnapshotPart: (gen: number, part: number) => `chatsnap:${gen}:${part}`,
  chunk: (chatNo: number, chunk: number) => `msg:${chatNo}:${chunk}`,
  contacts: (accountID: string) => `contacts:${encodeKeyPart(accountID)}`,
  networkMessage: (chatNo: number, networkID: string) => `nid:${chatNo}:${encodeKeyPart(networkID)}`,
  /** A reaction's network ID → what it put on which message (under `nid:` so a dropped chat drops these too). */
  networkReaction: (chatNo: number, networkID: string) => `nid:${chatNo}:~r~${encodeKeyPart(networkID)}`,
  term: (term: string) => `ix:${term}`,
  segment: (term: string, id: number) => `ixs:${term}:${id}`,
  segmentPage: (term: string, id: number) => `ixd:${term}:${id}`,
  token: (hash: string) => `tok:${hash}`,
  /** One part of an account's connector records (ConnectorHost.records). */
  accountRecord: (accountID: string, part: number) => `acr:${encodeKeyPart(accountID)}:${part}`,
  tokenPrefix: "tok:",
};

/**
 * Makes an arbitrary string safe as one unstorage key segment: no `:`, `/`, `\`, `?` (unstorage splits or cuts keys
 * on them) and never `.` or `..` alone (unstorage refuses dot segments). Every key part that comes from a client
 * goes through this.
 */
export function encodeKeyPart(value: string): string {
  const safe = value.replace(/[^A-Za-z0-9._-]/g, (c) => `~${c.charCodeAt(0).toString(16)}~`);
  return safe === "." || safe === ".." || safe === "" ? `~${safe.replace(/\./g, "2e")}~` : safe;
}

export interface MetaRecord {
  schema: 1;
  nextChatNo: number;
  /**
   * This store's random identity, made on first start: what another inboxd reads in /v1/info to tell that a
   * desktop-api login would point back at itself (src/connectors/desktop-api/loops.ts).
   */
  instanceID?: string;
}

export const CHUNK_SIZE = 32;

/** Characters of text a chat's preview keeps. */
export const PREVIEW_CHARS = LIMITS.previewChars;

/** A chat's preview: a copy of its newest message, with the text cut to PREVIEW_CHARS (never splitting a pair). */
export function previewOf(message: MessageRecord): MessageRecord;
export function previewOf(message: MessageRecord | undefined): MessageRecord | undefined;
export function previewOf(message: MessageRecord | undefined): MessageRecord | undefined {
  if (!message?.text || message.text.length <= PREVIEW_CHARS) return message;
  const cut = /[\uD800-\uDBFF]/.test(message.text[PREVIEW_CHARS - 1]) ? PREVIEW_CHARS - 1 : PREVIEW_CHARS;
  return { ...message, text: `${message.text.slice(0, cut)}…` };
}

/** `asset:<id>`: an uploaded file, or network media fetched once (src/services/assets.ts); its bytes are a BlobStore's. */
export interface AssetRecord {
  id: string;
  fileName: string;
  mimeType: string;
  size: number;
  chunks: number;
  width?: number;
  height?: number;
  duration?: number;
  createdAt: number;
  kind: "upload" | "remote";
  /** Set when an upload was sent; an upload is used once. */
  usedAt?: number;
  /** For network media: the URL it was fetched from. */
  sourceURL?: string;
}
