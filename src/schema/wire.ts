/** Wire shapes of /v1 (the union of the spec's generation and SDK 5.0.0, wire-compat §1). */

export interface User {
  id: string;
  username?: string;
  phoneNumber?: string;
  email?: string;
  fullName?: string;
  imgURL?: string;
  cannotMessage?: boolean;
  isSelf?: boolean;
}

export interface BridgeRef {
  id: string;
  provider: "cloud" | "self-hosted" | "local" | "platform-sdk";
  type: string;
}

export type AccountStatus =
  | "connected"
  | "connecting"
  | "backfilling"
  | "connection_required"
  | "reconnect_required"
  | "attention_required"
  | "disconnected"
  | "disabled";

export interface Account {
  accountID: string;
  user: User;
  bridge: BridgeRef;
  status: AccountStatus;
  network?: string;
  loginID?: string;
  statusText?: string;
  capabilities?: Record<string, unknown>;
}

export interface Reaction {
  id: string;
  participantID: string;
  reactionKey: string;
  emoji?: boolean;
  imgURL?: string;
}

export interface Attachment {
  type: "unknown" | "img" | "video" | "audio";
  id?: string;
  duration?: number;
  fileName?: string;
  fileSize?: number;
  isGif?: boolean;
  isSticker?: boolean;
  isVoiceNote?: boolean;
  mimeType?: string;
  posterImg?: string;
  size?: { width: number; height: number };
  srcURL?: string;
}

export type MessageType =
  | "TEXT"
  | "NOTICE"
  | "IMAGE"
  | "VIDEO"
  | "VOICE"
  | "AUDIO"
  | "FILE"
  | "STICKER"
  | "LOCATION"
  | "REACTION";

export interface Message {
  id: string;
  accountID: string;
  chatID: string;
  senderID: string;
  senderName?: string;
  sortKey: string;
  timestamp: string;
  type: MessageType;
  text?: string;
  attachments?: Attachment[];
  reactions?: Reaction[];
  isSender: boolean;
  isUnread?: boolean;
  linkedMessageID?: string;
  editedTimestamp?: string;
  sendStatus?: { status: "SUCCESS" | "PENDING" | "FAIL_RETRIABLE" | "FAIL_PERMANENT"; timestamp: string; message?: string };
}

export interface Chat {
  id: string;
  localChatID: string;
  accountID: string;
  network: string;
  title: string;
  description?: string | null;
  type: "single" | "group";
  isReadOnly?: boolean;
  participants: { items: User[]; hasMore: boolean; total: number };
  lastActivity?: string;
  unreadCount: number;
  lastReadMessageSortKey?: string;
  isArchived: boolean;
  isMuted: boolean;
  isPinned: boolean;
  isLowPriority: boolean;
  isMarkedUnread: boolean;
  draft: { text: string } | null;
  reminder?: { remindAt: string; remindAtMs: number; dismissOnIncomingMessage: boolean; isFired: boolean; firedAt?: string };
  preview?: Message;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
  oldestCursor: string | null;
  newestCursor: string | null;
}
