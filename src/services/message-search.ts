import type { Chat, Message } from "../schema/wire.ts";
import type { ChatRecord, MessageRecord } from "../store/records.ts";
import { ALL_TERM, mediaTerm, PostingProbe, tokenize, type Posting } from "../store/search-index.ts";
import type { Context } from "./context.ts";
import { decodeCursor, encodeCursor, fingerprint } from "./cursor.ts";
import { chatResultJSON, JsonText, presentChat, presentMessage, RESULT_CHAT } from "./present.ts";

export const SEARCH_PAGE = 20;

export interface MessageSearch {
  query?: string;
  accountIDs?: string[];
  chatIDs?: string[];
  chatType?: "single" | "group";
  dateAfter?: number;
  dateBefore?: number;
  excludeLowPriority?: boolean;
  includeMuted?: boolean;
  mediaTypes?: ("any" | "video" | "image" | "link" | "file")[];
  sender?: string;
  limit?: number;
  cursor?: string;
  direction?: "before" | "after";
}

export interface MessageSearchResult {
  items: Message[];
  chats: Record<string, Chat>;
  hasMore: boolean;
  oldestCursor: string | null;
  newestCursor: string | null;
}

/**
 * Literal word search: every query word must be a word of the message (any order, case-insensitive).
 * The index proposes candidates from the rarest query term (or a media pseudo-term, or every message), newest
 * first; chat-level filters are checked on the posting alone, the rest on the loaded message.
 */
export async function searchMessages(ctx: Context, q: MessageSearch): Promise<MessageSearchResult> {
  const { found, hasMore, oldestCursor, newestCursor } = await findMessages(ctx, q);
  const chats: Record<string, Chat> = {};
  for (const { chat } of found) chats[chat.id] ??= presentChat(ctx.db, chat, RESULT_CHAT);
  return {
    items: found.map(({ chat, message }) => presentMessage(chat, message)),
    chats,
    hasMore,
    oldestCursor,
    newestCursor,
  };
}

/**
 * The same page as searchMessages, as its JSON text (GET /v1/messages/search). Each chat's part is cached until the
 * chat changes (chatResultJSON): a page names up to 20 chats of up to 20 participants each, most of its bytes, and
 * serialising them anew was a quarter of a search's CPU time.
 */
export async function searchMessagesJSON(ctx: Context, q: MessageSearch): Promise<JsonText> {
  const { found, hasMore, oldestCursor, newestCursor } = await findMessages(ctx, q);
  const chats = new Map<string, string>();
  for (const { chat } of found) if (!chats.has(chat.id)) chats.set(chat.id, chatResultJSON(ctx.db, chat));
  const items = found.map(({ chat, message }) => JSON.stringify(presentMessage(chat, message)));
  const chatParts = [...chats].map(([id, json]) => `${JSON.stringify(id)}:${json}`);
  return new JsonText(
    `{"items":[${items.join(",")}],"chats":{${chatParts.join(",")}},"hasMore":${hasMore},` +
      `"oldestCursor":${JSON.stringify(oldestCursor)},"newestCursor":${JSON.stringify(newestCursor)}}`,
  );
}

