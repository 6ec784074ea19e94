/**
 * The MCP Inspector's CLI mode, as an outside client would run it (`mcp-inspector --cli <url> …`), lists the tools
 * over both transports of the real daemon. Inspector 2.x refuses Node 20 (it needs ≥ 22.19); 1.0.3 declares
 * ≥ 22.7.5, but its CLI mode runs on Node 20 too (npm only warns about the engines field). It is a devDependency;
 * where it is not installed, the test is skipped and says so.
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNode, type NodeHarness } from "../harness/node.ts";
import { randomToken } from "../kit/common.ts";
import { APP_TOOLS, OWN_TOOLS, READ_ONLY_TOOLS } from "./kit.ts";

function inspectorCli(): string | undefined {
  try {
    return join(
      dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/inspector/package.json")),
      "cli/build/cli.js",
    );
  } catch {
    return undefined;
  }
}
const cli = inspectorCli();

describe.skipIf(!cli)(
  "the MCP Inspector 1.0.3 in CLI mode, against the daemon (devDependency @modelcontextprotocol/inspector; skipped when not installed)",
  () => {
    let server: NodeHarness;
    const rw = randomToken("rw");
    const ro = randomToken("ro");
    beforeAll(async () => {
      server = await startNode({
        seed: { chats: 6, messages: 60, accounts: 1, seed: 4 },
        tokens: [
          { token: rw, scopes: ["read", "write"] },
          { token: ro, scopes: ["read"] },
        ],
      });
    });
    afterAll(() => server?.stop());

    const inspect = async (path: string, transport: "http" | "sse", token: string, ...args: string[]) => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [
          cli!,
          "--cli",
          `${server.url}${path}`,
          "--transport",
          transport,
          "--header",
          `Authorization: Bearer ${token}`,
          ...args,
        ],
        { timeout: 30_000 },
      );
      // The JSON answer follows any notice the Inspector prints first.
      return JSON.parse(stdout.slice(stdout.indexOf("{")));
    };

    for (const [path, transport] of [
      ["/v0/mcp", "http"],
      ["/v0/sse", "sse"],
    ] as const)
      it(`lists the tools over ${path}, and only the read-only ones for a read token`, async () => {
        const all = await inspect(path, transport, rw, "--method", "tools/list");
        expect(all.tools.map((t: { name: string }) => t.name)).toEqual([...APP_TOOLS, ...OWN_TOOLS]);
        const read = await inspect(path, transport, ro, "--method", "tools/list");
        expect(read.tools.map((t: { name: string }) => t.name).sort()).toEqual([...READ_ONLY_TOOLS].sort());
        const called = await inspect(
          path,
          transport,
          rw,
          "--method",
          "tools/call",
          "--tool-name",
          "search_chats",
          "--tool-arg",
          "limit=2",
        );
        expect(called.structuredContent.items).toHaveLength(2);
      }, 60_000);
  },
);
