import { describe, expect, it } from "vitest";
import { encodeKeyPart, PREVIEW_CHARS, previewOf, type MessageRecord } from "./records.ts";

const message = (text: string): MessageRecord =>
  ({ seq: 1, senderID: "u", ts: 0, type: "TEXT", text }) as MessageRecord;

describe("previewOf", () => {
  it("keeps short texts as they are and cuts long ones to PREVIEW_CHARS with an ellipsis", () => {
    const short = message("hello");
    expect(previewOf(short)).toBe(short);
    const long = previewOf(message("x".repeat(70_000)))!;
    expect(long.text).toBe(`${"x".repeat(PREVIEW_CHARS)}…`);
    expect(previewOf(undefined)).toBeUndefined();
  });

  it("never splits a surrogate pair", () => {
    const text = `${"x".repeat(PREVIEW_CHARS - 1)}😀tail`;
    const cut = previewOf(message(text))!.text!;
    expect(cut.isWellFormed()).toBe(true);
    expect(cut).toBe(`${"x".repeat(PREVIEW_CHARS - 1)}…`);
  });
});

describe("encodeKeyPart", () => {
  it("leaves IDs of safe characters alone and makes everything else one safe key segment", () => {
    expect(encodeKeyPart("wh_0123abcd")).toBe("wh_0123abcd");
    for (const hostile of ["..", ".", "", "a:b", "a/b", "a\\b", "a?b", "../x", "~7e~"]) {
      const encoded = encodeKeyPart(hostile);
      expect(encoded, hostile).toMatch(/^[A-Za-z0-9._~-]+$/);
      expect([".", ".."], hostile).not.toContain(encoded);
    }
    expect(encodeKeyPart("..")).not.toBe(encodeKeyPart("."));
    expect(encodeKeyPart("~")).not.toBe(encodeKeyPart("."));
  });
});