async function findMessages(ctx: Context, q: MessageSearch) {
  const { cursor, direction, limit, ...filter } = q;
  const scope = fingerprint(filter);
  const pageSize = Math.min(limit ?? SEARCH_PAGE, SEARCH_PAGE);
  const words = tokenize(q.query);
  const media =
    q.mediaTypes && !q.mediaTypes.includes("any") ? q.mediaTypes : q.mediaTypes ? ["any" as const] : undefined;

  const candidates = [...words];
  if (media?.length === 1) candidates.push(mediaTerm(media[0]));
  const driver = await rarest(ctx, candidates.length ? candidates : [ALL_TERM]);

  const chatOk = chatFilter(ctx, q);
  const dir = direction ?? "before";
  const from = cursor ? (decodeCursor(cursor, "message-search", scope, 3) as Posting) : null;
  const found: { chat: ChatRecord; message: MessageRecord }[] = [];
  let hasMore = false;
  // The other query words are checked against their own postings first (merge join), so common-word pairs
  // load only the messages that contain both.
  const probes = words
    .filter((w) => w !== driver)
    .map((w) => new PostingProbe(ctx.db.index.walk(w, dir, from, { after: q.dateAfter, before: q.dateBefore }), dir));
  try {
    if (driver) {
      outer: for await (const batch of ctx.db.index.walk(driver, dir, from, {
        after: q.dateAfter,
        before: q.dateBefore,
      })) {
        for (let j = 0; j < batch.length; j += 3) {
          const ts = batch[j];
          if (q.dateAfter !== undefined && !(ts > q.dateAfter)) {
            if (dir === "before") break outer;
            continue;
          }
          if (q.dateBefore !== undefined && !(ts < q.dateBefore)) {
            if (dir === "after") break outer;
            continue;
          }
          const chat = ctx.db.chats.get(batch[j + 1]);
          if (!chat || !chatOk(chat)) continue;
          let inAll = true;
          for (const probe of probes)
            if (!(await probe.has(batch, j))) {
              inAll = false;
              break;
            }
          if (!inAll) continue;
          const message = await ctx.db.message(chat.no, batch[j + 2]);
          if (!message || message.deleted || message.ts !== ts) continue;
          if (!messageOk(ctx, chat, message, words, q, media)) continue;
          if (found.length === pageSize) {
            hasMore = true;
            break outer;
          }
          found.push({ chat, message });
        }
      }
    }
  } finally {
    // A probe is seldom read to the end of its walk; closing it tells the index that the walk is over.
    await Promise.all(probes.map((probe) => probe.close()));
  }
  if (dir === "after") found.reverse();
  const at = (x: { chat: ChatRecord; message: MessageRecord }) =>
    encodeCursor("message-search", scope, [x.message.ts, x.chat.no, x.message.seq]);
  return {
    found,
    hasMore,
    oldestCursor: found.length ? at(found[found.length - 1]) : null,
    newestCursor: found.length ? at(found[0]) : null,
  };
}

/** The candidate term with the fewest postings; undefined when some query word occurs nowhere. */
async function rarest(ctx: Context, terms: string[]): Promise<string | undefined> {
  let best: string | undefined;
  let bestCount = Infinity;
  for (const term of terms) {
    const meta = await ctx.db.index.meta(term);
    const n = meta?.n ?? 0;
    if (n === 0) return undefined;
    if (n < bestCount) {
      best = term;
      bestCount = n;
    }
  }
  return best;
}

function chatFilter(ctx: Context, q: MessageSearch): (c: ChatRecord) => boolean {
  const accounts = q.accountIDs ? new Set(q.accountIDs) : undefined;
  const chatIDs = q.chatIDs ? new Set(q.chatIDs.map((id) => ctx.db.chats.find(id)?.no ?? -1)) : undefined;
  const excludeLow = q.excludeLowPriority ?? true;
  const includeMuted = q.includeMuted ?? true;
  return (c) =>
    (!accounts || accounts.has(c.accountID)) &&
    (!chatIDs || chatIDs.has(c.no)) &&
    (!q.chatType || c.type === q.chatType) &&
    (!excludeLow || !c.isLowPriority) &&
    (includeMuted || !c.isMuted);
}

function messageOk(
  _ctx: Context,
  _chat: ChatRecord,
  m: MessageRecord,
  words: string[],
  q: MessageSearch,
  media?: string[],
): boolean {
  if (q.sender === "me" && !m.isSender) return false;
  if (q.sender === "others" && m.isSender) return false;
  if (q.sender && q.sender !== "me" && q.sender !== "others" && m.senderID !== q.sender) return false;
  if (words.length) {
    const have = new Set(tokenize(m.text));
    if (!words.every((w) => have.has(w))) return false;
  }
  if (media) {
    const kinds = new Set<string>();
    if (m.text && /https?:\/\/\S/i.test(m.text)) kinds.add("link");
    for (const a of m.attachments ?? []) {
      kinds.add("any");
      kinds.add(a.type === "img" ? "image" : a.type === "video" ? "video" : "file");
    }
    if (!media.some((k) => (k === "any" ? kinds.size > 0 : kinds.has(k)))) return false;
  }
  return true;
}
