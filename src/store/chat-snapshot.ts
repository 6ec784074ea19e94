import type { Storage } from "unstorage";
import type { User } from "../schema/wire.ts";
import { RawJson, type Kv } from "./kv.ts";
import { keys, type ChatRecord } from "./records.ts";

/**
 * Every chat record in a few large records, so that start-up reads a few hundred values instead of one per chat.
 *
 * Why: the chat table is in memory (chat-table.ts) and was rebuilt from each `chat:<no>` record at start-up: at
 * 100,000 chats that is 100,000 reads and parses, seconds before the first answer. The snapshot holds the same
 * records with each distinct participant stored once (a group's members appear in many chats), in parts of at
 * most PART_BYTES (a Durable Object value must stay under 2 MB).
 *
 * The `chat:<no>` records stay the truth. The head record lists the chats changed since the snapshot was written
 * (`dirty`): a chat's number joins it in the same commit as the chat's first change after a snapshot, and start-up
 * reads those chats from their own records. So a `kill -9` at any point leaves a snapshot plus a list that together
 * give exactly the committed chats. The list only grows when a chat changes for the first time since the last
 * snapshot (a busy chat costs nothing more); past DIRTY_LIMIT chats a new snapshot is written.
 *
 * A new snapshot is written in steps, a few parts per commit (`advance`), so that at 100,000 chats (73 MB) no single
 * commit holds the daemon for a second. Meanwhile the committed head stays the truth; the new one lists every chat
 * changed since its first part was written, and replaces it in the commit that writes its last part. Parts left by
 * a build that a crash cut short are removed when the next build begins.
 */
export const PART_BYTES = 512 * 1024;
/** Parts a build writes per commit: about 1 MB, some 20 ms of serialising and writing. */
export const PARTS_PER_COMMIT = 2;
/** Changed chats read one by one at start-up, at most (a few tens of ms); past it the next commit re-snapshots. */
export const DIRTY_LIMIT = 2048;

interface Head {
  v: 1;
  /** Generation: part keys carry it, so a new snapshot never overwrites parts the committed head still names. */
  gen: number;
  parts: number;
  dirty: number[];
}

/** One part: users (global indices continue from the previous part) and chats as [participant indices, record]. */
interface Part {
  u: User[];
  c: [number[], Omit<ChatRecord, "participants">][];
}

/** A snapshot being written: the chats to go in it, how far it got, and the part being filled. */
interface Build {
  gen: number;
  /** Chat numbers in table order when the build began; chats made since are in `changed`. */
  order: number[];
  at: number;
  parts: number;
  /** Chats changed (made, altered, removed) since the build began: the new head's list. */
  changed: Set<number>;
  userIndex: Map<User, number>;
  byText: Map<string, number>;
  nextUser: number;
  users: string[];
  rows: string[];
  bytes: number;
}

/** The top of the chat list, read first at start-up (ChatSnapshot.loadNewest). */
export interface NewestChats {
  /** The first part's chats and every chat changed since the snapshot, as committed. */
  chats: ChatRecord[];
  /** Every chat not in `chats` sorts after this one; undefined when none is known to (each was changed since). */
  through: ChatRecord | undefined;
  /** The parts rest() reads: 0 when the snapshot had one part, and `chats` is every chat. */
  partsLeft: number;
  /** Every chat, reading the other parts, each after `pause`; undefined when a part is gone. */
  rest(pause?: () => Promise<void>): Promise<ChatRecord[] | undefined>;
}

export interface SnapshotLayout {
  partBytes: number;
  partsPerCommit: number;
}

export class ChatSnapshot {
  private head: Head | undefined;
  private build: Build | undefined;
  /** The newest generation seen, whole or not: a new snapshot never reuses its part keys. */
  private lastGen = -1;
  /** A head found with a part missing: the next snapshot removes its remaining parts. */
  private broken: Head | undefined;
  private readonly dirty = new Set<number>();

  /** `layout` is for tests, which need builds of many parts and steps without 100,000 chats. */
  constructor(
    private readonly kv: Kv,
    private readonly layout: SnapshotLayout = { partBytes: PART_BYTES, partsPerCommit: PARTS_PER_COMMIT },
  ) {}

  /** True once enough chats changed since the snapshot that a new one should be written. */
  get due(): boolean {
    return !this.head || this.dirty.size > DIRTY_LIMIT;
  }

