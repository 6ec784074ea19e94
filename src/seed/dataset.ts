import { groupTitle, prng, corpus, pick, type Random } from "../connectors/sandbox/corpus.ts";
import { directChatID, echoUser, sandboxContacts, type SandboxState } from "../connectors/sandbox/sandbox.ts";
import { createChatRecord } from "../services/ingest.ts";
import { termsOf } from "../services/messages.ts";
import { messageID } from "../services/present.ts";
import type { Db } from "../store/db.ts";
import { CHUNK_SIZE, keys, previewOf, type AccountRecord, type ChatRecord, type MessageRecord } from "../store/records.ts";
import { comparePosting } from "../store/search-index.ts";
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
 * Fills an empty store with a deterministic sandbox dataset: K accounts, N chats (about 70 % direct, the rest
 * groups), M messages spread over chats with a heavy-tailed distribution and over two years, with replies,
 * reactions, links and some attachment metadata. The same options always give the same data (IDs, texts, order).
 *
 * Writes go through the store's normal records; the search index is built in memory and written sorted at the end,
 * which is far faster than posting-by-posting insertion.
 */
export async function seedDataset(db: Db, options: SeedOptions): Promise<void> {
  if (db.accounts.length || db.chats.size) throw new Error("the store already holds data; seed needs an empty data directory");
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
    const id = `local-sandbox_ba_${(Math.floor(random() * 36 ** 8)).toString(36).padStart(8, "0")}`;
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
  db.logins = accounts.map(({ record }) => ({ loginID: record.loginID, network: "sandbox", remoteID: record.remoteID!, user: record.user, createdAt: new Date(now).toISOString() }));
  db.saveAccounts();
  db.saveLogins();

  // Heavy-tailed message counts: weight 1/(rank+1)^0.9, every chat at least one message.
  const weights = Array.from({ length: options.chats }, (_, i) => 1 / Math.pow(i + 1, 0.9));
  shuffle(random, weights);
  const totalWeight = weights.reduce((s, w) => s + w, 0);
  // With fewer messages than chats, the first chats get one each and the rest none.
  const base = options.messages >= options.chats ? 1 : 0;
  const spare = Math.max(0, options.messages - options.chats);
  const counts = weights.map((w) => base + Math.floor((w / totalWeight) * spare));
  let assigned = counts.reduce((s, c) => s + c, 0);
  for (let i = 0; assigned < options.messages; i = (i + 1) % counts.length, assigned++) counts[i]++;

  const postings = new Map<string, number[]>();
  let done = 0;
  const nextContact = new Array(accountCount).fill(1); // contact 0 is Echo
  for (let c = 0; c < options.chats; c++) {
    const { record: account, contacts } = accounts[c % accountCount];
    const me = account.user;
    const a = c % accountCount;
    let chat: ChatRecord;
    const isGroup = c >= accountCount && random() < 0.3;
    if (c < accountCount) chat = newChat(db, account, directChatID(echoUser.id), "single", echoUser.fullName!, [me, echoUser]);
    else if (!isGroup) {
      const other = contacts[nextContact[a]++ % contacts.length];
      chat = newChat(db, account, directChatID(other.id), "single", other.fullName ?? other.id, [me, other]);
    } else {
      const size = 3 + Math.floor(random() * random() * 40);
      const members = new Set<User>();
      while (members.size < Math.min(size, contacts.length - 1)) members.add(contacts[1 + Math.floor(random() * (contacts.length - 1))]);
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
      for (const term of termsOf(m)) {
        let list = postings.get(term);
        if (!list) postings.set(term, (list = []));
        list.push(m.ts, chat.no, seq);
      }
      if (chunk.length === CHUNK_SIZE || seq === n - 1) {
        db.kv.put(keys.chunk(chat.no, Math.floor(seq / CHUNK_SIZE)), chunk);
        chunk = [];
      }
    }
    const last = chunkLast(n, stamps);
    chat.nextSeq = n;
    chat.lastActivity = last ?? begin;
    const unread = random() < 0.15 ? Math.min(n, 1 + Math.floor(random() * 5)) : 0;
    chat.lastReadSeq = n - 1 - unread;
    chat.unreadCount = unread;
    db.saveChat(chat);
    done += n;
    if (c % 200 === 199 || c === options.chats - 1) {
      await checkpoint(options.signal);
      await db.commit();
      // Fill previews from the committed chunks (cheap: the last chunk is cached).
      options.onProgress?.(done, options.messages);
    }
  }
  for (const chat of db.chats.all()) {
    if (chat.nextSeq > 0 && !chat.preview) chat.preview = previewOf((await db.message(chat.no, chat.nextSeq - 1)) ?? undefined);
    db.saveChat(chat);
  }
  db.chats.load([...db.chats.all()]);
  await db.commit();

  // The search index: sort each term's postings and write whole segments.
  let written = 0;
  for (const [term, flat] of postings) {
    const count = flat.length / 3;
    const order = Array.from({ length: count }, (_, i) => i * 3);
    order.sort((x, y) => comparePosting(flat, x, flat, y));
    const sorted = new Array<number>(flat.length);
    order.forEach((from, i) => { sorted[i * 3] = flat[from]; sorted[i * 3 + 1] = flat[from + 1]; sorted[i * 3 + 2] = flat[from + 2]; });
    db.index.writeSorted(term, sorted, count);
    postings.delete(term);
    if (++written % 2000 === 0) {
      await checkpoint(options.signal);
      await db.commit();
    }
  }
  await db.commit();
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

function chunkLast(n: number, stamps: number[]) {
  return n > 0 ? stamps[n - 1] : undefined;
}

function newChat(db: Db, account: AccountRecord, networkChatID: string, type: "single" | "group", title: string, participants: User[]): ChatRecord {
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
