/**
 * search_docs: the sections of the README and of every docs/*.md, and the served OpenAPI document's operations,
 * searched by literal words (a query word matches the words it starts, case-insensitively). Sections with more of the
 * query's words come first, then those where the words stand in the title, then those that use them most.
 */

/** One Markdown file of the documentation: its path from the repository's root (`docs/mcp.md`) and its text. */
export interface DocFile {
  file: string;
  markdown: string;
}

export interface DocSection {
  /** `readme`: a section of the written documentation (README.md or docs/*.md, named by `file`). */
  source: "readme" | "openapi";
  /** The documentation file the section is in (`README.md`, `docs/mcp.md`); absent for OpenAPI operations. */
  file?: string;
  title: string;
  text: string;
  /** A deprecated operation (/v0): ranked after current ones that match as well. */
  deprecated?: boolean;
}

export interface DocHit extends DocSection {
  /** Query words found in the section. */
  matched: string[];
  score: number;
}

type Json = Record<string, unknown>;

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/**
 * A Markdown file's sections: one per heading (#–####), with the text up to the next heading; code blocks stay whole.
 * Titles are the trail of headings above (`MCP for AI agents › Tools`); text before the first heading is titled with
 * the file's name.
 */
export function readmeSections(markdown: string, file = "README.md"): DocSection[] {
  const sections: DocSection[] = [];
  const trail: string[] = [];
  let current: { title: string; lines: string[] } = { title: file === "README.md" ? "inboxd" : file, lines: [] };
  let inCode = false;
  const flush = () => {
    const text = current.lines.join("\n").trim();
    if (text) sections.push({ source: "readme", file, title: current.title, text });
  };
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) inCode = !inCode;
    const heading = inCode ? null : /^(#{1,4})\s+(.*)$/.exec(line);
    if (!heading) {
      current.lines.push(line);
      continue;
    }
    flush();
    trail.length = heading[1].length - 1;
    trail.push(heading[2].trim());
    current = { title: trail.filter(Boolean).join(" › "), lines: [] };
  }
  flush();
  return sections;
}

/** The sections of every documentation file, in the files' order. */
export function docsSections(files: readonly DocFile[]): DocSection[] {
  return files.flatMap(({ file, markdown }) => readmeSections(markdown, file));
}

/** OpenAPI sections: one per operation, with its parameters, body fields and answers in words. */
export function openApiSections(document: {
  paths?: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, unknown> };
}): DocSection[] {
  const schemas = (document.components?.schemas ?? {}) as Record<string, Json>;
  const resolve = (schema: Json | undefined): Json | undefined => {
    const ref = schema?.$ref;
    return typeof ref === "string" ? schemas[ref.split("/").pop()!] : schema;
  };
  const fields = (schema: Json | undefined) =>
    Object.entries((resolve(schema)?.properties ?? {}) as Record<string, Json>).map(
      ([name, s]) => `${name}${typeof s.description === "string" ? ` (${s.description})` : ""}`,
    );
  const sections: DocSection[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, raw] of Object.entries(item)) {
      const op = raw as Json;
      if (typeof op !== "object" || !op || !("responses" in op)) continue;
      const lines = [
        op.description as string | undefined,
        op.deprecated && !/^deprecated/i.test(String(op.description)) ? "Deprecated." : undefined,
        `operationId: ${String(op.operationId)}; tags: ${((op.tags as string[]) ?? []).join(", ")}`,
      ];
      const params = (op.parameters as Json[] | undefined) ?? [];
      if (params.length)
        lines.push(
          `Parameters: ${params.map((p) => `${p.name} (${p.in}${p.required ? ", required" : ""})${typeof p.description === "string" ? ` — ${p.description}` : ""}`).join("; ")}`,
        );
      const body = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
      for (const [type, media] of Object.entries(body ?? {})) {
        const names = fields(media.schema as Json | undefined);
        lines.push(`Request body (${type})${names.length ? `: ${names.join("; ")}` : ""}`);
      }
      const answers = Object.entries((op.responses as Record<string, Json>) ?? {}).map(([status, r]) =>
        `${status} ${typeof r.description === "string" ? r.description : ""}`.trim(),
      );
      lines.push(`Answers: ${answers.join("; ")}`);
      sections.push({
        source: "openapi",
        title: `${method.toUpperCase()} ${path} — ${String(op.summary ?? "")}`,
        text: lines.filter(Boolean).join("\n"),
        deprecated: op.deprecated === true,
      });
    }
  }
  return sections;
}

const LANGUAGE_MARKERS: Record<string, RegExp> = {
  http: /\bcurl\b|^(GET|POST|PUT|PATCH|DELETE) /m,
  typescript: /```(ts|typescript|js|javascript)\b/,
  javascript: /```(ts|typescript|js|javascript)\b/,
};

export class DocsIndex {
  private readonly indexed: { section: DocSection; title: string[]; text: string[] }[];

  constructor(readonly sections: DocSection[]) {
    this.indexed = sections.map((section) => ({ section, title: words(section.title), text: words(section.text) }));
  }

  search(query: string, options: { limit?: number; language?: string } = {}): DocHit[] {
    const wanted = [...new Set(words(query))];
    if (!wanted.length) return [];
    const marker = options.language ? LANGUAGE_MARKERS[options.language] : undefined;
    const hits: DocHit[] = [];
    for (const { section, title, text } of this.indexed) {
      const matched: string[] = [];
      let score = 0;
      for (const w of wanted) {
        const inTitle = title.filter((t) => t.startsWith(w)).length;
        const inText = text.filter((t) => t.startsWith(w)).length;
        if (!inTitle && !inText) continue;
        matched.push(w);
        score += Math.min(inTitle, 3) * 10 + Math.min(inText, 20);
      }
      if (!matched.length) continue;
      if (marker?.test(section.text)) score += 15;
      if (section.deprecated) score -= 500;
      hits.push({ ...section, matched, score: matched.length * 1000 + score });
    }
    return hits.sort((a, b) => b.score - a.score).slice(0, options.limit ?? 5);
  }
}
