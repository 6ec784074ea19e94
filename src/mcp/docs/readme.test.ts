import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { docFileNames, docsModule, MODULE_PATH, readDocFiles } from "./generate-readme.ts";
import { DOCS } from "./readme.generated.ts";
import { docsSections } from "./search.ts";

describe("the documentation as search_docs reads it", () => {
  it("readme.generated.ts is current (else run: npx tsx src/mcp/docs/generate-readme.ts)", () => {
    expect(
      readFileSync(MODULE_PATH, "utf8") === docsModule(readDocFiles()),
      "README.md or docs/*.md changed: run npx tsx src/mcp/docs/generate-readme.ts",
    ).toBe(true);
  });

  it("holds the README first, then every docs/*.md by name", () => {
    const names = docFileNames();
    expect(names[0]).toBe("README.md");
    expect(names.slice(1).every((name) => /^docs\/[^/]+\.md$/.test(name))).toBe(true);
    expect(names.slice(1)).toEqual([...names.slice(1)].sort());
    expect(DOCS.map((d) => d.file)).toEqual(names);
  });

  it("names the file every section comes from", () => {
    const sections = docsSections(DOCS);
    for (const { file } of DOCS) expect(sections.some((s) => s.file === file)).toBe(true);
    expect(sections.every((s) => s.source === "readme" && DOCS.some((d) => d.file === s.file))).toBe(true);
  });
});
