import type { Attachment, User } from "../schema/wire.ts";
import type { AccountRecord } from "../store/records.ts";
import type { LoginResult } from "./login.ts";

/**
 * The protocol-neutral bridge contract (after mautrix bridgev2's NetworkConnector / NetworkAPI split).
 *
 * - A `NetworkConnector` exists once per network. Constructing it does no IO.
 * - A `NetworkClient` exists per connected account. `loadAccount` must be cheap; `connect()` does the IO.
 * - Everything a network tells us arrives through `ConnectorHost.emit` as `InboundEvent`s, already converted to the
 *   common model (no protocol types cross this boundary). Events may arrive at any time and in any order relative to
 *   the API's own writes; the host turns them into stored messages and chat updates.
 * - Optional features are optional methods. The core checks for a method before offering the feature and answers
 *   422 "not supported by this network" otherwise; `capabilities()` describes what a particular chat allows.
 * - IDs passed across are network IDs (`networkChatID`, `networkMessageID`); the host maps them to API IDs.
 * - Delivery is idempotent per `networkMessageID`: redelivering a message (after a reconnect) is harmless.
 * - A chat's messages are ordered by arrival (their sortKey). A connector backfills a chat's history, oldest first,
 *   before it delivers live traffic for that chat (as bridgev2's forward backfill does); a message event never
 *   inserts history before what is already stored. Older history comes only through `fetchHistory`, which the host
 *   calls when a client pages past the oldest stored message (bridgev2's backward backfill).
 * - Typing notifications are live only: a `typing` event is never stored, and a connector need not send `paused`
 *   for someone whose message just arrived (clients clear the indicator on the message, or after `timeoutMs`).
 */
export interface NetworkConnector {
  /** Stable identifier, used in account IDs and bridge IDs. */
  readonly network: string;
  readonly displayName: string;
  loadAccount(account: AccountRecord, host: ConnectorHost): NetworkClient;
}

export interface ChatCapabilities {
  edits: boolean;
  deletes: boolean;
  reactions: boolean;
  replies: boolean;
  attachments: boolean;
  /** Set when one participant may put several different reactions on a message. */
  multipleReactions: boolean;
  /** Set when nothing can be sent to the chat through this network: why (an encrypted room it cannot encrypt for). */
  readOnly?: string;
}

export interface NetworkChat {
  networkChatID: string;
  type: "single" | "group";
  title: string;
  /** The members known (a large group's may be a subset: see `participantCount`). */
  participants: User[];
  /** How many members the chat has, where the network says and `participants` holds fewer. */
  participantCount?: number;
  /** The chat's picture: a URL this network's `downloadMedia` serves (mxc://…). */
  imgURL?: string;
  /**
   * State the network keeps per chat (on Matrix: room tags and push rules). Each is applied when set and left as
   * it is when undefined, so a connector sends a flag only when the network reported it (first sight, a change).
   */
  isPinned?: boolean;
  isMuted?: boolean;
  isLowPriority?: boolean;
  isArchived?: boolean;
  /** The network's own count of unread messages, where it keeps one: it replaces the count kept here. */
  unreadCount?: number;
}

/**
 * Chat state a client may change through the API that the network also keeps (NetworkChat's flags). `isArchived`
 * goes to the network only where archiving means something there (Matrix: archiving an invitation declines it).
 */
export interface ChatFlags {
  isPinned?: boolean;
  isMuted?: boolean;
  isLowPriority?: boolean;
  isArchived?: boolean;
}

/** A file handed to the network: its description and its bytes, read on demand (a large file is never held in memory). */
export interface OutgoingFile {
  info: Attachment;
  open(): ReadableStream<Uint8Array>;
}

export interface OutgoingMessage {
  text?: string;
  /** Network ID of the message replied to, when it has one. */
  replyTo?: string;
  /** The file to send. */
  attachment?: OutgoingFile;
}

/** Media a network hands over for an mxc:// URL it owns. */
export interface NetworkMedia {
  content: AsyncIterable<Uint8Array>;
  fileName?: string;
  mimeType?: string;
}

export interface SendReceipt {
  networkMessageID: string;
  /** ms since epoch as the network stamped it */
  timestamp: number;
}

