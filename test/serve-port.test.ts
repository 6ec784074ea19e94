import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { databasePath } from "../adapters/node/data-dir.ts";
import { killAll, ROOT, startServing } from "./harness/process.ts";

// `inboxd serve` on a port another program holds, as a user meets it: the daemon listens before it writes anything,
// so a fresh data directory gets no token (and no database) from a start that could not listen, and the error says
// which port is taken and how to pick another.
const dirs: string[] = [];
afterAll(() => {
  killAll();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const BIN = join(ROOT, "adapters/node/bin.js");

function serve(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, "serve", ...args], {
    cwd: ROOT,
    env: { ...process.env, INBOXD_DATA_DIR: "", INBOXD_PORT: "" },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const killer = setTimeout(() => child.kill("SIGKILL"), 30_000); // it listened after all: the test fails below
  return once(child, "exit").then(([code]) => {
    clearTimeout(killer);
    return { code: code as number | null, stdout, stderr };
  });
}

describe("serve on a port in use", () => {
  it("exits non-zero naming the port and --port, before it creates a token, a database or the data directory itself", async () => {
    const blocker = net.createServer().listen(0, "127.0.0.1");
    await once(blocker, "listening");
    const port = (blocker.address() as AddressInfo).port;
    const parent = mkdtempSync(join(tmpdir(), "inboxd-port-"));
    dirs.push(parent);
    const dir = join(parent, "fresh");
    try {
      const { code, stdout, stderr } = await serve(["--port", String(port), "--data-dir", dir]);
      expect(code, stdout + stderr).not.toBe(0);
      expect(stderr).toMatch(new RegExp(`^inboxd: port ${port} is already in use on 127\\.0\\.0\\.1 .*--port`, "m"));
      expect(stderr).not.toMatch(/EADDRINUSE/);
      expect(stdout + stderr).not.toMatch(/Created an access token|inbx_/);
      expect(existsSync(databasePath(dir))).toBe(false);
      expect(existsSync(dir), "a refused start leaves no data directory (nor its lock) behind").toBe(false);
    } finally {
      blocker.close();
    }
    // With a free port, the same directory's first start creates (and prints) its first token.
    const server = await startServing(process.execPath, [BIN, "serve", "--port", "0", "--data-dir", dir], {
      env: { ...process.env, INBOXD_DATA_DIR: "", INBOXD_PORT: "" },
    });
    expect(server.output()).toMatch(/Created an access token \(read, write\)[^\n]*\ninbx_\S+/);
    expect(await server.stop()).toBe(0);
  });
});
