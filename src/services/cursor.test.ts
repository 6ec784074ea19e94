import { describe, expect, it } from "vitest";
import { ApiError } from "../http/errors.ts";
import { decodeCursor, encodeCursor, fingerprint, seqOfSortKey, sortKeyOf } from "./cursor.ts";

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
    for (const garbage of ["", "!!!", "not a cursor", "YWJj", "e30", "bnVsbA", "%%%", "a".repeat(10_000)]) expect400(() => decodeCursor(garbage, "chats", "s", 2));
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

  it("refuse anything but digits with 400", () => {
    for (const bad of ["", "-1", "1.5", "abc", "1e3", "0x10", "1".repeat(16)]) expect400(() => seqOfSortKey(bad));
  });
});