export interface InboundMessage {
  networkMessageID: string;
  senderID: string;
  senderName?: string;
  timestamp: number;
  /** What kind of message it is (TEXT when left out); NOTICE for what the network itself says (joins, renames…). */
  type?: "TEXT" | "NOTICE" | "IMAGE" | "VIDEO" | "VOICE" | "AUDIO" | "FILE" | "STICKER" | "LOCATION";
  text?: string;
  /** When the text was last edited, for a message that arrives already edited (history). */
  editedTimestamp?: number;
  isSender?: boolean;
  replyTo?: string;
  attachments?: Attachment[];
  /**
   * Reactions the message already has when it arrives from history (`fetchHistory`), where the network hands over
   * old reactions with their messages rather than as events; `networkReactionID` as for a reaction event.
   */
  reactions?: { senderID: string; reactionKey: string; networkReactionID?: string }[];
}

/** Older messages of a chat, oldest first; `hasMore` is false once the network has nothing older. */
export interface HistoryPage {
  messages: InboundMessage[];
  hasMore: boolean;
}

/** Whether someone is typing in a chat (bridgev2's typing notices, text kind only). */
export type TypingState = "typing" | "paused";

export type InboundEvent =
  | { type: "message"; networkChatID: string; message: InboundMessage }
  /**
   * A message already handed over, as it reads now: its type, text, attachments and reply replace what is stored,
   * without marking it edited (a Matrix message whose room key arrived after it: it was stored as waiting for it).
   */
  | { type: "revision"; networkChatID: string; message: InboundMessage }
  /**
   * `senderID`, where the network says who made the change: the host applies it only to that sender's message (a
   * network that lets anyone send a correction must not let one person rewrite another's words).
   */
  | {
      type: "edit";
      networkChatID: string;
      networkMessageID: string;
      text: string;
      timestamp: number;
      senderID?: string;
    }
  /** `networkMessageID` may also name a reaction (its `networkReactionID`): that reaction is removed. */
  | { type: "delete"; networkChatID: string; networkMessageID: string; senderID?: string }
  /**
   * `networkReactionID`: the network's ID of the reaction itself, for networks that remove a reaction by deleting
   * it (Matrix redacts the reaction event): a later `delete` naming it removes the reaction.
   */
  | {
      type: "reaction";
      networkChatID: string;
      networkMessageID: string;
      senderID: string;
      reactionKey: string;
      removed?: boolean;
      networkReactionID?: string;
    }
  /** A participant's whole set of reactions to a message, replacing what they had (networks that send sets). */
  | { type: "reactions"; networkChatID: string; networkMessageID: string; senderID: string; reactionKeys: string[] }
  /** Every reaction a message has, replacing all it had (networks that hand over whole messages: another Desktop API server). */
  | {
      type: "message-reactions";
      networkChatID: string;
      networkMessageID: string;
      reactions: { senderID: string; reactionKey: string }[];
    }
  | { type: "chat"; chat: NetworkChat }
  /** `timeoutMs`: how long a `typing` state holds without a new notice (networks repeat it while typing goes on). */
  | { type: "typing"; networkChatID: string; senderID: string; state: TypingState; timeoutMs?: number }
  /**
   * Another participant got (`delivered`) or read (`read`) this account's message. A read receipt covers the
   * messages before it, as chat markers and read receipts do on most networks.
   */
  | {
      type: "receipt";
      networkChatID: string;
      networkMessageID: string;
      userID: string;
      kind: "delivered" | "read";
      timestamp: number;
    }
  /** This account read the chat up to the message on another device or client: mark it read here, and tell no one. */
  | { type: "read"; networkChatID: string; networkMessageID: string }
  | { type: "status"; status: AccountRecord["status"]; statusText?: string };

export interface ConnectorHost {
  /** Delivers an event from the network; resolves once it is stored durably (a typing event: once it is sent out). */
  emit(event: InboundEvent): Promise<void>;
  /** Replaces the connector-owned state of this account (stored with it, never returned by the API). */
  saveState(state: Record<string, unknown>): Promise<void>;
  /**
   * For a network whose one login holds a set of accounts that changes on the network's side (another Desktop API
   * server, whose owner adds and removes accounts there): the login's accounts as they are now. Accounts new to the
   * login are stored and connected; accounts of the login missing from the list are removed with their chats, as a
   * removed login's are; the others keep their ID and history and take the new user and network name. Resolves once
   * stored, with the remote IDs the login holds now (an addition past the bridge's account limit is left out).
   */
  setLoginAccounts(accounts: LoginResult["accounts"]): Promise<string[]>;
  /**
   * Records this account keeps beside its state, for what is too large or changes too often to rewrite as one value
   * (Matrix's end-to-end encryption store): parts numbered 0 to ACCOUNT_RECORD_PARTS - 1. A `put` is written with
   * the store's next commit, all of that commit's writes at once; the parts are removed with the account.
   */
  records: AccountRecords;
}

