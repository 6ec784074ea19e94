import type { ChatRecord } from "./records.ts";

/**
 * Every chat, in memory, in list order (lastActivity desc, then no desc).
 *
 * Why in memory: chat lists, filters and the per-posting chat checks of message search all need chat fields for
 * thousands of chats per request: 100,000 chats take about 130 MB of heap, their participants shared. The records
 * themselves are persisted by their owners (`chat:<no>`); this is the index over them, rebuilt at start-up from
 * the chat snapshot (chat-snapshot.ts).
 */
export class ChatTable {
  private readonly byNo = new Map<number, ChatRecord>();
  private readonly byId = new Map<string, ChatRecord>();
  private readonly byNetwork = new Map<string, ChatRecord>();
  /** list order: newest activity first */
  private order: ChatRecord[] = [];
  /**
   * How many rows at the top of `order` are the whole list's first rows. Infinity once every chat is loaded; while
   * start-up still reads the older chats (Db.reload with `early`), only these rows may be answered from.
   */
  private trusted = Infinity;

  /**
   * Every chat, or with `partial` only the newest ones: then the rows down to `partial.through` (the oldest chat
   * known to have every newer chat among `records`) are all that is trusted, and nothing may change the table until
   * it is loaded whole.
   */
  load(records: ChatRecord[], partial?: { through: ChatRecord | undefined }) {
    this.byNo.clear();
    this.byId.clear();
    this.byNetwork.clear();
    for (const r of records) {
      this.byNo.set(r.no, r);
      this.byId.set(r.id, r);
      this.byNetwork.set(networkKey(r.accountID, r.networkChatID), r);
    }
    this.order = [...records].sort(compareChats);
    const through = partial?.through;
    this.trusted = !partial ? Infinity : through ? this.positionAfter(through.lastActivity, through.no) + 1 : 0;
  }

  /** False while only the newest chats are loaded (see load). */
  get complete(): boolean {
    return this.trusted === Infinity;
  }

  /** The number of rows at the top of all() that are the whole list's, every row once the table is complete. */
  get trustedRows(): number {
    return Math.min(this.trusted, this.order.length);
  }

  get size() {
    return this.order.length;
  }

  get(no: number) {
    return this.byNo.get(no);
  }

  /** Finds a chat by its ID or its localChatID. */
  find(idOrLocal: string): ChatRecord | undefined {
    const hit = this.byId.get(idOrLocal);
    if (hit) return hit;
    return /^\d+$/.test(idOrLocal) ? this.byNo.get(Number(idOrLocal)) : undefined;
  }

  /** Finds the chat a connector calls `networkChatID` on one account. */
  findNetwork(accountID: string, networkChatID: string): ChatRecord | undefined {
    return this.byNetwork.get(networkKey(accountID, networkChatID));
  }

  all(): readonly ChatRecord[] {
    return this.order;
  }

  insert(chat: ChatRecord) {
    this.mustBeComplete();
    this.byNo.set(chat.no, chat);
    this.byId.set(chat.id, chat);
    this.byNetwork.set(networkKey(chat.accountID, chat.networkChatID), chat);
    this.order.splice(this.position(chat), 0, chat);
  }

  /**
   * Applies a change that may move the chat in list order (lastActivity). The rows between its old and new place
   * shift by one: a chat that gets a message is usually near the top already, so a send moves a few rows, where
   * a remove-and-insert would move the whole list (100,000 rows at a time was a quarter of a send's CPU time).
   */
  update(chat: ChatRecord, change: (c: ChatRecord) => void) {
    this.mustBeComplete();
    const at = this.indexOf(chat);
    change(chat);
    if (at < 0) {
      this.order.splice(this.position(chat), 0, chat);
      return;
    }
    const order = this.order;
    const to = this.positionAfter(chat.lastActivity, chat.no, at);
    if (to < at) order.copyWithin(to + 1, to, at);
    else if (to > at) order.copyWithin(at, at + 1, to + 1);
    order[to] = chat;
  }

  remove(chat: ChatRecord) {
    this.mustBeComplete();
    const at = this.indexOf(chat);
    if (at >= 0) this.order.splice(at, 1);
    this.byNo.delete(chat.no);
    this.byId.delete(chat.id);
    this.byNetwork.delete(networkKey(chat.accountID, chat.networkChatID));
  }

  /**
   * First index in list order whose chat sorts after (lastActivity, no). With `skip`, as if the row at that index
   * were not there (update() looks for a chat's new place while its old row is still in the list).
   */
  positionAfter(lastActivity: number, no: number, skip = -1): number {
    let lo = 0,
      hi = skip < 0 ? this.order.length : this.order.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const c = this.order[skip >= 0 && mid >= skip ? mid + 1 : mid];
      if (c.lastActivity > lastActivity || (c.lastActivity === lastActivity && c.no > no)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private mustBeComplete() {
    if (this.trusted !== Infinity) throw new Error("a chat changed before every chat was loaded at start-up");
  }

  private position(chat: ChatRecord) {
    return this.positionAfter(chat.lastActivity, chat.no);
  }

  private indexOf(chat: ChatRecord) {
    let i = this.position(chat);
    if (this.order[i] === chat) return i;
    // Fallback when the caller mutated sort fields before calling update(): a linear scan.
    i = this.order.indexOf(chat);
    return i;
  }
}

export function compareChats(a: ChatRecord, b: ChatRecord) {
  return b.lastActivity - a.lastActivity || b.no - a.no;
}

const networkKey = (accountID: string, networkChatID: string) => `${accountID}\n${networkChatID}`;
