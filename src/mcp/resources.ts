/**
 * Resources: the unread overview (inboxd://unread), a chat's recent messages (inboxd://chats/{chatID}/messages) and
 * files (inboxd://assets/{assetID}, what download_asset links to). Each is offered where the tool that shows the
 * same thing is (list_unread, list_messages, download_asset).
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplateType as ResourceTemplate,
} from "@modelcontextprotocol/server";
import { ApiError } from "../errors.ts";
import { checkAssetBytes, resolveAsset } from "../services/assets.ts";
import type { Context } from "../services/context.ts";
import { RESOURCE_BYTES, base64Of, serveURL } from "./tools/assets.ts";
import { pageOfChats } from "./tools/chats.ts";
import { unreadOverview } from "./tools/inbox.ts";
import { listMessagesTool } from "./tools/messages.ts";
import { plain } from "./format.ts";
import type { ToolContext } from "./tool.ts";

export const UNREAD_URI = "inboxd://unread";
export const chatResourceURI = (chatID: string) => `inboxd://chats/${encodeURIComponent(chatID)}/messages`;
const RECENT_CHATS = 20;

/** Which resource kinds the caller may read: named by the tool that shows the same data. */
export type Allowed = (toolName: "list_unread" | "list_messages" | "download_asset") => boolean;

export function listResources(app: Context, allowed: Allowed): Resource[] {
  const out: Resource[] = [];
  if (allowed("list_unread"))
    out.push({
      uri: UNREAD_URI,
      name: "unread",
      title: "Unread overview",
      mimeType: "text/markdown",
      description: "Chats with unread messages and those messages, across every account.",
    });
  if (allowed("list_messages"))
    for (const chat of pageOfChats(app, { limit: RECENT_CHATS }).items)
      out.push({
        uri: chatResourceURI(chat.id),
        name: `chat-${chat.localChatID}`,
        title: plain(chat.title),
        mimeType: "text/markdown",
        description: "Recent messages of this chat.",
      });
  return out;
}

export function listTemplates(allowed: Allowed): ResourceTemplate[] {
  const out: ResourceTemplate[] = [];
  if (allowed("list_messages"))
    out.push({
      uriTemplate: "inboxd://chats/{chatID}/messages",
      name: "chat-messages",
      title: "A chat's recent messages",
      mimeType: "text/markdown",
      description: "The newest 20 messages of a chat (chatID URL-encoded).",
    });
  if (allowed("download_asset"))
    out.push({
      uriTemplate: "inboxd://assets/{assetID}",
      name: "asset",
      title: "A file",
      description: `An attachment or upload, up to ${RESOURCE_BYTES} bytes (download_asset links to these).`,
    });
  return out;
}

export async function readResource(uri: string, tc: ToolContext, allowed: Allowed): Promise<ReadResourceResult> {
  try {
    if (uri === UNREAD_URI && allowed("list_unread")) {
      const { text } = await unreadOverview(tc.app, { includeMuted: false, limit: 10, messagesPerChat: 5 });
      return { contents: [{ uri, mimeType: "text/markdown", text }] };
    }
    const chat = /^inboxd:\/\/chats\/([^/]+)\/messages$/.exec(uri);
    if (chat && allowed("list_messages")) {
      const out = await listMessagesTool.run({ chatID: decodeURIComponent(chat[1]) }, tc);
      return { contents: [{ uri, mimeType: "text/markdown", text: out.text }] };
    }
    const asset = /^inboxd:\/\/assets\/([a-z0-9]{1,40})$/i.exec(uri);
    if (asset && allowed("download_asset")) {
      const record = await resolveAsset(tc.app, tc.app.assets, `mxc://inboxd/${asset[1]}`);
      if (record.size > RESOURCE_BYTES)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `the file has ${record.size} bytes, more than ${RESOURCE_BYTES}: GET ${serveURL(tc.origin, record)} with the bearer token`,
        );
      await checkAssetBytes(tc.app.assets, record);
      return { contents: [{ uri, mimeType: record.mimeType, blob: await base64Of(tc.app, record) }] };
    }
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) throw notFound(uri);
    if (error instanceof ApiError) throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
    throw error;
  }
  throw notFound(uri);
}

/**
 * Resource not found: -32602 with `data: { uri }` on every protocol version (2026-07-28 requires it; clients of
 * 2025-11-25 accept it beside the -32002 of earlier servers).
 */
const notFound = (uri: string) => new ResourceNotFoundError(uri, `Resource not found: ${plain(uri, 200)}`);
