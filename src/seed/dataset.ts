import { groupTitle, prng, corpus, pick, type Random } from "../connectors/sandbox/corpus.ts";
import { directChatID, echoUser, sandboxContacts, type SandboxState } from "../connectors/sandbox/contacts.ts";
import { createChatRecord } from "../services/ingest.ts";
import { termsOf } from "../services/message-records.ts";
import { messageID } from "../services/present.ts";
import type { Db } from "../store/db.ts";
import { ALL_TERM, type SearchIndex } from "../store/search-index.ts";
import {
  CHUNK_SIZE,
  keys,
  previewOf,
  type AccountRecord,
  type ChatRecord,
  type MessageRecord,
} from "../store/records.ts";
import type { User, Attachment } from "../schema/wire.ts";

export interface SeedOptions {
  chats: number;
  messages: number;
  accounts?: number;
  seed?: number;
  /** Reference "now" (ms); timestamps span the two years before it. */
  now?: number;
  onProgress?: (done: number, total: number) => void;
  /** Stops the seeding (it throws the signal's reason) before its next commit; what was committed stays. */
  signal?: AbortSignal;
}

const DAY = 86_400_000;
const EMOJI = ["👍", "❤️", "😂", "🎉", "😮", "🙏", "🔥", "👀"];
/**
 * Messages generated, then index postings written, between commits: each batch waits in memory, with its JSON,
 * until its commit (about 10 MB), and the largest chats have hundreds of thousands of messages.
 */
const COMMIT_MESSAGES = 20_000;
const INDEX_COMMIT = 200_000;
/** Digit base of the radix sort of messages by ts: three passes cover the two years' milliseconds. */
const RADIX = 4096;

/**
 * Fills an empty store with a deterministic sandbox dataset: K accounts, N chats (about 70 % direct, the rest
 * groups), M messages spread over chats with a heavy-tailed distribution and over two years, with replies,
 * reactions, links and some attachment metadata. The same options always give the same data (IDs, texts, order).
 *
 * Writes go through the store's normal records; the search index is built in memory and written sorted at the end,
 * which is far faster than posting-by-posting insertion.
 */
export async function seedDataset(db: Db, options: SeedOptions): Promise<void> {
  if (db.accounts.length || db.chats.size)
    throw new Error("the store already holds data; seed needs an empty data directory");
  // One chat snapshot at the end, rather than one per 2,048 chats written (as an app's store would otherwise do),
  // and none meanwhile: an app's store has one already, whose list of changed chats would grow with every chat.
  const keepsChatSnapshot = db.keepsChatSnapshot;
  db.keepsChatSnapshot = false;
  db.forgetChatSnapshot();
  try {
    await seedInto(db, options);
  } finally {
    db.keepsChatSnapshot = keepsChatSnapshot;
  }
}

