/**
 * Every tool, in the order tools/list shows them: the real app's twelve first (same names and inputs), then what
 * agents ask for beyond them.
 */
import type { AnyTool } from "../tool.ts";
import { downloadAssetTool, uploadAssetTool } from "./assets.ts";
import { focusAppTool, searchDocsTool, searchTool } from "./app.ts";
import {
  archiveChatTool,
  clearReminderTool,
  getChatTool,
  markReadTool,
  markUnreadTool,
  searchChatsTool,
  setReminderTool,
} from "./chats.ts";
import { listUnreadTool, waitForMessageTool } from "./inbox.ts";
import { addReactionTool, deleteMessageTool, editMessageTool, removeReactionTool } from "./message-actions.ts";
import { getMessageTool, listMessagesTool, searchMessagesTool, sendMessageTool } from "./messages.ts";
import { getAccountsTool, startChatTool } from "./people.ts";

export const TOOLS: readonly AnyTool[] = [
  getAccountsTool,
  searchChatsTool,
  getChatTool,
  listMessagesTool,
  searchMessagesTool,
  sendMessageTool,
  archiveChatTool,
  setReminderTool,
  clearReminderTool,
  focusAppTool,
  searchTool,
  searchDocsTool,
  listUnreadTool,
  waitForMessageTool,
  getMessageTool,
  startChatTool,
  uploadAssetTool,
  downloadAssetTool,
  editMessageTool,
  deleteMessageTool,
  addReactionTool,
  removeReactionTool,
  markReadTool,
  markUnreadTool,
];

export const TOOL_NAMES = TOOLS.map((t) => t.name);
