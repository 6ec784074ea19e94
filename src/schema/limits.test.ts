import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { checkJsonStrings, LIMITS, utf8Length } from "./limits.ts";
import { ApiError } from "../errors.ts";

describe("LIMITS", () => {
  it("is the limits table of the docs (docs/limits-and-behaviour.md): every key once, with the same number", () => {
    // Wherever the table lives, README.md or a file of docs/, it is found, and it is found once.
    const root = new URL("../../", import.meta.url);
    const docs = [
      "README.md",
      ...readdirSync(new URL("docs/", root))
        .filter((name) => name.endsWith(".md"))
        .map((name) => `docs/${name}`),
    ]
      .map((file) => readFileSync(new URL(file, root), "utf8"))
      .join("\n");
    const rows = [...docs.matchAll(/^\|([^|\n]+)\|([^|\n]+)\| `(\w+)` \|$/gm)].map(([, , limit, key]) => ({
      key,
      value: Number(/[\d,]+/.exec(limit)![0].replace(/,/g, "")),
    }));
    expect(rows.map((r) => r.key).sort()).toEqual(Object.keys(LIMITS).sort());
    for (const { key, value } of rows) expect(value, key).toBe(LIMITS[key as keyof typeof LIMITS]);
  });

  it("counts UTF-8 bytes", () => {
    expect(utf8Length("abc")).toBe(3);
    expect(utf8Length("é")).toBe(2);
    expect(utf8Length("€")).toBe(3);
    expect(utf8Length("😀")).toBe(4);
    expect(utf8Length("a😀b")).toBe(Buffer.byteLength("a😀b"));
  });
});

describe("checkJsonStrings", () => {
  const refusal = (value: unknown, max = 10, allow: string[] = []) => {
    try {
      checkJsonStrings(value, max, allow);
      return undefined;
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      const e = error as ApiError;
      return { status: e.status, path: (e.details as { issues: { path: unknown[] }[] }).issues[0].path };
    }
  };

  it("refuses a lone surrogate anywhere, naming its path", () => {
    expect(refusal({ a: { b: ["ok", "x\ud800"] } })).toEqual({ status: 400, path: ["body", "a", "b", 1] });
    expect(refusal({ "k\udc00": 1 })).toEqual({ status: 400, path: ["body"] });
    expect(refusal({ fine: "😀 pairs are fine" }, 100)).toBeUndefined();
  });

  it("refuses strings over the limit unless the top-level field is allowed to be longer", () => {
    expect(refusal({ a: "x".repeat(11) })).toEqual({ status: 400, path: ["body", "a"] });
    expect(refusal({ a: "x".repeat(10) })).toBeUndefined();
    expect(refusal({ content: "x".repeat(11) }, 10, ["content"])).toBeUndefined();
    expect(refusal({ nested: { content: "x".repeat(11) } }, 10, ["content"])).toEqual({
      status: 400,
      path: ["body", "nested", "content"],
    });
  });

  it("refuses a body nested deeper than 32 levels (a 100,000-level one too, without overflowing the stack)", () => {
    const deep = (levels: number) => JSON.parse("[".repeat(levels) + "]".repeat(levels));
    expect(refusal({ a: deep(40) })?.status).toBe(400);
    expect(refusal({ a: deep(100_000) })?.status).toBe(400);
    expect(refusal({ a: deep(20) })).toBeUndefined();
  });

  it("refuses arrays with more items than LIMITS.arrayItems", () => {
    expect(refusal({ ids: Array.from({ length: LIMITS.arrayItems + 1 }, () => "a") })).toEqual({
      status: 400,
      path: ["body", "ids"],
    });
  });
});