async function seedInto(db: Db, options: SeedOptions): Promise<void> {
  const seed = options.seed ?? 1;
  const random = prng(seed);
  const now = options.now ?? Date.now();
  const start = now - 730 * DAY;
  const accountCount = Math.max(1, Math.min(options.accounts ?? 1, options.chats));
  const text = corpus();

  // Accounts, each with enough contacts for its direct chats.
  const perAccount = Math.ceil(options.chats / accountCount);
  const accounts: { record: AccountRecord; contacts: User[] }[] = [];
  for (let a = 0; a < accountCount; a++) {
    const state: SandboxState = { seed: seed * 1000 + a, contacts: Math.max(30, perAccount + 10) };
    const id = `local-sandbox_ba_${Math.floor(random() * 36 ** 8)
      .toString(36)
      .padStart(8, "0")}`;
    const record: AccountRecord = {
      accountID: id,
      network: "sandbox",
      networkName: "Sandbox",
      user: { id: `@me${a}:sandbox.invalid`, fullName: `Sandbox User ${a + 1}`, username: `me${a}`, isSelf: true },
      loginID: `local-sandbox_login_seed${a}`,
      remoteID: `me${a}`,
      status: "connected",
      state: state as unknown as Record<string, unknown>,
    };
    accounts.push({ record, contacts: sandboxContacts(state) });
  }
  db.accounts = accounts.map((a) => a.record);
  db.logins = accounts.map(({ record }) => ({
    loginID: record.loginID,
    network: "sandbox",
    remoteID: record.remoteID!,
    user: record.user,
    createdAt: new Date(now).toISOString(),
  }));
  db.saveAccounts();
  db.saveLogins();

  // Heavy-tailed message counts: weight 1/(rank+1)^0.9, every chat at least one message.
  const weights = Array.from({ length: options.chats }, (_, i) => 1 / (i + 1) ** 0.9);
  shuffle(random, weights);
  const totalWeight = weights.reduce((s, w) => s + w, 0);
  // With fewer messages than chats, the first chats get one each and the rest none.
  const base = options.messages >= options.chats ? 1 : 0;
  const spare = Math.max(0, options.messages - options.chats);
  const counts = weights.map((w) => base + Math.floor((w / totalWeight) * spare));
  let assigned = counts.reduce((s, c) => s + c, 0);
  for (let i = 0; assigned < options.messages; i = (i + 1) % counts.length, assigned++) counts[i]++;

  const index = new IndexBuilder(assigned);
  let done = 0;
  let committed = 0;
  const nextContact = new Array(accountCount).fill(1); // contact 0 is Echo
  for (let c = 0; c < options.chats; c++) {
    const { record: account, contacts } = accounts[c % accountCount];
    const me = account.user;
    const a = c % accountCount;
    let chat: ChatRecord;
    const isGroup = c >= accountCount && random() < 0.3;
    if (c < accountCount)
      chat = newChat(db, account, directChatID(echoUser.id), "single", echoUser.fullName!, [me, echoUser]);
    else if (!isGroup) {
      const other = contacts[nextContact[a]++ % contacts.length];
      chat = newChat(db, account, directChatID(other.id), "single", other.fullName ?? other.id, [me, other]);
    } else {
      const size = 3 + Math.floor(random() * random() * 40);
      const members = new Set<User>();
      while (members.size < Math.min(size, contacts.length - 1))
        members.add(contacts[1 + Math.floor(random() * (contacts.length - 1))]);
      chat = newChat(db, account, `grp:seed-${c}`, "group", groupTitle(random), [me, ...members]);
    }
    chat.isArchived = random() < 0.1;
    chat.isMuted = random() < 0.05;
    chat.isLowPriority = !chat.isArchived && random() < 0.05;
    chat.isPinned = random() < 0.01;

    // Activity window: some chats are old and quiet, most run up to recently.
    const n = counts[c];
    const begin = start + random() * 700 * DAY;
    const end = random() < 0.7 ? now - random() * 30 * DAY : begin + random() * (now - begin);
    const stamps = Array.from({ length: n }, () => Math.floor(begin + random() * (end - begin))).sort((x, y) => x - y);
    const others = chat.participants.filter((p) => p.id !== me.id);
    let chunk: (MessageRecord | null)[] = [];
    let newest: MessageRecord | undefined;
    for (let seq = 0; seq < n; seq++) {
      const isSender = random() < 0.4;
      const sender = isSender ? me : pick(random, others);
      const m: MessageRecord = {
        seq,
        senderID: sender.id,
        senderName: sender.fullName,
        ts: stamps[seq],
        type: "TEXT",
        text: text.sentence(random),
        isSender,
      };
      const r = random();
      if (r < 0.02) m.text += ` https://example.org/${text.word(random)}`;
      else if (r < 0.035) addAttachment(random, m, seq);
      if (seq > 0 && random() < 0.05) m.linkedMessageID = messageID(chat, Math.floor(random() * seq));
      if (random() < 0.05) {
        const who = pick(random, chat.participants);
        const key = pick(random, EMOJI);
        m.reactions = [{ id: `${who.id}${key}`, participantID: who.id, reactionKey: key, emoji: true }];
      }
      chunk.push(m);
      newest = m;
      index.add(termsOf(m), m.ts, chat.no, seq);
      done++;
      if (chunk.length === CHUNK_SIZE || seq === n - 1) {
        db.kv.put(keys.chunk(chat.no, Math.floor(seq / CHUNK_SIZE)), chunk);
        chunk = [];
        // Even within a chat: see COMMIT_MESSAGES.
        if (done - committed >= COMMIT_MESSAGES) {
          committed = done;
          await checkpoint(options.signal);
          await db.commit();
          options.onProgress?.(done, options.messages);
        }
      }
    }
    chat.nextSeq = n;
    chat.lastActivity = newest?.ts ?? begin;
    const unread = random() < 0.15 ? Math.min(n, 1 + Math.floor(random() * 5)) : 0;
    chat.lastReadSeq = n - 1 - unread;
    chat.unreadCount = unread;
    if (newest) chat.preview = previewOf(newest);
    db.saveChat(chat);
  }
  // lastActivity was set after the chats were listed: put them in list order again. The snapshot lets the first
  // start read them in a few hundred reads (store/chat-snapshot.ts).
  db.chats.load([...db.chats.all()]);
  db.writeChatSnapshot();
  await db.commit();
  options.onProgress?.(done, options.messages);
  await index.write(db, options.signal);
}

