import { createStorage, type Storage } from "unstorage";
import { describe, expect, it } from "vitest";
import { DIRTY_LIMIT, type SnapshotLayout } from "./chat-snapshot.ts";
import { Db } from "./db.ts";
import { keys, type ChatRecord } from "./records.ts";
import type { User } from "../schema/wire.ts";

const contacts: User[] = Array.from({ length: 50 }, (_, i) => ({ id: `@u${i}:x`, fullName: `User ${i}` }));
const self: User = { id: "@me:x", fullName: "Me", isSelf: true };

function addChat(db: Db, n: number): ChatRecord {
  const no = db.allocateChatNo();
  const members = [self, contacts[n % 50], contacts[(n * 7) % 50]];
  const chat: ChatRecord = {
    no,
    id: `!c${no}:x`,
    accountID: "acc",
    networkChatID: `net-${no}`,
    type: "group",
    title: `Chat ${n}`,
    // Fresh objects, as a network hands them over: the snapshot stores equal users once all the same.
    participants: members.map((u) => ({ ...u })),
    isArchived: false,
    isMuted: false,
    isPinned: false,
    isLowPriority: false,
    unreadCount: 0,
    lastReadSeq: -1,
    lastActivity: 1_000 + n,
    nextSeq: 0,
  };
  db.chats.insert(chat);
  db.saveChat(chat);
  return chat;
}

/** The chats as their own records hold them: what any start-up must arrive at. */
async function storedChats(storage: Storage): Promise<ChatRecord[]> {
  const meta = (await storage.getItem<{ nextChatNo: number }>(keys.meta))!;
  const values = await storage.getItems<ChatRecord>(Array.from({ length: meta.nextChatNo }, (_, no) => keys.chat(no)));
  return values.flatMap(({ value }) => (value ? [value as ChatRecord] : []));
}

const byNo = (chats: readonly ChatRecord[]) => JSON.parse(JSON.stringify([...chats].sort((a, b) => a.no - b.no)));

async function writer(storage: Storage, snapshotLayout?: SnapshotLayout): Promise<Db> {
  const db = await Db.open(storage, { snapshotLayout });
  db.keepsChatSnapshot = true;
  return db;
}

/** Parts of about 25 chats, 4 per commit: a snapshot of a few thousand chats takes tens of commits to write. */
const STEPPED: SnapshotLayout = { partBytes: 8 * 1024, partsPerCommit: 4 };

type StoredHead = { gen: number; parts: number; dirty: number[] };
const storedHead = async (storage: Storage) =>
  (await storage.getItem<StoredHead>(keys.chatSnapshot)) ?? { gen: -1, parts: 0, dirty: [] };
const partKeys = async (storage: Storage) =>
  (await storage.getKeys("chatsnap:")).filter((k) => k !== keys.chatSnapshot).sort();
const namedParts = (head: StoredHead) =>
  Array.from({ length: head.parts }, (_, i) => keys.chatSnapshotPart(head.gen, i)).sort();

