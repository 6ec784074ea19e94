import { describe, expect, it } from "vitest";
import { DocsIndex, docsSections, openApiSections, readmeSections } from "./search.ts";

describe("search_docs sections and ranking", () => {
  it("splits the README at headings, not at # lines inside code blocks, and ranks sections with more of the words first", () => {
    const sections = readmeSections(
      "# Top\nintro\n## Install\n```sh\n# not a heading\nnpm ci\n```\n## Tokens\nA token is created with npm run token.\n### Read tokens\nread-only token scopes\n",
    );
    expect(sections.map((s) => s.title)).toEqual([
      "Top",
      "Top › Install",
      "Top › Tokens",
      "Top › Tokens › Read tokens",
    ]);
    expect(sections[1].text).toContain("# not a heading");
    const hits = new DocsIndex(sections).search("read token");
    expect(hits.map((h) => h.title)).toEqual(["Top › Tokens › Read tokens", "Top › Tokens"]);
    expect(hits[0].matched).toEqual(["read", "token"]);
    expect(new DocsIndex(sections).search("zebra")).toEqual([]);
  });

  it("reads several files, each section naming its file and titled from the file's own headings", () => {
    const sections = docsSections([
      { file: "README.md", markdown: "# inboxd\nfront door\n## Quick start\nnpm ci\n" },
      { file: "docs/mcp.md", markdown: "# MCP for AI agents\nagents\n## Tools\nsearch_docs finds sections\n" },
      { file: "docs/notes.md", markdown: "text before any heading\n" },
    ]);
    expect(sections.map((s) => [s.file, s.title])).toEqual([
      ["README.md", "inboxd"],
      ["README.md", "inboxd › Quick start"],
      ["docs/mcp.md", "MCP for AI agents"],
      ["docs/mcp.md", "MCP for AI agents › Tools"],
      ["docs/notes.md", "docs/notes.md"],
    ]);
    const [hit] = new DocsIndex(sections).search("search sections");
    expect(hit).toMatchObject({ source: "readme", file: "docs/mcp.md", title: "MCP for AI agents › Tools" });
  });

  it("describes operations in words (parameters, body fields, answers) and ranks deprecated ones after current ones", () => {
    const op = (summary: string, deprecated = false) => ({
      summary,
      operationId: summary,
      tags: ["Messages"],
      ...(deprecated ? { deprecated: true } : {}),
      parameters: [{ name: "chatID", in: "path", required: true }],
      requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/Send" } } } },
      responses: { 200: { description: "Sent." } },
    });
    const document = {
      paths: {
        "/v0/send-message": { post: op("Send a message (v0)", true) },
        "/v1/chats/{chatID}/messages": { post: op("Send a message") },
      },
      components: { schemas: { Send: { properties: { text: { description: "Markdown." }, attachment: {} } } } },
    };
    const sections = openApiSections(document);
    expect(sections[1]).toMatchObject({
      title: "POST /v1/chats/{chatID}/messages — Send a message",
      source: "openapi",
    });
    expect(sections[1].text).toContain("Parameters: chatID (path, required)");
    expect(sections[1].text).toContain("Request body (application/json): text (Markdown.); attachment");
    expect(new DocsIndex(sections).search("send attachment").map((h) => h.title)).toEqual([
      "POST /v1/chats/{chatID}/messages — Send a message",
      "POST /v0/send-message — Send a message (v0)",
    ]);
  });
});
