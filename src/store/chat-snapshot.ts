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
 * snapshot (a busy chat costs nothing more); past DIRTY_LIMIT chats the snapshot is written again, in one commit with
 * an empty list.
 */
export const PART_BYTES = 512 * 1024;
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

export class ChatSnapshot {
  private head: Head | undefined;
  /** The newest generation seen, whole or not: a new snapshot never reuses its part keys. */
  private lastGen = -1;
  /** A head found with a part missing: the next snapshot removes its remaining parts. */
  private broken: Head | undefined;
  private readonly dirty = new Set<number>();

  constructor(private readonly kv: Kv) {}

  /** True once enough chats changed since the snapshot that the next commit should write a new one. */
  get due(): boolean {
    return !this.head || this.dirty.size > DIRTY_LIMIT;
  }

  /**
   * The chats as committed, from the snapshot and the chats changed since; undefined when the store has no whole
   * snapshot (one written before snapshots existed, or a part gone), which the caller reads record by record.
   */
  async load(storage: Storage): Promise<ChatRecord[] | undefined> {
    this.dirty.clear();
    this.head = (await storage.getItem<Head>(keys.chatSnapshot)) ?? undefined;
    if (!this.head) return undefined;
    const { gen, parts, dirty } = this.head;
    this.lastGen = gen;
    const partKeys = Array.from({ length: parts }, (_, i) => keys.chatSnapshotPart(gen, i));
    const byNo = new Map<number, ChatRecord>();
    const users: User[] = [];
    // One part at a time: each part's text is garbage once parsed, so the start-up never holds the whole text.
    for (const key of partKeys) {
      const part = await readPart(storage, key);
      if (!part) {
        // A reader beside the daemon (a CLI command) can see a head whose parts a newer snapshot has just replaced.
        // Either way the chat records have it all: read those, and the writer makes a new snapshot.
        this.broken = this.head;
        this.head = undefined;
        return undefined;
      }
      for (const user of part.u) users.push(Object.freeze(user));
      for (const [indices, record] of part.c) {
        const chat = record as ChatRecord;
        chat.participants = indices.map((i) => users[i]);
        byNo.set(chat.no, chat);
      }
    }
    await readChatRecords(storage, dirty, (no, chat) => {
      if (chat) byNo.set(no, chat);
      else byNo.delete(no);
      this.dirty.add(no);
    });
    return [...byNo.values()];
  }

  /**
   * Drops the snapshot in the next commit, so that start-up reads the chat records until a new one is written: for
   * bulk writes (seed into an app's store), where listing every changed chat in the head would only grow it.
   */
  forget(): void {
    if (!this.head) return;
    this.broken = this.head;
    this.head = undefined;
    this.dirty.clear();
    this.kv.remove(keys.chatSnapshot);
  }

  /** Records that chat `no` changed (or went away) in the commit being prepared. */
  changed(no: number): void {
    if (!this.head || this.dirty.has(no)) return;
    this.dirty.add(no);
    this.head.dirty.push(no);
    this.kv.put(keys.chatSnapshot, this.head);
  }

  /**
   * Puts a new snapshot of `chats` (the whole table, as it is now) into the commit being prepared, with an empty
   * list of changed chats, and removes the previous snapshot's parts in the same commit. Synchronous, so no chat
   * can change between the parts and the head.
   */
  write(chats: readonly ChatRecord[]): void {
    const previous = this.head ?? this.broken;
    const gen = ++this.lastGen;
    const userIndex = new Map<User, number>();
    const byText = new Map<string, number>();
    const parts: string[] = [];
    let users: string[] = [];
    let rows: string[] = [];
    let bytes = 0;
    let nextUser = 0;
    const flush = () => {
      parts.push(`{"u":[${users.join(",")}],"c":[${rows.join(",")}]}`);
      users = [];
      rows = [];
      bytes = 0;
    };
    for (const chat of chats) {
      const indices: number[] = [];
      const fresh: string[] = [];
      for (const user of chat.participants) {
        let index = userIndex.get(user);
        if (index === undefined) {
          // Equal users held as separate objects (chats read one by one) are stored once too.
          const text = JSON.stringify(user);
          index = byText.get(text);
          if (index === undefined) {
            index = nextUser++;
            byText.set(text, index);
            fresh.push(text);
          }
          userIndex.set(user, index);
        }
        indices.push(index);
      }
      const { participants: _, ...rest } = chat;
      const row = `[${JSON.stringify(indices)},${JSON.stringify(rest)}]`;
      const size = row.length + fresh.reduce((sum, text) => sum + text.length + 1, 0);
      if (bytes > 0 && bytes + size > PART_BYTES) flush();
      users.push(...fresh);
      rows.push(row);
      bytes += size + 1;
    }
    if (bytes > 0 || parts.length === 0) flush();
    parts.forEach((text, i) => this.kv.putUncached(keys.chatSnapshotPart(gen, i), new RawJson(text)));
    if (previous) for (let i = 0; i < previous.parts; i++) this.kv.remove(keys.chatSnapshotPart(previous.gen, i));
    this.head = { v: 1, gen, parts: parts.length, dirty: [] };
    this.broken = undefined;
    this.dirty.clear();
    this.kv.put(keys.chatSnapshot, this.head);
  }
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
export async function readChatRecords(storage: Storage, nos: number[], each: (no: number, chat: ChatRecord | undefined) => void): Promise<void> {
  for (let i = 0; i < nos.length; i += 2000) {
    const batch = nos.slice(i, i + 2000);
    const values = await storage.getItems<ChatRecord>(batch.map(keys.chat));
    values.forEach(({ value }, j) => each(batch[j], (value as ChatRecord | null) ?? undefined));
  }
}