const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Commits, and goes on until a snapshot being written is done (as the writer's own timer would, between requests). */
async function finishBuild(db: Db, storage: Storage) {
  const done = async () =>
    (await storage.getItem(keys.chatSnapshot)) !== null &&
    (await partKeys(storage)).length === (await storedHead(storage)).parts;
  for (let i = 0; i === 0 || (i < 10_000 && !(await done())); i++) {
    await db.commit();
    await nextTurn(); // the writer takes one step per turn of the event loop
  }
}

/** 3,000 chats in a stepped snapshot, then enough distinct changes (not yet committed) to make the next one due. */
async function snapshotDue() {
  const storage = createStorage();
  const db = await writer(storage, STEPPED);
  const chats = Array.from({ length: 3000 }, (_, n) => addChat(db, n));
  await finishBuild(db, storage);
  const first = await storedHead(storage);
  for (const chat of chats.slice(0, DIRTY_LIMIT + 1)) {
    chat.title = `Renamed ${chat.no}`;
    db.saveChat(chat);
  }
  return { storage, db, chats, first };
}

/**
 * Opens the store as the app does (`early`) and checks what it has before and after the rest is read: the trusted
 * rows are exactly the top of `whole` (the list as a full start-up has it), nothing may change a chat meanwhile, and
 * afterwards the table is `whole`. Returns how many rows were trusted before the rest was read.
 */
async function expectEarlyStart(storage: Storage, whole: readonly ChatRecord[]): Promise<number> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const db = await Db.open(storage, { early: { pause: () => held } });
  const trusted = db.chats.trustedRows;
  const top = (chats: readonly ChatRecord[]) => chats.slice(0, trusted).map((c) => [c.no, c.lastActivity, c.title]);
  expect(top(db.chats.all())).toEqual(top(whole));
  if (db.loading) {
    expect(db.chats.complete).toBe(false);
    expect(() => db.saveChat(db.chats.all()[0])).toThrow(/before every chat was loaded/);
    expect(() => db.chats.update(db.chats.all()[0], () => undefined)).toThrow(/before every chat was loaded/);
    release();
    await db.loading;
  }
  expect(db.loading).toBeUndefined();
  expect(db.chats.complete).toBe(true);
  expect(byNo(db.chats.all())).toEqual(byNo(whole));
  expect(db.chats.all().map((c) => c.no)).toEqual(whole.map((c) => c.no));
  return trusted;
}