  /**
   * The chats as committed, from the snapshot and the chats changed since (undefined when the store has no whole
   * snapshot: one written before snapshots existed, or a part gone; the caller reads the chat records instead).
   *
   * The first part and the chats changed since the snapshot come first: the top of the chat list, before the other
   * parts are read (at 100,000 chats those take over a second). Parts are in list order as it was when the snapshot
   * was written, and every chat that changed since is read from its own record, so every chat the first part does
   * not hold sorts after the oldest unchanged chat it does hold (`through`). `rest()` reads the other parts, pausing
   * before each, and gives every chat.
   */
  async loadNewest(storage: Storage): Promise<NewestChats | undefined> {
    this.dirty.clear();
    this.cancelBuild();
    this.head = (await storage.getItem<Head>(keys.chatSnapshot)) ?? undefined;
    if (!this.head) return undefined;
    const head = this.head;
    this.lastGen = head.gen;
    const byNo = new Map<number, ChatRecord>();
    const users: User[] = [];
    // One part at a time: each part's text is garbage once parsed, so the start-up never holds the whole text.
    const readInto = async (i: number) => {
      const part = await readPart(storage, keys.chatSnapshotPart(head.gen, i));
      if (!part) {
        // A reader beside the daemon (a CLI command) can see a head whose parts a newer snapshot has just replaced.
        // Either way the chat records have it all: read those, and the writer makes a new snapshot.
        if (this.head === head) {
          this.broken = head;
          this.head = undefined;
          this.dirty.clear();
        }
        return false;
      }
      for (const user of part.u) users.push(Object.freeze(user));
      for (const [indices, record] of part.c) {
        const chat = record as ChatRecord;
        chat.participants = indices.map((i) => users[i]);
        byNo.set(chat.no, chat);
      }
      return true;
    };
    if (!(await readInto(0))) return undefined;
    const changed = new Map<number, ChatRecord | undefined>();
    await readChatRecords(storage, head.dirty, (no, chat) => {
      changed.set(no, chat);
      this.dirty.add(no);
    });
    let through: ChatRecord | undefined;
    for (const chat of byNo.values()) if (!changed.has(chat.no)) through = chat; // in part order: the oldest
    const overlay = (chats: Map<number, ChatRecord>) => {
      for (const [no, chat] of changed)
        if (chat) chats.set(no, chat);
        else chats.delete(no);
      return [...chats.values()];
    };
    return {
      chats: overlay(new Map(byNo)),
      through,
      partsLeft: head.parts - 1,
      rest: async (pause) => {
        for (let i = 1; i < head.parts; i++) {
          await pause?.();
          if (!(await readInto(i))) return undefined;
        }
        return overlay(byNo);
      },
    };
  }

  /**
   * Drops the snapshot in the next commit, so that start-up reads the chat records until a new one is written: for
   * bulk writes (seed into an app's store), where listing every changed chat in the head would only grow it.
   */
  forget(): void {
    this.cancelBuild();
    if (!this.head) return;
    this.broken = this.head;
    this.head = undefined;
    this.dirty.clear();
    this.kv.remove(keys.chatSnapshot);
  }

  /** Records that chat `no` changed (or went away) in the commit being prepared. */
  changed(no: number): void {
    this.build?.changed.add(no);
    if (!this.head || this.dirty.has(no)) return;
    this.dirty.add(no);
    this.head.dirty.push(no);
    this.kv.put(keys.chatSnapshot, this.head);
  }

  /**
   * Puts a whole new snapshot of `chats` (the table as it is now) into the commit being prepared, replacing the
   * previous one in that commit: after a bulk load (seed), where one big commit is expected. Synchronous, so no chat
   * can change between the parts and the head.
   */
  write(chats: readonly ChatRecord[]): void {
    this.cancelBuild();
    this.begin(chats);
    const byNo = new Map(chats.map((chat) => [chat.no, chat]));
    this.writeParts((no) => byNo.get(no), Infinity);
  }

  /**
   * Called as each commit is prepared (Db's beforeCommit, by the store's one writer): begins a new snapshot when one
   * is due, and puts the build's next parts into this commit. True while the build has more to write: the caller
   * commits again soon, also when nothing else does.
   */
  async advance(chats: { all(): readonly ChatRecord[]; get(no: number): ChatRecord | undefined }): Promise<boolean> {
    if (!this.build) {
      if (!this.due) return false;
      const build = this.begin(chats.all());
      await this.removeStrayParts();
      if (this.build !== build) return false; // cancelled (a seed began) while the listing was read
    }
    this.writeParts((no) => chats.get(no), this.layout.partsPerCommit);
    return this.build !== undefined;
  }

  private begin(chats: readonly ChatRecord[]): Build {
    return (this.build = {
      gen: ++this.lastGen,
      order: chats.map((chat) => chat.no),
      at: 0,
      parts: 0,
      changed: new Set(),
      userIndex: new Map(),
      byText: new Map(),
      nextUser: 0,
      users: [],
      rows: [],
      bytes: 0,
    });
  }

