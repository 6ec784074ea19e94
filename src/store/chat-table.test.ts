import { describe, expect, it } from "vitest";
import { ChatTable, compareChats } from "./chat-table.ts";
import type { ChatRecord } from "./records.ts";

function chat(no: number, lastActivity: number, accountID = "acc"): ChatRecord {
  return {
    no,
    id: `!chat${no}:x`,
    accountID,
    networkChatID: `net-${no}`,
    type: "single",
    title: `Chat ${no}`,
    participants: [],
    isArchived: false,
    isMuted: false,
    isPinned: false,
    isLowPriority: false,
    unreadCount: 0,
    lastReadSeq: -1,
    lastActivity,
    nextSeq: 0,
  };
}

const order = (table: ChatTable) => table.all().map((c) => c.no);

describe("ChatTable", () => {
  it("loads chats in list order: newest activity first, then higher number first", () => {
    const table = new ChatTable();
    table.load([chat(0, 100), chat(1, 300), chat(2, 200), chat(3, 300)]);
    expect(order(table)).toEqual([3, 1, 2, 0]);
    expect(table.size).toBe(4);
  });

  it("finds chats by ID, by localChatID (their number) and by network ID", () => {
    const table = new ChatTable();
    table.load([chat(0, 100), chat(12, 200, "other")]);
    expect(table.find("!chat12:x")?.no).toBe(12);
    expect(table.find("12")?.no).toBe(12);
    expect(table.find("12.0")).toBeUndefined();
    expect(table.find("nope")).toBeUndefined();
    expect(table.get(0)?.id).toBe("!chat0:x");
    expect(table.findNetwork("other", "net-12")?.no).toBe(12);
    expect(table.findNetwork("acc", "net-12")).toBeUndefined();
  });

  it("inserts at the right place and moves a chat when its activity changes", () => {
    const table = new ChatTable();
    table.load([chat(0, 100), chat(1, 200), chat(2, 300)]);
    table.insert(chat(3, 250));
    expect(order(table)).toEqual([2, 3, 1, 0]);
    table.update(table.get(0)!, (c) => (c.lastActivity = 400));
    expect(order(table)).toEqual([0, 2, 3, 1]);
    table.update(table.get(2)!, (c) => (c.lastActivity = 50));
    expect(order(table)).toEqual([0, 3, 1, 2]);
  });

  it("still moves a chat whose sort fields the caller changed before update()", () => {
    const table = new ChatTable();
    table.load([chat(0, 100), chat(1, 200), chat(2, 300)]);
    const c = table.get(0)!;
    c.lastActivity = 500;
    table.update(c, () => undefined);
    expect(order(table)).toEqual([0, 2, 1]);
    expect(table.size).toBe(3);
  });

  it("removes chats from every index", () => {
    const table = new ChatTable();
    table.load([chat(0, 100), chat(1, 200)]);
    table.remove(table.get(1)!);
    expect(order(table)).toEqual([0]);
    expect(table.find("!chat1:x")).toBeUndefined();
    expect(table.find("1")).toBeUndefined();
    expect(table.findNetwork("acc", "net-1")).toBeUndefined();
  });

  it("positionAfter gives the first index past a (lastActivity, no) position, for cursors", () => {
    const table = new ChatTable();
    table.load([chat(0, 100), chat(1, 200), chat(2, 200), chat(3, 300)]); // order: 3, 2, 1, 0
    expect(table.positionAfter(Infinity, 0)).toBe(0);
    expect(table.positionAfter(300, 3)).toBe(0);
    expect(table.positionAfter(200, 2)).toBe(1);
    expect(table.positionAfter(200, 1)).toBe(2);
    expect(table.positionAfter(150, 99)).toBe(3);
    expect(table.positionAfter(0, 0)).toBe(4);
  });

  it("keeps list order through many random updates", () => {
    const table = new ChatTable();
    const chats = Array.from({ length: 200 }, (_, i) => chat(i, (i * 7919) % 1000));
    table.load(chats);
    for (let step = 0; step < 1000; step++) {
      const c = chats[(step * 31) % chats.length];
      table.update(c, (x) => (x.lastActivity = (step * 104729) % 2000));
    }
    expect(table.all()).toEqual([...chats].sort(compareChats));
    expect(table.size).toBe(200);
  });
});
