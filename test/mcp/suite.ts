/**
 * MCP, run against any runtime that serves the app (node.test.ts: the daemon; workerd.test.ts: the Worker in
 * Miniflare): the official SDK client over Streamable HTTP (/v0/mcp) and HTTP+SSE (/v0/sse), every tool called against
 * seeded data with its effect checked through REST, and what tokens may do.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomToken, type Start } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { connect, endpoint, listTools, READ_ONLY_TOOLS, TRANSPORTS, type TransportKind } from "./kit.ts";
import { listingTests } from "./listing.ts";
import { readingTests } from "./reading.ts";
import { writingTests } from "./writing.ts";
import { arrivalTests } from "./arrival.ts";
import { generationTests } from "./generations.ts";

/** What the scenario files share; filled in beforeAll. */
export interface McpEnv {
  url: string;
  rw: string;
  ro: string;
  api: Api;
  /** Which transport this describe block uses; tests that write pick their chats by it, so the two never meet. */
  kind: TransportKind;
  lane: number;
  client: Client;
}

export const SEED = { chats: 30, messages: 900, accounts: 2, seed: 13 };

export function mcpSuite(name: string, start: Start) {
  describe(`MCP on ${name}`, () => {
    let stop: (() => Promise<void>) | undefined;
    const base = { rw: randomToken("rw"), ro: randomToken("ro") } as McpEnv;

    beforeAll(async () => {
      const server = await start({
        seed: SEED,
        tokens: [
          { token: base.rw, scopes: ["read", "write"] },
          { token: base.ro, scopes: ["read"] },
        ],
      });
      stop = server.stop;
      base.url = server.url;
      base.api = new Api(server.url, base.rw);
    });
    afterAll(() => stop?.());

    describe("access", () => {
      it("answers 401 with WWW-Authenticate: Bearer without a token, on every MCP endpoint", async () => {
        for (const [method, path] of [
          ["POST", "/v0/mcp"],
          ["GET", "/v0/sse"],
          ["POST", "/v0/sse/messages?sessionId=x"],
        ]) {
          const res = await base.api.raw(method, path, {
            token: null,
            json: method === "POST" ? { jsonrpc: "2.0", id: 1, method: "ping" } : undefined,
          });
          expect(res.status, `${method} ${path}`).toBe(401);
          expect(res.headers.get("www-authenticate"), `${method} ${path}`).toMatch(/^Bearer /);
        }
        for (const kind of TRANSPORTS) await expect(connect(base.url, null, kind), kind).rejects.toThrow();
        await expect(connect(base.url, "not-a-token", "streamable")).rejects.toThrow();
      });

      it("answers GET and DELETE /v0/mcp with 405 (stateless: no stream, no session)", async () => {
        for (const method of ["GET", "DELETE"]) {
          const res = await base.api.raw(method, "/v0/mcp", { headers: { accept: "text/event-stream" } });
          expect(res.status, method).toBe(405);
          expect(res.headers.get("allow")).toBe("POST");
        }
      });

      it("answers quick calls on /v0/mcp as one JSON body, and waiting ones as an event stream", async () => {
        const post = (id: number, method: string, params?: object) =>
          fetch(endpoint(base.url, "streamable"), {
            method: "POST",
            headers: {
              authorization: `Bearer ${base.rw}`,
              accept: "application/json, text/event-stream",
              "content-type": "application/json",
            },
            body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
          });
        const quick = await post(1, "tools/call", { name: "get_accounts", arguments: {} });
        expect(quick.headers.get("content-type")).toMatch(/^application\/json/);
        expect((await quick.json()).result.structuredContent.items.length).toBe(2);
        const waiting = await post(2, "tools/call", { name: "wait_for_message", arguments: { timeoutSeconds: 1 } });
        expect(waiting.headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(await waiting.text()).toMatch(/^event: message\ndata: \{"result":\{.*"timedOut":true/m);
        const noAccept = await fetch(endpoint(base.url, "streamable"), {
          method: "POST",
          headers: { authorization: `Bearer ${base.rw}`, "content-type": "application/json" },
          body: "{}",
        });
        expect(noAccept.status).toBe(406);
        const notJson = await fetch(endpoint(base.url, "streamable"), {
          method: "POST",
          headers: {
            authorization: `Bearer ${base.rw}`,
            accept: "application/json, text/event-stream",
            "content-type": "application/json",
          },
          body: "{nope",
        });
        expect(notJson.status).toBe(400);
        expect((await notJson.json()).error.code).toBe(-32700);
      });

      it("keeps a /v0/sse session to the token that opened it", async () => {
        const res = await fetch(endpoint(base.url, "sse"), {
          headers: { authorization: `Bearer ${base.rw}`, accept: "text/event-stream" },
        });
        const reader = res.body!.getReader();
        let text = "";
        while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
        const posted = /^event: endpoint\ndata: (\S+)/m.exec(text)![1];
        expect(posted).toMatch(/^\/v0\/sse\/messages\?sessionId=[\w-]+$/);
        const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
        expect((await base.api.raw("POST", posted, { token: base.ro, json: ping })).status).toBe(404);
        const accepted = await base.api.raw("POST", posted, { json: ping });
        expect(accepted.status).toBe(202);
        // Deprecated by MCP 2026-07-28, with its twelve months: both answers say so and name /v0/mcp.
        for (const answer of [res, accepted]) {
          expect(answer.headers.get("deprecation")).toBe("@1785196800");
          expect(answer.headers.get("sunset")).toBe("Wed, 28 Jul 2027 00:00:00 GMT");
          expect(answer.headers.get("link")).toBe('</v0/mcp>; rel="successor-version"');
        }
        while (!text.includes('"id":1')) text += new TextDecoder().decode((await reader.read()).value);
        expect(text).toMatch(/event: message\ndata: \{"result":\{\},"jsonrpc":"2.0","id":1\}/);
        await reader.cancel();
        expect((await base.api.raw("POST", "/v0/sse/messages?sessionId=unknown", { json: ping })).status).toBe(404);
      });

      for (const kind of TRANSPORTS)
        it(`gives a read-only token the read-only tools only, and refuses a write tool (${kind})`, async () => {
          const client = await connect(base.url, base.ro, kind);
          try {
            const tools = await listTools(client);
            expect(tools.map((t) => t.name).sort()).toEqual([...READ_ONLY_TOOLS].sort());
            expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
            const [chat] = (await base.api.get("/v1/chats?limit=1")).items;
            const before = (await base.api.get(`/v1/chats/${encodeURIComponent(chat.id)}/messages`)).items[0].id;
            await expect(
              client.callTool({ name: "send_message", arguments: { chatID: chat.id, text: "from a read token" } }),
            ).rejects.toThrow(/read-only/);
            expect((await base.api.get(`/v1/chats/${encodeURIComponent(chat.id)}/messages`)).items[0].id).toBe(before);
            const read = await client.callTool({ name: "get_chat", arguments: { chatID: chat.id } });
            expect(read.isError).toBeFalsy();
          } finally {
            await client.close();
          }
        });
    });

    generationTests(base);

    TRANSPORTS.forEach((kind, lane) =>
      describe(`over ${kind === "streamable" ? "Streamable HTTP (/v0/mcp)" : "HTTP+SSE (/v0/sse)"}`, () => {
        const env = { kind, lane } as McpEnv;
        beforeAll(async () => {
          Object.assign(env, base, { kind, lane });
          env.client = await connect(base.url, base.rw, kind);
          await listTools(env.client);
        });
        afterAll(() => env.client?.close());
        listingTests(env);
        readingTests(env);
        writingTests(env);
        arrivalTests(env);
      }),
    );
  });
}
