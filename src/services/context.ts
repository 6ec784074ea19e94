import type { DomainEvent } from "../schema/events.ts";
import type { LoginSessions } from "../bridges/login-sessions.ts";
import type { BridgeRuntime } from "../bridges/runtime.ts";
import type { WebhookManager } from "./webhooks.ts";
import type { BlobStore } from "../assets/blob-store.ts";
import type { LocalFiles } from "../assets/local-files.ts";
import { NetworkError, type NetworkClient } from "../bridges/connector.ts";
import { ApiError, notFound } from "../errors.ts";
import type { Db } from "../store/db.ts";
import type { AccountRecord, AssetRecord, ChatRecord } from "../store/records.ts";

/** Where asset bytes live and the bounds on them (services/assets.ts). */
export interface AssetConfig {
  blobs: BlobStore;
  /** Absolute directory whose file:// URLs name assets (the daemon's), or undefined (the Worker). */
  assetDir?: string;
  /** Files a client names by path (a chat picture): the daemon's; undefined in the Worker. */
  localFiles?: LocalFiles;
  maxUploadBytes: number;
  /** Uploads never sent are deleted after this long. */
  uploadTtlMs: number;
  /** Network media being fetched, by URL. */
  downloads: Map<string, Promise<AssetRecord>>;
}

/** What every service works with. Built once by `createApp`. */ import type { Tenancy } from "../tenancy.ts";

export interface Context {
  db: Db;
  bridges: BridgeRuntime;
  sessions: LoginSessions;
  now: () => number;
  /** Recomputes when the runtime must next call `App.wake` (after a reminder is set or cleared). */
  rearm: () => void;
  webhooks: WebhookManager;
  assets: AssetConfig;
  /** When the oldest unsent upload expires (for the wake-up schedule). */
  nextUploadExpiry?: number;
  /** Sends an event that changes nothing stored (typing) to the live connections, never logged. */
  announce: (event: DomainEvent) => void;
  /** Where a deployment holds many inboxes: this one's ID and limits (read live: the operator may change them). */
  tenancy?: Tenancy;
}

export function requireChat(ctx: Context, chatID: string): ChatRecord {
  const chat = ctx.db.chats.find(chatID);
  if (!chat) throw notFound(`chat ${chatID}`);
  return chat;
}

export function requireAccount(ctx: Context, accountID: string): AccountRecord {
  const account = ctx.db.account(accountID);
  if (!account) throw notFound(`account ${accountID}`);
  return account;
}

/** Calls a connector, turning its NetworkErrors into API errors. */
export async function callNetwork<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof NetworkError) {
      const status = { not_found: 404, unsupported: 422, rejected: 422, unavailable: 503 }[error.kind];
      throw new ApiError(status, `NETWORK_${error.kind.toUpperCase()}`, error.message);
    }
    throw error;
  }
}

/** 422 NOT_SUPPORTED: the account's network lacks a feature; `path` names the request field that asked for it. */
/** 422 NOT_SUPPORTED when the network says nothing can be sent to the chat (ChatCapabilities.readOnly), with its reason. */
export function refuseReadOnly(client: NetworkClient, chat: ChatRecord): void {
  const why = client.capabilities({
    networkChatID: chat.networkChatID,
    type: chat.type,
    title: chat.title,
    participants: chat.participants,
  }).readOnly;
  if (why) throw new ApiError(422, "NOT_SUPPORTED", why);
}

export function unsupported(feature: string, path?: (string | number)[]): ApiError {
  const message = `${feature} is not supported by this network`;
  return new ApiError(
    422,
    "NOT_SUPPORTED",
    message,
    path ? { issues: [{ code: "not_supported", message, path }] } : undefined,
  );
}
