/**
 * Writes src/mcp/docs/readme.generated.ts from README.md and every docs/*.md. search_docs reads the documentation from
 * that module because the Worker has no file system; readme.test.ts fails when the two differ. Run after editing
 * README.md or a file in docs/ (`npm run mcp:readme` runs it too):
 *
 *   npx tsx src/mcp/docs/generate-readme.ts
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { DocFile } from "./search.ts";

export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const MODULE_PATH = fileURLToPath(new URL("./readme.generated.ts", import.meta.url));

/** The files search_docs serves, as paths from the repository's root: the README first, then docs/ by name. */
export function docFileNames(root = ROOT): string[] {
  const manual = readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", ...manual];
}

/** README.md and every docs/*.md as they are on disk. */
export function readDocFiles(root = ROOT): DocFile[] {
  return docFileNames(root).map((file) => ({ file, markdown: readFileSync(join(root, file), "utf8") }));
}

/** The module's whole text for the given files. */
export function docsModule(files: DocFile[]): string {
  return [
    "// Generated from README.md and docs/*.md by src/mcp/docs/generate-readme.ts; do not edit (readme.test.ts checks it",
    "// is current).",
    'import type { DocFile } from "./search.ts";',
    "",
    "export const DOCS: readonly DocFile[] = [",
    ...files.map(({ file, markdown }) => `  { file: ${JSON.stringify(file)}, markdown: ${JSON.stringify(markdown)} },`),
    "];",
    "",
  ].join("\n");
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = readDocFiles();
  writeFileSync(MODULE_PATH, docsModule(files));
  console.log(`wrote ${MODULE_PATH} from ${files.map((f) => f.file).join(", ")}`);
}