describe("chat snapshot", () => {
  it.each([
    ["in one commit", undefined],
    ["in steps over many commits", STEPPED],
  ] as [string, SnapshotLayout | undefined][])(
    "gives a restart exactly the committed chats, through changes, removals and re-snapshots written %s",
    async (_, layout) => {
      const storage = createStorage();
      const db = await writer(storage, layout);
      let random = 7;
      const next = () => (random = (random * 48271) % 2147483647) / 2147483647;
      const chats: ChatRecord[] = [];
      let early = 0;
      // Enough distinct changes to pass the limit twice, so snapshots are replaced while chats keep changing.
      for (let round = 0; round < 4 * DIRTY_LIMIT; round++) {
        const roll = next();
        if (roll < 0.5 || chats.length < 10) chats.push(addChat(db, round));
        else if (roll < 0.9) {
          const chat = chats[Math.floor(next() * chats.length)];
          db.chats.update(chat, (c) => (c.lastActivity = 10_000 + round));
          chat.title = `Renamed ${round}`;
          db.saveChat(chat);
        } else {
          const [chat] = chats.splice(Math.floor(next() * chats.length), 1);
          await db.dropChat(chat);
        }
        if (round % 13 === 0) {
          await db.commit();
          await nextTurn();
        }
        if (round % 97 === 0) {
          await db.commit();
          const restarted = await Db.open(storage);
          expect(byNo(restarted.chats.all())).toEqual(byNo(await storedChats(storage)));
          expect(restarted.chats.all().map((c) => c.no)).toEqual(db.chats.all().map((c) => c.no));
          early += await expectEarlyStart(storage, restarted.chats.all());
        }
      }
      await finishBuild(db, storage);
      const restarted = await Db.open(storage);
      expect(byNo(restarted.chats.all())).toEqual(byNo(db.chats.all()));
      // Only the live snapshot's parts are kept.
      const head = await storedHead(storage);
      expect(head.gen).toBeGreaterThanOrEqual(2);
      if (layout) expect(head.parts).toBeGreaterThan(20 * layout.partsPerCommit);
      expect(await partKeys(storage)).toEqual(namedParts(head));
      // The restarts above began early from several snapshots, with chats changed since each.
      expect(early).toBeGreaterThan(layout ? 30 : 5);
    },
  );

  it("begins early with the top of the list from the first part, reads the rest after, and falls back if a later part is gone", async () => {
    const storage = createStorage();
    const db = await writer(storage, STEPPED);
    const chats = Array.from({ length: 1000 }, (_, n) => addChat(db, n));
    await finishBuild(db, storage);
    // Changed since the snapshot: one of the oldest becomes the newest, the 39 newest but one become the oldest
    // (the first part, about 25 chats, keeps one unchanged chat: the newest), and one goes.
    db.chats.update(chats[3], (c) => (c.lastActivity = 50_000));
    db.saveChat(chats[3]);
    for (let n = 960; n < 998; n++) {
      db.chats.update(chats[n], (c) => (c.lastActivity = n - 959));
      db.saveChat(chats[n]);
    }
    await db.dropChat(chats[998]);
    await db.commit();
    const whole = (await Db.open(storage)).chats.all();
    // Trusted: the chat made newest, and the first part's one unchanged chat; every other chat waits for the rest.
    expect(await expectEarlyStart(storage, whole)).toBe(2);
    const head = await storedHead(storage);
    await storage.removeItem(keys.chatSnapshotPart(head.gen, head.parts - 1));
    expect(await expectEarlyStart(storage, whole)).toBe(2);
  });

  it("writes a new snapshot a few parts per commit, going on by itself, and keeps the old one until the last part", async () => {
    const { storage, db, chats, first } = await snapshotDue();
    await db.commit();
    // One commit began the new snapshot: it wrote at most its share of parts, and the old head still holds.
    expect(await storedHead(storage)).toMatchObject({ gen: first.gen, parts: first.parts });
    const written = (await partKeys(storage)).filter((k) => k.startsWith(`chatsnap:${first.gen + 1}:`));
    expect(written.length).toBeGreaterThan(0);
    expect(written.length).toBeLessThanOrEqual(STEPPED.partsPerCommit);
    // A chat changed while the snapshot is being written is read from its record at start-up.
    chats[0].title = "Changed during the build";
    db.saveChat(chats[0]);
    await db.commit();
    // A commit in the same turn of the event loop takes no step: requests run between steps.
    expect((await partKeys(storage)).filter((k) => k.startsWith(`chatsnap:${first.gen + 1}:`))).toEqual(written);
    // The rest is written by commits the writer starts itself.
    await expect.poll(async () => (await storedHead(storage)).gen, { timeout: 10_000 }).toBe(first.gen + 1);
    const head = await storedHead(storage);
    expect(head.dirty).toContain(chats[0].no);
    expect(await partKeys(storage)).toEqual(namedParts(head));
    const restarted = await Db.open(storage);
    expect(byNo(restarted.chats.all())).toEqual(byNo(await storedChats(storage)));
    expect(restarted.chats.get(chats[0].no)!.title).toBe("Changed during the build");
  });

  it("starts from the committed snapshot after a crash in the middle of writing a new one, and removes the parts it left", async () => {
    const { storage, db, first } = await snapshotDue();
    const unnamed = async () => (await partKeys(storage)).length - first.parts;
    while ((await unnamed()) < 3 * STEPPED.partsPerCommit) {
      await db.commit();
      await nextTurn();
    }
    // The writer "dies" here (it is never used again): parts of the next generation are stored, no head names them.
    db.keepsChatSnapshot = false;
    expect(await storedHead(storage)).toMatchObject({ gen: first.gen, parts: first.parts });
    const restarted = await writer(storage, STEPPED);
    expect(byNo(restarted.chats.all())).toEqual(byNo(await storedChats(storage)));
    // Most chats go, so the next snapshot has fewer parts than the one cut short: it cannot simply overwrite them.
    for (const chat of restarted.chats.all().slice(50)) await restarted.dropChat(chat);
    await finishBuild(restarted, storage);
    const head = await storedHead(storage);
    expect(head.gen).toBe(first.gen + 1);
    expect(await partKeys(storage)).toEqual(namedParts(head));
    expect(byNo((await Db.open(storage)).chats.all())).toEqual(byNo(await storedChats(storage)));
  });

  it("leaves out what was never committed, as after a kill -9", async () => {
    const storage = createStorage();
    const db = await writer(storage);
    const kept = addChat(db, 1);
    await db.commit();
    addChat(db, 2);
    db.chats.update(kept, (c) => (c.lastActivity = 99_999));
    db.saveChat(kept);
    const restarted = await Db.open(storage);
    expect(restarted.chats.all().map((c) => [c.no, c.lastActivity])).toEqual([[kept.no, 1_001]]);
  });

  it("stores each distinct participant once and shares it between chats after a restart", async () => {
    const storage = createStorage();
    const db = await writer(storage);
    for (let n = 0; n < 120; n++) addChat(db, n);
    db.writeChatSnapshot();
    await db.commit();
    const head = (await storage.getItem<{ gen: number; parts: number }>(keys.chatSnapshot))!;
    const parts = await storage.getItems<{ u: User[] }>(
      Array.from({ length: head.parts }, (_, i) => keys.chatSnapshotPart(head.gen, i)),
    );
    expect(parts.flatMap(({ value }) => (value as { u: User[] }).u).length).toBe(51);
    const restarted = await Db.open(storage);
    const selves = new Set(restarted.chats.all().map((c) => c.participants.find((p) => p.isSelf)));
    expect(selves.size).toBe(1);
    expect(Object.isFrozen([...selves][0])).toBe(true);
  });

  it("writes its parts as ASCII JSON, and emoji, accents and other scripts come back as they were", async () => {
    const storage = createStorage();
    const db = await writer(storage);
    const chat = addChat(db, 0);
    chat.title = "Café 🙏 Zürich 東京";
    chat.participants[1] = { id: "@zoe:x", fullName: "Zoë Ōkubo 😀" };
    db.saveChat(chat);
    db.writeChatSnapshot();
    await db.commit();
    const head = await storedHead(storage);
    const text = String(await storage.getItemRaw(keys.chatSnapshotPart(head.gen, 0)));
    expect(text).toContain("Caf\\u00e9 \\ud83d\\ude4f");
    expect(/[\u007f-\uffff]/.test(text)).toBe(false);
    const restarted = await Db.open(storage);
    expect(restarted.chats.get(chat.no)!.title).toBe("Café 🙏 Zürich 東京");
    expect(restarted.chats.get(chat.no)!.participants[1].fullName).toBe("Zoë Ōkubo 😀");
  });

  it("turns a store without a snapshot (read record by record) into one with a snapshot at the writer's first commit", async () => {
    const storage = createStorage();
    const plain = await Db.open(storage);
    for (let n = 0; n < 30; n++) addChat(plain, n);
    await plain.commit();
    expect(await storage.getItem(keys.chatSnapshot)).toBeNull();
    const db = await writer(storage);
    await db.commit();
    expect(await storage.getItem(keys.chatSnapshot)).toMatchObject({ gen: 0, dirty: [] });
    expect(byNo((await Db.open(storage)).chats.all())).toEqual(byNo(await storedChats(storage)));
  });

  it("falls back to the chat records when a part is gone (a newer snapshot replaced it under a reader)", async () => {
    const storage = createStorage();
    const db = await writer(storage);
    for (let n = 0; n < 3000; n++) addChat(db, n);
    db.writeChatSnapshot();
    await db.commit();
    const head = (await storage.getItem<{ gen: number; parts: number }>(keys.chatSnapshot))!;
    expect(head.parts).toBeGreaterThan(1);
    await storage.removeItem(keys.chatSnapshotPart(head.gen, 0));
    expect(byNo((await Db.open(storage)).chats.all())).toEqual(byNo(await storedChats(storage)));
    // The writer notices too, and its next commit writes a whole snapshot again.
    const restarted = await writer(storage);
    await restarted.commit();
    const now = (await storage.getItem<{ gen: number; parts: number }>(keys.chatSnapshot))!;
    expect(now.gen).toBe(head.gen + 1);
    expect((await storage.getKeys("chatsnap:")).filter((k) => k !== keys.chatSnapshot).sort()).toEqual(
      Array.from({ length: now.parts }, (_, i) => keys.chatSnapshotPart(now.gen, i)).sort(),
    );
    expect(byNo((await Db.open(storage)).chats.all())).toEqual(byNo(await storedChats(storage)));
  });
});
