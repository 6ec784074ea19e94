import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../app.ts";
import { DocsIndex } from "./docs/search.ts";
import { parseToolSelection, type ToolSelection } from "./options.ts";
import { createMcpServer } from "./server.ts";
import { TOOL_NAMES } from "./tools/index.ts";

describe("parseToolSelection (--mcp-tools, INBOXD_MCP_TOOLS)", () => {
  it("reads all, read-only and comma-separated names", () => {
    expect(parseToolSelection(undefined)).toBe("all");
    expect(parseToolSelection(" all ")).toBe("all");
    expect(parseToolSelection("read-only")).toBe("read-only");
    expect(parseToolSelection("search_chats, send_message")).toEqual(["search_chats", "send_message"]);
  });

  it("refuses an unknown name, naming the valid ones", () => {
    expect(() => parseToolSelection("search_chats,send_mesage")).toThrow(
      /unknown MCP tool\(s\): send_mesage .*send_message/,
    );
  });
});

/**
 * The server with a selection, reached by the SDK client over the SDK's in-memory transport; the scopes a bearer
 * token would carry are attached to each message as the HTTP transports attach them.
 */
describe("what a server with a tool selection offers", () => {
  let app: App;
  beforeAll(async () => {
    app = await createApp({ storage: createStorage() });
  });
  afterAll(() => app.close());

  async function client(tools: ToolSelection, scopes: string[]) {
    const server = createMcpServer({
      app: app.context,
      events: app.events,
      options: { tools },
      docs: () => new DocsIndex([]),
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const send = clientSide.send.bind(clientSide);
    clientSide.send = (message, options) =>
      send(message, { ...options, authInfo: { token: "", clientId: "test", scopes } });
    await server.connect(serverSide);
    const c = new Client({ name: "selection-test", version: "1.0.0" });
    await c.connect(clientSide);
    return c;
  }
  const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name);

  it("read-only: only read-only tools, even for a read+write token; a write tool is refused", async () => {
    const c = await client("read-only", ["read", "write"]);
    const listed = await names(c);
    expect(listed).toContain("search_messages");
    expect(listed).not.toContain("send_message");
    expect(listed.length).toBeLessThan(TOOL_NAMES.length);
    await expect(c.callTool({ name: "archive_chat", arguments: { chatID: "x" } })).rejects.toThrow(
      /read-only tools only/,
    );
  });

  it("an allowlist: just those tools, and a read token still gets only the read-only ones among them", async () => {
    expect(await names(await client(["search_chats", "send_message"], ["read", "write"]))).toEqual([
      "search_chats",
      "send_message",
    ]);
    const reader = await client(["search_chats", "send_message"], ["read"]);
    expect(await names(reader)).toEqual(["search_chats"]);
    await expect(reader.callTool({ name: "send_message", arguments: { chatID: "x", text: "hi" } })).rejects.toThrow(
      /lacks the write scope/,
    );
    await expect(reader.callTool({ name: "get_chat", arguments: { chatID: "x" } })).rejects.toThrow(
      /not enabled on this server/,
    );
  });

  it("all: every tool for read+write", async () => {
    expect(await names(await client("all", ["read", "write"]))).toEqual(TOOL_NAMES);
  });
});