/**
 * With a signal: lets the event loop run (the commits alone never yield to it, so a signal handler would wait for
 * the end), then stops if the seeding was aborted meanwhile.
 */
async function checkpoint(signal: AbortSignal | undefined) {
  if (!signal) return;
  await new Promise((resolve) => setTimeout(resolve, 0));
  signal.throwIfAborted();
}

/**
 * Builds the search index of the seeded messages. Ten million messages make about 70 million postings: as JS
 * arrays of (ts, chatNo, seq) triples they took gigabytes. Here each message gets a number g in generation order,
 * its triple is stored once in a typed array, and a term's postings are a compact list of g's.
 */
class IndexBuilder {
  /** The (ts, chatNo, seq) triple of each message, by g; write() puts them in posting order. */
  private table: Float64Array;
  private messages = 0;
  /** Each term's g's, ascending. ALL_TERM, in every message, needs none. */
  private readonly terms = new Map<string, GapList>();

  constructor(capacity: number) {
    this.table = new Float64Array(3 * capacity);
  }

  /** Messages must come in (chatNo, seq) order, as seeding makes them, with ts in whole milliseconds. */
  add(terms: readonly string[], ts: number, chatNo: number, seq: number): void {
    const g = this.messages++;
    this.table[3 * g] = ts;
    this.table[3 * g + 1] = chatNo;
    this.table[3 * g + 2] = seq;
    for (const term of terms) {
      if (term === ALL_TERM) continue;
      let list = this.terms.get(term);
      if (!list) this.terms.set(term, (list = new GapList()));
      list.push(g);
    }
  }

  /**
   * Writes the index and commits it, using the builder up. A term's commit holds all its segments, then all their
   * JSON, in memory; a full collection that finds them live lets the heap grow to a few times that before the next.
   * So the largest terms go first, the many small ones after them bring the heap back down, and ALL_TERM, the
   * largest of all, comes last (measured at 10 million messages: 1.40 GB peak, against 1.50 GB smallest first).
   */
  async write(db: Db, signal: AbortSignal | undefined): Promise<void> {
    await this.writeTerms(db, signal);
    this.writeAllTerm(db.index);
    await db.commit();
  }

  /** Every term but ALL_TERM, largest first, each list dropped once written; commits every INDEX_COMMIT postings. */
  private async writeTerms(db: Db, signal: AbortSignal | undefined): Promise<void> {
    const rank = this.sortTable();
    const terms = [...this.terms].sort(([, a], [, b]) => a.length - b.length);
    this.terms.clear();
    let uncommitted = 0;
    // Popped from the end: largest first.
    for (let next = terms.pop(); next; next = terms.pop()) {
      uncommitted += this.writeTerm(db.index, next[0], next[1].values(), rank);
      if (uncommitted >= INDEX_COMMIT) {
        uncommitted = 0;
        await checkpoint(signal);
        await db.commit();
      }
    }
  }

  /** ALL_TERM is in every message: its postings are the sorted table itself, let go once written. */
  private writeAllTerm(index: SearchIndex): void {
    if (this.messages) index.writeSorted(ALL_TERM, this.table, this.messages);
    this.table = new Float64Array(0);
  }

  /** Puts the table in posting order, in place; returns each g's rank in that order. */
  private sortTable(): Int32Array {
    const { table } = this;
    const order = this.postingOrder();
    const rank = new Int32Array(order.length);
    for (let r = 0; r < order.length; r++) rank[order[r]] = r;
    // Each cycle of the permutation moves round in turn: rank r takes the triple of g = order[r] (-1 marks done).
    for (let start = 0; start < order.length; start++) {
      if (order[start] < 0) continue;
      const ts = table[3 * start],
        chatNo = table[3 * start + 1],
        seq = table[3 * start + 2];
      let r = start;
      for (let g = order[r]; g !== start; r = g, g = order[r]) {
        table[3 * r] = table[3 * g];
        table[3 * r + 1] = table[3 * g + 1];
        table[3 * r + 2] = table[3 * g + 2];
        order[r] = -1;
      }
      table[3 * r] = ts;
      table[3 * r + 1] = chatNo;
      table[3 * r + 2] = seq;
      order[r] = -1;
    }
    return rank;
  }

