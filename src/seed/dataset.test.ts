import { createStorage } from "unstorage";
import { describe, expect, it } from "vitest";
import { termsOf } from "../services/message-records.ts";
import { Db } from "../store/db.ts";
import { keys, type MessageRecord } from "../store/records.ts";
import { comparePosting, type Posting } from "../store/search-index.ts";
import { seedDataset, type SeedOptions } from "./dataset.ts";

const NOW = Date.parse("2025-06-01T12:00:00Z");
const TWO_YEARS = 730 * 86_400_000;

async function seeded(options: SeedOptions) {
  const db = await Db.open(createStorage());
  await seedDataset(db, options);
  const messages: MessageRecord[] = [];
  for (const chat of db.chats.all())
    for (let seq = 0; seq < chat.nextSeq; seq++) messages.push((await db.message(chat.no, seq))!);
  return { db, messages };
}

/** What "the same data" means: chat IDs, titles, accounts and each chat's first message. */
async function fingerprintOf(db: Db) {
  const chats = [];
  for (const chat of [...db.chats.all()].sort((a, b) => a.no - b.no))
    chats.push({
      id: chat.id,
      title: chat.title,
      type: chat.type,
      n: chat.nextSeq,
      first: await db.message(chat.no, 0),
    });
  return { accounts: db.accounts.map((a) => a.accountID), chats };
}

describe("seedDataset", () => {
  const options: SeedOptions = { chats: 60, messages: 3000, accounts: 2, seed: 42, now: NOW };

  it("gives identical data for identical options, and different data for another seed", async () => {
    const a = await seeded(options);
    const b = await seeded(options);
    expect(await fingerprintOf(b.db)).toEqual(await fingerprintOf(a.db));
    expect(b.messages).toEqual(a.messages);
    const c = await seeded({ ...options, seed: 43 });
    expect((await fingerprintOf(c.db)).chats.map((x) => x.id)).not.toEqual(
      (await fingerprintOf(a.db)).chats.map((x) => x.id),
    );
  });

  it("has the requested numbers of accounts, chats and messages", async () => {
    const { db, messages } = await seeded(options);
    expect(db.accounts).toHaveLength(2);
    expect(db.chats.size).toBe(60);
    expect(messages).toHaveLength(3000);
    expect(db.chats.all().every((c) => c.nextSeq >= 1)).toBe(true);
  });

  it("has the requested number of messages even when there are fewer messages than chats", async () => {
    const { db, messages } = await seeded({ chats: 10, messages: 5, seed: 1, now: NOW });
    expect(db.chats.size).toBe(10);
    expect(messages).toHaveLength(5);
  });

  it("stamps every message within the two years before now, in order within each chat", async () => {
    const { db, messages } = await seeded(options);
    for (const m of messages) {
      expect(m.ts).toBeGreaterThanOrEqual(NOW - TWO_YEARS);
      expect(m.ts).toBeLessThanOrEqual(NOW);
    }
    for (const chat of db.chats.all()) {
      const last = await db.message(chat.no, chat.nextSeq - 1);
      expect(chat.lastActivity).toBe(last!.ts);
      expect(chat.preview?.seq).toBe(last!.seq);
      for (let seq = 1; seq < chat.nextSeq; seq++)
        expect((await db.message(chat.no, seq))!.ts).toBeGreaterThanOrEqual((await db.message(chat.no, seq - 1))!.ts);
    }
  });

  it("has some groups, replies, reactions, attachments and links", async () => {
    const { db, messages } = await seeded(options);
    const chats = db.chats.all();
    expect(chats.filter((c) => c.type === "group").length).toBeGreaterThan(0);
    expect(chats.filter((c) => c.type === "single").length).toBeGreaterThan(0);
    expect(messages.filter((m) => m.linkedMessageID).length).toBeGreaterThan(0);
    expect(messages.filter((m) => m.reactions?.length).length).toBeGreaterThan(0);
    expect(messages.filter((m) => m.attachments?.length).length).toBeGreaterThan(0);
    expect(messages.filter((m) => /https?:\/\//.test(m.text ?? "")).length).toBeGreaterThan(0);
    expect(messages.filter((m) => m.isSender).length).toBeGreaterThan(0);
    expect(messages.filter((m) => !m.isSender).length).toBeGreaterThan(0);
  });

  it("links replies to earlier messages of the same chat", async () => {
    const { db } = await seeded(options);
    for (const chat of db.chats.all())
      for (let seq = 0; seq < chat.nextSeq; seq++) {
        const m = (await db.message(chat.no, seq))!;
        if (!m.linkedMessageID) continue;
        const [chatNo, target] = m.linkedMessageID.split(".").map(Number);
        expect(chatNo).toBe(chat.no);
        expect(target).toBeLessThan(seq);
      }
  });

  it("indexes every message under each of its terms, in posting order", async () => {
    const { db } = await seeded(options);
    const expected = new Map<string, Posting[]>();
    for (const chat of db.chats.all())
      for (let seq = 0; seq < chat.nextSeq; seq++) {
        const m = (await db.message(chat.no, seq))!;
        for (const term of termsOf(m)) {
          if (!expected.has(term)) expected.set(term, []);
          expected.get(term)!.push([m.ts, chat.no, m.seq]);
        }
      }
    const written = (await db.storage.getKeys("ix:")).filter((key) => key.startsWith("ix:")).map((key) => key.slice(3));
    expect(written.sort()).toEqual([...expected.keys()].sort());
    // Some terms span several segments of 1,024 postings.
    expect(expected.get("~all")).toHaveLength(3000);
    for (const [term, postings] of expected) {
      postings.sort((a, b) => comparePosting(a, 0, b, 0));
      const found: number[] = [];
      for await (const batch of db.index.walk(term, "after", null)) found.push(...batch);
      expect(found, term).toEqual(postings.flat());
      expect((await db.index.meta(term))!.n, term).toBe(postings.length);
    }
  });

  it("survives a reopen of the same storage, and refuses to seed a store that holds data", async () => {
    const storage = createStorage();
    const db = await Db.open(storage);
    await seedDataset(db, options);
    const reopened = await Db.open(storage);
    expect(await fingerprintOf(reopened)).toEqual(await fingerprintOf(db));
    await expect(seedDataset(reopened, options)).rejects.toThrow(/empty/);
  });

  it("seeds an app's store (which keeps a chat snapshot) without listing every chat as changed, ending with a snapshot", async () => {
    const storage = createStorage();
    const db = await Db.open(storage);
    db.keepsChatSnapshot = true;
    await db.commit(); // the app's first commit: an empty snapshot
    let largestHead = 0;
    const onProgress = async () =>
      (largestHead = Math.max(largestHead, JSON.stringify(await storage.getItem(keys.chatSnapshot)).length));
    await seedDataset(db, { chats: 300, messages: 60_000, seed: 4, now: NOW, onProgress: () => void onProgress() });
    expect(largestHead).toBeLessThan(100);
    const head = (await storage.getItem<{ dirty: number[]; parts: number }>(keys.chatSnapshot))!;
    expect(head.dirty).toEqual([]);
    const restarted = await Db.open(storage);
    expect(restarted.chats.all().map((c) => [c.no, c.lastActivity, c.preview?.seq])).toEqual(
      db.chats.all().map((c) => [c.no, c.lastActivity, c.preview?.seq]),
    );
  });
});
