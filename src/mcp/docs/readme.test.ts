import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MODULE_PATH, README_PATH, readmeModule } from "./generate-readme.ts";
import { DocsIndex, readmeSections } from "./search.ts";

describe("the README as search_docs reads it", () => {
  it("readme.generated.ts is current (else run: npx tsx src/mcp/docs/generate-readme.ts)", () => {
    expect(readFileSync(MODULE_PATH, "utf8") === readmeModule(readFileSync(README_PATH, "utf8")), "README.md changed: run npx tsx src/mcp/docs/generate-readme.ts").toBe(true);
  });

  it("splits at headings, not at # lines inside code blocks, and ranks sections with more of the words first", () => {
    const sections = readmeSections("# Top\nintro\n## Install\n```sh\n# not a heading\nnpm ci\n```\n## Tokens\nA token is created with npm run token.\n### Read tokens\nread-only token scopes\n");
    expect(sections.map((s) => s.title)).toEqual(["Top", "Top › Install", "Top › Tokens", "Top › Tokens › Read tokens"]);
    expect(sections[1].text).toContain("# not a heading");
    const hits = new DocsIndex(sections).search("read token");
    expect(hits.map((h) => h.title)).toEqual(["Top › Tokens › Read tokens", "Top › Tokens"]);
    expect(hits[0].matched).toEqual(["read", "token"]);
    expect(new DocsIndex(sections).search("zebra")).toEqual([]);
  });
});