  /**
   * Serialises the build's next chats into `maxParts` more parts (the part being filled carries over to the next
   * step); after its last part, the new head replaces the old one in the same commit.
   */
  private writeParts(chatOf: (no: number) => ChatRecord | undefined, maxParts: number): void {
    const build = this.build!;
    const flush = () => {
      this.kv.putUncached(
        keys.chatSnapshotPart(build.gen, build.parts++),
        new RawJson(asciiJson(`{"u":[${build.users.join(",")}],"c":[${build.rows.join(",")}]}`)),
      );
      build.users = [];
      build.rows = [];
      build.bytes = 0;
    };
    for (let written = 0; build.at < build.order.length; build.at++) {
      if (written === maxParts) return;
      // Gone since the build began: then it is in `changed`, and start-up reads its (missing) record.
      const chat = chatOf(build.order[build.at]);
      if (!chat) continue;
      const indices: number[] = [];
      const fresh: string[] = [];
      for (const user of chat.participants) {
        let index = build.userIndex.get(user);
        if (index === undefined) {
          // Equal users held as separate objects (chats read one by one) are stored once too.
          const text = JSON.stringify(user);
          index = build.byText.get(text);
          if (index === undefined) {
            index = build.nextUser++;
            build.byText.set(text, index);
            fresh.push(text);
          }
          build.userIndex.set(user, index);
        }
        indices.push(index);
      }
      const { participants: _, ...rest } = chat;
      const row = `[${JSON.stringify(indices)},${JSON.stringify(rest)}]`;
      const size = row.length + fresh.reduce((sum, text) => sum + text.length + 1, 0);
      if (build.bytes > 0 && build.bytes + size > this.layout.partBytes) {
        flush();
        written++;
      }
      build.users.push(...fresh);
      build.rows.push(row);
      build.bytes += size + 1;
    }
    if (build.bytes > 0 || build.parts === 0) flush();
    const previous = this.head ?? this.broken;
    if (previous) for (let i = 0; i < previous.parts; i++) this.kv.remove(keys.chatSnapshotPart(previous.gen, i));
    this.head = { v: 1, gen: build.gen, parts: build.parts, dirty: [...build.changed] };
    this.dirty.clear();
    for (const no of build.changed) this.dirty.add(no);
    this.broken = undefined;
    this.build = undefined;
    this.kv.put(keys.chatSnapshot, this.head);
  }

  /** Drops a partly written snapshot: its parts are removed, and the committed head stays as it is. */
  private cancelBuild(): void {
    const build = this.build;
    if (!build) return;
    this.build = undefined;
    for (let i = 0; i < build.parts; i++) this.kv.remove(keys.chatSnapshotPart(build.gen, i));
  }

  /**
   * Removes parts that no head names, left by a build that a crash cut short, in the commit that begins the next
   * build. One of its generation is rewritten by the new build, which reuses the number: no head ever named it.
   */
  private async removeStrayParts(): Promise<void> {
    const named = new Set<string>();
    for (const head of [this.head, this.broken])
      if (head) for (let i = 0; i < head.parts; i++) named.add(keys.chatSnapshotPart(head.gen, i));
    for (const key of await this.kv.storage.getKeys(`${keys.chatSnapshot}:`)) if (!named.has(key)) this.kv.remove(key);
  }
}

/**
 * JSON text with every character past ASCII written as a \u escape (valid anywhere JSON has non-ASCII: inside
 * strings). Why: one emoji in a 512 KB part makes the text V8 reads back a two-byte string, decoded from UTF-8 on a
 * slow path and parsed more slowly; all-ASCII parts read about 10 % faster at start-up (1.56 s → 1.40 s for the
 * 140 parts of 100,000 chats here). Parts written before this are read as they are.
 */
function asciiJson(text: string): string {
  return /[\u007f-\uffff]/.test(text)
    ? text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    : text;
}

/**
 * Reads a part as the driver holds it (JSON text) and parses them with JSON.parse. unstorage's own read
 * first scans each value with regular expressions against prototype pollution, which JSON.parse cannot cause
 * (it defines a "__proto__" key as a plain property); on 70 MB of snapshot that scan was a tenth of the start-up.
 */
async function readPart(storage: Storage, key: string): Promise<Part | undefined> {
  const { driver, base } = storage.getMount(key);
  const raw = await driver.getItem(key.slice(base.length));
  if (raw === null || raw === undefined) return undefined;
  return (typeof raw === "string" ? JSON.parse(raw) : raw) as Part;
}

/**
 * Reads the stored records of these chat numbers, 2,000 keys per read (one query each on SQLite, and few enough
 * values per call for a Durable Object), and hands each to `each` in order: undefined for a chat that is gone.
 */
export async function readChatRecords(
  storage: Storage,
  nos: number[],
  each: (no: number, chat: ChatRecord | undefined) => void,
): Promise<void> {
  for (let i = 0; i < nos.length; i += 2000) {
    const batch = nos.slice(i, i + 2000);
    const values = await storage.getItems<ChatRecord>(batch.map(keys.chat));
    values.forEach(({ value }, j) => each(batch[j], (value as ChatRecord | null) ?? undefined));
  }
}
