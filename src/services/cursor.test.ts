import { createStorage } from "unstorage";
import { describe, expect, it } from "vitest";
import { waitFor } from "../../test/kit/common.ts";
import { createApp } from "../app.ts";
import { ApiError } from "../errors.ts";
import { seedDataset } from "../seed/dataset.ts";
import { Db } from "../store/db.ts";
import { decodeCursor, encodeCursor, fingerprint, isSortKey, seqOfSortKey, sortKeyOf } from "./cursor.ts";
import { deleteMessage, listMessages, sendMessage } from "./messages.ts";
import { parseMessageID } from "./present.ts";

function expect400(work: () => unknown) {
  let caught: unknown;
  try {
    work();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ApiError);
  expect((caught as ApiError).status).toBe(400);
  expect((caught as ApiError).code).toBe("INVALID_REQUEST");
}

describe("cursors", () => {
  it("round-trip numbers and strings, including non-ASCII text", () => {
    for (const position of [[1_700_000_000_000, 3, 42], ["zoë müller\u0000@zoe:x", 7], [0], ["", -1.5]]) {
      const cursor = encodeCursor("chats", "abc", position);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor, "chats", "abc", position.length)).toEqual(position);
    }
  });

  it("refuse garbage with 400", () => {
    for (const garbage of ["", "!!!", "not a cursor", "YWJj", "e30", "bnVsbA", "%%%", "a".repeat(10_000)])
      expect400(() => decodeCursor(garbage, "chats", "s", 2));
  });

  it("refuse a cursor from another endpoint, another query or with the wrong arity", () => {
    const cursor = encodeCursor("chats", fingerprint({ query: "a" }), [1, 2]);
    expect(decodeCursor(cursor, "chats", fingerprint({ query: "a" }), 2)).toEqual([1, 2]);
    expect400(() => decodeCursor(cursor, "chat-search", fingerprint({ query: "a" }), 2));
    expect400(() => decodeCursor(cursor, "chats", fingerprint({ query: "b" }), 2));
    expect400(() => decodeCursor(cursor, "chats", fingerprint({ query: "a" }), 3));
  });

  it("refuse positions that are not numbers or strings", () => {
    const forged = Buffer.from(JSON.stringify(["chats", "s", { x: 1 }, null])).toString("base64url");
    expect400(() => decodeCursor(forged, "chats", "s", 2));
  });

  it("fingerprints are stable and tell queries apart", () => {
    expect(fingerprint({ a: 1, b: ["x"] })).toBe(fingerprint({ a: 1, b: ["x"] }));
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }));
    expect(fingerprint({})).toMatch(/^[0-9a-z]+$/);
  });
});

describe("sortKeys", () => {
  it("round-trip and sort as strings the way seqs sort as numbers", () => {
    const seqs = [0, 1, 9, 10, 63, 64, 999, 1000, 123_456_789];
    const sortKeys = seqs.map(sortKeyOf);
    expect(sortKeys.map(seqOfSortKey)).toEqual(seqs);
    expect([...sortKeys].sort()).toEqual(sortKeys);
  });

  it("are never read as a message ID, nor a message ID or another endpoint's cursor as a sortKey", () => {
    // The message list takes all three as its cursor and tells them apart by shape alone.
    for (const seq of [0, 7, 31, 32, 1000, 999_999_999_999]) {
      expect(isSortKey(sortKeyOf(seq))).toBe(true);
      expect(parseMessageID(sortKeyOf(seq))).toBeUndefined();
      for (const chatNo of [0, 1, 12, 999_999_999]) {
        const id = `${chatNo}.${seq}`; // present.ts messageID()
        expect(parseMessageID(id)).toEqual({ chatNo, seq });
        expect(isSortKey(id)).toBe(false);
      }
    }
    for (const position of [[0], [1, 2, 3], ["x", 12], [1_700_000_000_000, 3, 42]]) {
      const cursor = encodeCursor("chats", fingerprint({}), position);
      expect(isSortKey(cursor)).toBe(false);
      expect(parseMessageID(cursor)).toBeUndefined();
    }
  });

  it("refuse anything but digits with 400", () => {
    for (const bad of ["", "-1", "1.5", "abc", "1e3", "0x10", "1".repeat(16)]) expect400(() => seqOfSortKey(bad));
  });
});

describe("message-list cursors", () => {
  // The API and SDK cases run in the scenario suite (test/scenario/message-cursors.ts); a network's own message ID
  // is never on the wire, so its case is here.
  it("take a message's network ID like its API ID, and refuse a deleted message by either", async () => {
    const storage = createStorage();
    await seedDataset(await Db.open(storage), { chats: 2, messages: 40, accounts: 1, seed: 5 });
    const app = await createApp({ storage, assets: { storage: createStorage() } });
    try {
      const ctx = app.context;
      const chat = ctx.db.chats.all()[0];
      const { pendingMessageID } = await sendMessage(ctx, chat.id, { text: "confirmed by the network" });
      await sendMessage(ctx, chat.id, { text: "newer" });
      const { seq } = parseMessageID(pendingMessageID)!;
      const networkID = await waitFor("the network's ID", async () => (await ctx.db.message(chat.no, seq))?.networkID);
      expect(networkID).not.toBe(pendingMessageID);
      for (const direction of ["before", "after"] as const) {
        const byNetworkID = await listMessages(ctx, chat.id, networkID, direction);
        expect(byNetworkID).toEqual(await listMessages(ctx, chat.id, pendingMessageID, direction));
        expect(byNetworkID.items.length).toBeGreaterThan(0);
      }
      await deleteMessage(ctx, chat.id, pendingMessageID);
      for (const cursor of [networkID, pendingMessageID])
        await expect(listMessages(ctx, chat.id, cursor, "before")).rejects.toMatchObject({
          status: 400,
          details: { issues: [{ code: "message_deleted" }] },
        });
    } finally {
      await app.close();
    }
  });
});
