/**
 * The server-wide tool selection as a person sets it: `inboxd serve --mcp-tools …` (and INBOXD_MCP_TOOLS) on a real
 * daemon, seen through the official SDK client.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { killAll, ROOT, startServing, type ServingProcess } from "../harness/process.ts";
import { connect, READ_ONLY_TOOLS } from "./kit.ts";

const cli = [process.execPath, "adapters/node/bin.js"];
const dirs: string[] = [];
const servers: ServingProcess[] = [];

afterAll(async () => {
  for (const server of servers) await server.stop();
  killAll(servers.map((s) => s.child.pid!));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function daemon(args: string[], env: NodeJS.ProcessEnv = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "inboxd-mcp-tools-"));
  dirs.push(dataDir);
  const created = await promisify(execFile)(cli[0], [...cli.slice(1), "token", "create", "--data-dir", dataDir], {
    cwd: ROOT,
  });
  const token = created.stdout.trim().split("\n").pop()!;
  const server = await startServing(cli[0], [...cli.slice(1), "serve", "--port", "0", "--data-dir", dataDir, ...args], {
    env: { ...process.env, ...env },
  });
  servers.push(server);
  return { url: server.url.replace(/\/$/, ""), token };
}

const toolNames = async (url: string, token: string) => {
  const client = await connect(url, token, "streamable");
  try {
    return (await client.listTools()).tools.map((t) => t.name).sort();
  } finally {
    await client.close();
  }
};

describe("inboxd serve --mcp-tools", () => {
  it("offers only the listed tools, to every token", async () => {
    const { url, token } = await daemon(["--mcp-tools", "search,list_unread"]);
    expect(await toolNames(url, token)).toEqual(["list_unread", "search"]);
  });

  it("offers only the read-only tools with read-only (here from INBOXD_MCP_TOOLS), even to a read+write token", async () => {
    const { url, token } = await daemon([], { INBOXD_MCP_TOOLS: "read-only" });
    expect(await toolNames(url, token)).toEqual([...READ_ONLY_TOOLS].sort());
  });

  it("refuses to start with an unknown tool name, naming it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "inboxd-mcp-tools-"));
    dirs.push(dataDir);
    const result = await promisify(execFile)(
      cli[0],
      [...cli.slice(1), "serve", "--port", "0", "--data-dir", dataDir, "--mcp-tools", "search,send_mesage"],
      { cwd: ROOT },
    ).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("send_mesage");
  });
});
