/**
 * Builds the request lists from the seeded data itself: chat IDs from paging GET /v1/chats, rare words sampled
 * from message pages and confirmed by search (1–20 hits, or the least common found where no word is that rare),
 * common words, and the first account.
 */
import type { RequestSpec } from "./load.ts";

export const COMMON_WORDS = ["the", "you", "and", "to", "it", "is", "that", "for"];
const CHAT_PAGES = 40; // 25 chats a page: up to 1,000 chats
const SAMPLED_CHATS = 150; // message pages read to find candidate words
const RARE_WORDS = 30;
const MAX_RARE_TRIES = 1500;
const DAY = 86_400_000;

export interface Workload {
  /** The first page of GET /v1/chats, byte for byte (the baseline answers with it). */
  chatsBody: Buffer;
  chatIDs: string[];
  /** The sandbox Echo chats among chatIDs (Echo answers every message sent there). */
  echoChatIDs: string[];
  accountID: string;
  dateAfter: string;
  /** Words with 1–20 search hits; at sizes where there are none, words seen once in the sample (`more`: a page
   * of hits and more). */
  rareWords: { word: string; hits: number; more?: boolean }[];
  rareTries: number;
  requests: Record<
    "chats" | "chat" | "messages" | "searchRare" | "searchCommon" | "searchFiltered" | "send",
    RequestSpec[]
  >;
}

/** Percent-encodes a path segment, including the !'()* that encodeURIComponent leaves alone. */
export const segment = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

const tokenize = (text: string | undefined) =>
  (text ?? "")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/** Deterministic shuffle (mulberry32), so that runs rotate over the same order. */
function shuffle<T>(items: T[], seed = 42): T[] {
  let a = seed;
  const random = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

interface ListedChat {
  id: string;
  lastActivity: string;
  participants: { items: { id: string }[] };
}

const isEcho = (chat: ListedChat) => chat.participants.items.some((p) => p.id.startsWith("@echo:"));

function client(url: string, token: string) {
  const fetchPath = async (path: string) => {
    const res = await fetch(url + path, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`GET ${path} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    return Buffer.from(await res.arrayBuffer());
  };
  const json = async (path: string): Promise<any> => JSON.parse((await fetchPath(path)).toString());
  return { fetchPath, json };
}

/** Pages GET /v1/chats (up to CHAT_PAGES pages). */
async function listChats(url: string, token: string): Promise<{ chatsBody: Buffer; chats: ListedChat[] }> {
  const { fetchPath, json } = client(url, token);
  const chatsBody = await fetchPath("/v1/chats");
  let page = JSON.parse(chatsBody.toString());
  const chats: ListedChat[] = [...page.items];
  for (let i = 1; i < CHAT_PAGES && page.hasMore; i++) {
    page = await json(`/v1/chats?cursor=${encodeURIComponent(page.oldestCursor)}&direction=before`);
    chats.push(...page.items);
  }
  return { chatsBody, chats };
}

/** Just the chat IDs, in the same shuffled order as buildWorkload's (for runs that need nothing else). */
export async function listChatIDs(url: string, token: string): Promise<Pick<Workload, "chatIDs" | "echoChatIDs">> {
  const { chats } = await listChats(url, token);
  return { chatIDs: shuffle(chats.map((c) => c.id)), echoChatIDs: chats.filter(isEcho).map((c) => c.id) };
}

export async function buildWorkload(url: string, token: string): Promise<Workload> {
  const { json } = client(url, token);
  const { chatsBody, chats } = await listChats(url, token);
  const chatIDs = shuffle(chats.map((c) => c.id));
  const echoChatIDs = chats.filter(isEcho).map((c) => c.id);
  const accountID: string = (await json("/v1/accounts"))[0].accountID;
  const newest = Math.max(...chats.map((c) => Date.parse(c.lastActivity)));
  const dateAfter = new Date(Math.min(Date.now(), newest) - 90 * DAY).toISOString();

  // Rare words: words seen once in a sample of message pages, kept if a search finds 1–20 messages.
  const counts = new Map<string, number>();
  for (const id of chatIDs.slice(0, SAMPLED_CHATS)) {
    for (const m of (await json(`/v1/chats/${segment(id)}/messages`)).items) {
      for (const w of tokenize(m.text)) counts.set(w, (counts.get(w) ?? 0) + 1);
    }
  }
  const candidates = shuffle([...counts].filter(([w, n]) => n === 1 && /^\p{L}+$/u.test(w)).map(([w]) => w));
  const rareWords: Workload["rareWords"] = [];
  // Words seen once in the sample that have more than a page of hits: used only if no word has 1–20. At 10M
  // messages every word of the sandbox's 30,000-word vocabulary occurs hundreds of times.
  const uncommon: Workload["rareWords"] = [];
  let rareTries = 0;
  for (const word of candidates) {
    if (rareWords.length >= RARE_WORDS || rareTries >= MAX_RARE_TRIES) break;
    rareTries++;
    const found = await json(`/v1/messages/search?query=${encodeURIComponent(word)}`);
    if (found.items.length >= 1 && !found.hasMore) rareWords.push({ word, hits: found.items.length });
    else if (found.hasMore && uncommon.length < RARE_WORDS)
      uncommon.push({ word, hits: found.items.length, more: true });
  }
  if (rareWords.length === 0 && uncommon.length === 0)
    throw new Error(`no word with search hits among ${rareTries} candidates`);
  const rarest = rareWords.length ? rareWords : uncommon;

  const get = (path: string): RequestSpec => ({ method: "GET", path });
  const search = (params: Record<string, string>) => get(`/v1/messages/search?${new URLSearchParams(params)}`);
  const pairs = COMMON_WORDS.flatMap((a, i) => COMMON_WORDS.slice(i + 1).map((b) => `${a} ${b}`));
  return {
    chatsBody,
    chatIDs,
    echoChatIDs,
    accountID,
    dateAfter,
    rareWords: rarest,
    rareTries,
    requests: {
      chats: [get("/v1/chats")],
      chat: chatIDs.map((id) => get(`/v1/chats/${segment(id)}`)),
      messages: chatIDs.map((id) => get(`/v1/chats/${segment(id)}/messages`)),
      searchRare: rarest.map(({ word }) => search({ query: word })),
      searchCommon: shuffle(pairs).map((query) => search({ query })),
      searchFiltered: COMMON_WORDS.slice(0, 4).map((query) => search({ query, accountIDs: accountID, dateAfter })),
      send: chatIDs.map((id) => ({
        method: "POST",
        path: `/v1/chats/${segment(id)}/messages`,
        body: JSON.stringify({ text: "bench message {n}: see you at the station tomorrow" }),
      })),
    },
  };
}
