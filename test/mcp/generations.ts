/**
 * Both protocol generations on one URL: a 2025-11-25 client (the SDK's v1 line, initialize handshake) and a
 * 2026-07-28 client (the v2 line, which probes with server/discover and then sends the `_meta` envelope on every
 * request) see the same tools, schemas, annotations, resources and answers from /v0/mcp in the same run.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import type { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, endpoint, READ_ONLY_TOOLS } from "./kit.ts";
import type { McpEnv } from "./suite.ts";

const MODERN = "2026-07-28";

async function connectModern(url: string, token: string): Promise<ClientV2> {
  const client = new ClientV2(
    { name: "inboxd-mcp-suite-v2", version: "1.0.0" },
    { versionNegotiation: { mode: "auto" } },
  );
  await client.connect(
    new TransportV2(endpoint(url, "streamable"), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

/** A raw 2026-07-28 request, as the specification spells it: the envelope in `_meta`, the method in a header. */
function modernRequest(url: string, token: string, method: string, params: Record<string, unknown> = {}) {
  return fetch(endpoint(url, "streamable"), {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      accept: "application/json, text/event-stream",
      "content-type": "application/json",
      "mcp-protocol-version": MODERN,
      "mcp-method": method,
      // tools/call names its tool in Mcp-Name too (resources/read and prompts/get name theirs).
      ...(typeof params.name === "string" ? { "mcp-name": params.name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": MODERN,
          "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
          "io.modelcontextprotocol/clientCapabilities": {},
        },
      },
    }),
  });
}

export function generationTests(base: McpEnv) {
  describe("both protocol generations on /v0/mcp", () => {
    let v1: ClientV1;
    let v2: ClientV2;
    beforeAll(async () => {
      v1 = await connect(base.url, base.rw, "streamable");
      v2 = await connectModern(base.url, base.rw);
    });
    afterAll(async () => {
      await v1?.close();
      await v2?.close();
    });

    it("negotiates 2025-11-25 with the v1 SDK and 2026-07-28 with the v2 SDK", () => {
      expect(v1.getServerVersion()?.name).toBe("inboxd");
      expect(v2.getNegotiatedProtocolVersion()).toBe(MODERN);
    });

    it("lists the same tools, with the same schemas and annotations, to both", async () => {
      const [old, modern] = [(await v1.listTools()).tools, (await v2.listTools()).tools];
      expect(modern.map((t) => t.name)).toEqual(old.map((t) => t.name));
      expect(modern.length).toBeGreaterThanOrEqual(24);
      for (const [i, tool] of modern.entries()) {
        expect(tool.inputSchema, tool.name).toEqual(old[i].inputSchema);
        expect(tool.outputSchema, tool.name).toEqual(old[i].outputSchema);
        expect(tool.annotations, tool.name).toEqual(old[i].annotations);
      }
    });

    it("answers a tool call and a resource read the same way to both", async () => {
      const args = { name: "search_messages", arguments: { query: "the", limit: 5 } };
      const [old, modern] = [await v1.callTool(args), await v2.callTool(args)];
      expect(modern.isError).toBeFalsy();
      expect(modern.structuredContent).toEqual(old.structuredContent);
      expect(modern.content).toEqual(old.content);
      const [r1, r2] = [(await v1.listResources()).resources, (await v2.listResources()).resources];
      expect(r2).toEqual(r1);
      const unread = r2.find((r) => r.uri === "inboxd://unread")!;
      expect((await v2.readResource({ uri: unread.uri })).contents).toEqual(
        (await v1.readResource({ uri: unread.uri })).contents,
      );
    });

    it("gives a read-only token the read-only tools on 2026-07-28 too", async () => {
      const ro = await connectModern(base.url, base.ro);
      try {
        expect((await ro.listTools()).tools.map((t) => t.name).sort()).toEqual([...READ_ONLY_TOOLS].sort());
        await expect(ro.callTool({ name: "send_message", arguments: { chatID: "x", text: "no" } })).rejects.toThrow(
          /not available/,
        );
      } finally {
        await ro.close();
      }
    });

    it("waits for a message on 2026-07-28 as a bounded call, answering when the wait ends", async () => {
      const result = await v2.callTool({ name: "wait_for_message", arguments: { timeoutSeconds: 1 } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ timedOut: true });
    });

    it("marks 2026-07-28 results with resultType and caching hints that hold, and 2025-11-25 ones with neither", async () => {
      const tools = await (await modernRequest(base.url, base.rw, "tools/list")).json();
      expect(tools.result).toMatchObject({ resultType: "complete", ttlMs: 3_600_000, cacheScope: "private" });
      // The resource list names the newest chats: a client must not reuse it.
      const resources = await (await modernRequest(base.url, base.rw, "resources/list")).json();
      expect(resources.result).toMatchObject({ resultType: "complete", ttlMs: 0, cacheScope: "private" });
      const call = await (
        await modernRequest(base.url, base.rw, "tools/call", { name: "get_accounts", arguments: {} })
      ).json();
      expect(call.result.resultType).toBe("complete");
      const legacy = await fetch(endpoint(base.url, "streamable"), {
        method: "POST",
        headers: {
          authorization: `Bearer ${base.rw}`,
          accept: "application/json, text/event-stream",
          "content-type": "application/json",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      const old = (await legacy.json()).result;
      expect(old.tools.length).toBe(tools.result.tools.length);
      expect(old).not.toHaveProperty("resultType");
      expect(old).not.toHaveProperty("ttlMs");
    });

    it("refuses a 2026-07-28 request whose Mcp-Method header does not match its body", async () => {
      const res = await fetch(endpoint(base.url, "streamable"), {
        method: "POST",
        headers: {
          authorization: `Bearer ${base.rw}`,
          accept: "application/json, text/event-stream",
          "content-type": "application/json",
          "mcp-protocol-version": MODERN,
          "mcp-method": "tools/call",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/list",
          params: {
            _meta: {
              "io.modelcontextprotocol/protocolVersion": MODERN,
              "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
              "io.modelcontextprotocol/clientCapabilities": {},
            },
          },
        }),
      });
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe(-32020);
    });
  });
}
