import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MODULE_PATH, README_PATH, readmeModule } from "./generate-readme.ts";

describe("the README as search_docs reads it", () => {
  it("readme.generated.ts is current (else run: npx tsx src/mcp/docs/generate-readme.ts)", () => {
    expect(readFileSync(MODULE_PATH, "utf8") === readmeModule(readFileSync(README_PATH, "utf8")), "README.md changed: run npx tsx src/mcp/docs/generate-readme.ts").toBe(true);
  });
});