/** How many record parts an account has (ConnectorHost.records). */
export const ACCOUNT_RECORD_PARTS = 256;

export interface AccountRecords {
  get(part: number): Promise<unknown>;
  /** `null` removes the part. */
  put(part: number, value: unknown): void;
  /** Resolves once every put made before it is durable. */
  commit(): Promise<void>;
}

export interface NetworkClient {
  /**
   * Starts the client. A client that sets `reportsStatus` returns at once and reports every status change itself
   * (connecting, backfilling, connected, reconnect_required…) as status events, reconnecting on its own; otherwise
   * the host marks the account connected when this resolves.
   */
  connect(): Promise<void>;
  readonly reportsStatus?: boolean;
  /**
   * Set when the client keeps a connection to the network open (a socket, a long poll): a runtime that puts idle
   * work to sleep (a Durable Object) keeps itself awake while such a client is attached, so the network is heard
   * promptly.
   */
  readonly holdsConnection?: boolean;
  disconnect(): Promise<void>;
  capabilities(chat: NetworkChat): ChatCapabilities;
  /** Resolves when the network has accepted the message. */
  send(networkChatID: string, message: OutgoingMessage): Promise<SendReceipt>;
  edit?(networkChatID: string, networkMessageID: string, text: string): Promise<void>;
  delete?(networkChatID: string, networkMessageID: string): Promise<void>;
  /** `mine`: this account's reaction keys on the message once the change applies (for networks that send the whole set). */
  react?(networkChatID: string, networkMessageID: string, reactionKey: string, mine: string[]): Promise<void>;
  unreact?(networkChatID: string, networkMessageID: string, reactionKey: string, mine: string[]): Promise<void>;
  markRead?(networkChatID: string, networkMessageID: string): Promise<void>;
  /**
   * Up to `limit` messages older than `before` (a stored message: its network ID and timestamp), oldest first.
   * Chats of a network with this method keep room below their first message for what it returns.
   */
  fetchHistory?(
    networkChatID: string,
    before: { networkMessageID: string; timestamp: number },
    limit: number,
  ): Promise<HistoryPage>;
  /** Tells the chat's other participants that this account is typing, or stopped (bridgev2's TypingHandlingNetworkAPI). */
  setTyping?(networkChatID: string, state: TypingState): Promise<void>;
  /**
   * Sets the chat's picture on the network (an image file), or removes it (null). Resolves once the network has
   * it; a chat whose picture this account may not change is a NetworkError "rejected" (or "unsupported").
   */
  setChatAvatar?(networkChatID: string, image: OutgoingFile | null): Promise<void>;
  /** Sets the chat's disappearing-message timer: messages sent from now on vanish `seconds` after; 0 turns it off. */
  setMessageExpiry?(networkChatID: string, seconds: number): Promise<void>;
  /**
   * Asks the network to notify the chat's other participants of the latest message even where they silenced
   * notifications (iMessage's "Notify Anyway" for a recipient in a Focus mode). Resolves once the network took it.
   */
  notifyAnyway?(networkChatID: string): Promise<void>;
  /** Gives the network a chat reminder set (or cleared: null) through the API, for a network that keeps reminders itself. */
  setReminder?(
    networkChatID: string,
    reminder: { at: number; dismissOnIncomingMessage: boolean } | null,
  ): Promise<void>;
  /** Tells the network of pin, mute and low-priority changes made through the API (both ways, with NetworkChat's flags). */
  setChatFlags?(networkChatID: string, flags: ChatFlags): Promise<void>;
  /** Ends this device's session on the network when the login is removed (best effort: removal goes on if it fails). */
  logout?(): Promise<void>;
  createChat?(request: { type: "single" | "group"; participantIDs: string[]; title?: string }): Promise<NetworkChat>;
  /** Resolves a partial identity (ID, username, phone, email) to a user the network can message. */
  resolveIdentifier?(user: Partial<User>): Promise<User | null>;
  searchContacts?(query: string): Promise<User[]>;
  /** Fetches the media behind a URL this network issued (in Attachment.id); null when the URL is not its own. */
  downloadMedia?(url: string): Promise<NetworkMedia | null>;
  listContacts?(): Promise<User[]>;
}

/**
 * What a connector throws; the host maps `kind` to an HTTP status (404, 422, 422, 503). `code` is a more precise,
 * machine-readable reason where one helps (a failed login session reports it as `error.code`, e.g.
 * "invalid_credentials").
 */
export class NetworkError extends Error {
  constructor(
    readonly kind: "not_found" | "unsupported" | "rejected" | "unavailable",
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}
