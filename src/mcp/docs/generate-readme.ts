/**
 * Writes src/mcp/docs/readme.generated.ts from README.md. search_docs reads the README from that module because the
 * Worker has no file system; readme.test.ts fails when the two differ. Run after editing README.md:
 *
 *   npx tsx src/mcp/docs/generate-readme.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const README_PATH = fileURLToPath(new URL("../../../README.md", import.meta.url));
export const MODULE_PATH = fileURLToPath(new URL("./readme.generated.ts", import.meta.url));

/** The module's whole text for a given README. */
export function readmeModule(readme: string): string {
  return [
    "// Generated from README.md by src/mcp/docs/generate-readme.ts; do not edit (readme.test.ts checks it is current).",
    `export const README = ${JSON.stringify(readme)};`,
    "",
  ].join("\n");
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(MODULE_PATH, readmeModule(readFileSync(README_PATH, "utf8")));
  console.log(`wrote ${MODULE_PATH}`);
}
