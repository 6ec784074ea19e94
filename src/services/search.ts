import type { Chat } from "../schema/wire.ts";
import type { Context } from "./context.ts";
import { topChats } from "./chats.ts";
import { searchMessages, type MessageSearchResult } from "./message-search.ts";

/** Chats in each part of a unified search's answer: the top of each list (the full lists page through chats/search). */
export const UNIFIED_CHAT_LIMIT = 20;

export interface UnifiedSearchResult {
  results: { chats: Chat[]; in_groups: Chat[]; messages: MessageSearchResult };
}

/**
 * GET /v1/search: what a search box shows as someone types. `chats`: chats whose title or network has every word
 * (as the start of a word, so "alice smi" finds Alice Smith's chat); `in_groups`: group chats with a participant
 * whose name has them; `messages`: the first page of message search (literal words). Each part pages on through its
 * own endpoint (chats/search, messages/search).
 */
export async function unifiedSearch(ctx: Context, query: string): Promise<UnifiedSearchResult> {
  const chats = topChats(ctx, { query, scope: "titles" }, UNIFIED_CHAT_LIMIT);
  const inGroups = topChats(ctx, { query, scope: "participants", type: "group" }, UNIFIED_CHAT_LIMIT);
  const messages = await searchMessages(ctx, { query });
  return { results: { chats, in_groups: inGroups, messages } };
}