  /**
   * Every g in posting order: by ts, then by g itself, which is (chatNo, seq) order (see add). A stable radix sort
   * on ts: as fast as a comparator sort, without that sort's two heap copies of the whole array (160 MB for ten
   * million messages: a collection that found them live let the heap grow far larger for the rest of the run).
   */
  private postingOrder(): Int32Array {
    const { table } = this;
    let order = new Int32Array(this.messages);
    let min = Infinity,
      max = -Infinity;
    for (let g = 0; g < order.length; g++) {
      order[g] = g;
      min = Math.min(min, table[3 * g]);
      max = Math.max(max, table[3 * g]);
    }
    let next = new Int32Array(order.length);
    const counts = new Int32Array(RADIX + 1);
    for (let place = 1; place <= max - min; place *= RADIX) {
      counts.fill(0);
      for (let i = 0; i < order.length; i++) counts[(Math.floor((table[3 * order[i]] - min) / place) % RADIX) + 1]++;
      for (let d = 1; d <= RADIX; d++) counts[d] += counts[d - 1];
      for (let i = 0; i < order.length; i++) {
        const g = order[i];
        next[counts[Math.floor((table[3 * g] - min) / place) % RADIX]++] = g;
      }
      [order, next] = [next, order];
    }
    return order;
  }

  /** Writes one term from its g's (overwritten: they are sorted as ranks); returns its number of postings. */
  private writeTerm(index: SearchIndex, term: string, gs: Int32Array, rank: Int32Array): number {
    // Ranks sort in posting order, and as plain integers they sort natively (no comparator calls).
    for (let i = 0; i < gs.length; i++) gs[i] = rank[gs[i]];
    gs.sort();
    const { table } = this;
    const flat = new Float64Array(3 * gs.length);
    for (let i = 0; i < gs.length; i++) {
      const at = 3 * gs[i];
      flat[3 * i] = table[at];
      flat[3 * i + 1] = table[at + 1];
      flat[3 * i + 2] = table[at + 2];
    }
    index.writeSorted(term, flat, gs.length);
    return gs.length;
  }
}

/**
 * A term's g's, ascending, kept as the gaps between them in a varint code: one or two bytes each for most terms,
 * where an Int32Array takes four (about 140 MB instead of 330 for ten million messages, all held while the
 * largest terms are written).
 */
class GapList {
  private bytes = new Uint8Array(16);
  private size = 0;
  private last = 0;
  length = 0;

  push(g: number): void {
    if (this.size + 5 > this.bytes.length) {
      const grown = new Uint8Array(2 * this.bytes.length);
      grown.set(this.bytes);
      this.bytes = grown;
    }
    let gap = g - this.last;
    this.last = g;
    this.length++;
    for (; gap >= 0x80; gap >>>= 7) this.bytes[this.size++] = (gap & 0x7f) | 0x80;
    this.bytes[this.size++] = gap;
  }

  /** The g's, decoded into a new array. */
  values(): Int32Array {
    const values = new Int32Array(this.length);
    for (let i = 0, at = 0, g = 0; i < values.length; i++) {
      let gap = 0;
      for (let shift = 0; ; shift += 7) {
        const byte = this.bytes[at++];
        gap |= (byte & 0x7f) << shift;
        if (byte < 0x80) break;
      }
      values[i] = g += gap;
    }
    return values;
  }
}

function newChat(
  db: Db,
  account: AccountRecord,
  networkChatID: string,
  type: "single" | "group",
  title: string,
  participants: User[],
): ChatRecord {
  return createChatRecord(db, account.accountID, { networkChatID, type, title, participants }, 0);
}

function addAttachment(random: Random, m: MessageRecord, seq: number) {
  const kind = pick(random, ["img", "img", "video", "audio", "file"] as const);
  const ext = { img: "jpg", video: "mp4", audio: "ogg", file: "pdf" }[kind];
  const mime = { img: "image/jpeg", video: "video/mp4", audio: "audio/ogg", file: "application/pdf" }[kind];
  const fileSize = 10_000 + Math.floor(random() * 5_000_000);
  const attachment: Attachment = {
    type: kind === "file" ? "unknown" : kind,
    // The sandbox serves these on demand (connectors/sandbox/media.ts); the URL says what to generate.
    id: `mxc://sandbox.invalid/seed-${kind}-${fileSize}-${Math.floor(random() * 1e9).toString(36)}${seq.toString(36)}`,
    fileName: `${kind}-${seq}.${ext}`,
    mimeType: mime,
    fileSize,
  };
  if (kind === "img" || kind === "video") attachment.size = { width: 1280, height: 720 };
  if (kind === "video" || kind === "audio") attachment.duration = 3 + Math.floor(random() * 120);
  if (kind === "audio") attachment.isVoiceNote = true;
  m.attachments = [attachment];
  m.type = kind === "img" ? "IMAGE" : kind === "video" ? "VIDEO" : kind === "audio" ? "VOICE" : "FILE";
  if (random() < 0.6) delete m.text;
}

function shuffle<T>(random: Random, items: T[]) {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
}
