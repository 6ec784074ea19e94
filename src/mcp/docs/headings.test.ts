/**
 * The written documentation (README.md and docs/*.md) as a whole: nothing the README held before the manual moved to
 * docs/ has been lost, and every relative link and #anchor leads somewhere.
 *
 * readme-headings.json froze the README's headings at the move. Each must still be a heading of README.md or of a
 * docs/*.md file, at any level, with the same text; a heading retitled on purpose is listed in its `renamed` map
 * (old text → new text).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";
import { docFileNames, ROOT } from "./generate-readme.ts";

interface Heading {
  level: number;
  text: string;
}

/** Splits a Markdown file into its lines outside fenced code blocks (``` or ~~~, indented too), with line numbers. */
function proseLines(markdown: string): { line: string; number: number }[] {
  const out: { line: string; number: number }[] = [];
  let inCode = false;
  markdown.split("\n").forEach((line, index) => {
    if (/^\s*(```|~~~)/.test(line)) inCode = !inCode;
    else if (!inCode) out.push({ line, number: index + 1 });
  });
  return out;
}

/** ATX headings (# … ######) outside code blocks. */
function headingsOf(markdown: string): Heading[] {
  return proseLines(markdown).flatMap(({ line }) => {
    const m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    return m ? [{ level: m[1].length, text: m[2] }] : [];
  });
}

/**
 * GitHub's anchor for a heading: the rendered text (link targets and code marks dropped) lowercased, every character
 * that is not a letter, mark, number, connector (`_`), space or hyphen removed, spaces turned into hyphens; a
 * repeated anchor gets -1, -2, … in the order the headings come.
 */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text } of headingsOf(markdown)) {
    const rendered = text.replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1");
    const base = rendered
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count ? `${base}-${count}` : base);
  }
  return anchors;
}

/** Inline links and images, `[text](target)` and `![alt](target)`, outside code blocks and code spans. */
function linksOf(markdown: string): { target: string; line: number }[] {
  return proseLines(markdown).flatMap(({ line, number }) => {
    const prose = line.replace(/(`+).*?\1/g, "");
    return [...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => ({
      target: m[1],
      line: number,
    }));
  });
}

const frozen = JSON.parse(readFileSync(new URL("./readme-headings.json", import.meta.url), "utf8")) as {
  headings: Heading[];
  renamed: Record<string, string>;
};
const files = docFileNames();
const text = new Map(files.map((file) => [file, readFileSync(join(ROOT, file), "utf8")]));

describe("the documentation", () => {
  it("keeps every heading the README had before the manual moved to docs/ (README.md or docs/*.md)", () => {
    const now = new Set([...text.values()].flatMap((markdown) => headingsOf(markdown).map((h) => h.text)));
    expect(frozen.headings.length).toBeGreaterThan(30);
    const lost = frozen.headings.map((h) => frozen.renamed[h.text] ?? h.text).filter((heading) => !now.has(heading));
    expect(lost, "headings of the README before the move that no longer exist anywhere").toEqual([]);
  });

  it("has only relative links to files that exist, and #anchors to headings that exist", () => {
    const broken: string[] = [];
    for (const [file, markdown] of text) {
      for (const { target, line } of linksOf(markdown)) {
        if (/^[a-z][a-z\d+.-]*:|^\/\//i.test(target)) continue; // https:, mailto:, …: not a file of the repository
        const [path, anchor] = target.split("#", 2) as [string, string | undefined];
        const resolved = path ? normalize(join(dirname(file), decodeURIComponent(path))) : file;
        const where = `${file}:${line}: ${target}`;
        if (resolved.startsWith("..") || !existsSync(join(ROOT, resolved))) {
          broken.push(`${where} (no file ${resolved})`);
          continue;
        }
        if (anchor === undefined || !resolved.endsWith(".md")) continue;
        const markdownThere = text.get(resolved) ?? readFileSync(join(ROOT, resolved), "utf8");
        if (!anchorsOf(markdownThere).has(anchor)) broken.push(`${where} (no heading #${anchor} in ${resolved})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("opens every docs/*.md with its title and a paragraph that links back to the README", () => {
    for (const file of files.filter((f) => f.startsWith("docs/"))) {
      const [title, , ...rest] = text.get(file)!.split("\n");
      expect(title, file).toMatch(/^# \S/);
      const intro = rest.slice(0, rest.indexOf("")).join(" ");
      expect(intro, `${file}: the paragraph under the title`).toContain("](../README.md)");
    }
  });

  it("finds anchors and links as GitHub renders them", () => {
    expect([...anchorsOf("# Scale: 100,000 chats / 10 million messages\n## Use the desktop app's accounts\n")]).toEqual(
      ["scale-100000-chats--10-million-messages", "use-the-desktop-apps-accounts"],
    );
    expect([...anchorsOf("## Limits\n```sh\n# Limits\n```\n### Limits\n## Run it: `wrangler dev`\n")]).toEqual([
      "limits",
      "limits-1",
      "run-it-wrangler-dev",
    ]);
    expect(linksOf('See [a](a.md#x), ![b](b.png "B") and `[c](c.md)`.\n```\n[d](d.md)\n```\n')).toEqual([
      { target: "a.md#x", line: 1 },
      { target: "b.png", line: 1 },
    ]);
  });
});
