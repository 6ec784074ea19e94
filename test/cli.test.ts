import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

// The CLI as users run it: `node --import tsx adapters/node/cli.ts …` from the repository root (what
// `npm run -s inboxd -- …` runs), each command in its own process over a temp data directory.
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dirs: string[] = [];
const children = new Set<ChildProcess>();

afterAll(() => {
  for (const child of children) if (child.pid) process.kill(child.pid, "SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), "inboxd-cli-"));
  dirs.push(dir);
  return dir;
}

function run(command: string[], args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command[0], [...command.slice(1), ...args], { cwd: ROOT, env: { ...process.env, INBOXD_DATA_DIR: "", ...env } });
  let stdout = "", stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return once(child, "exit").then(([code]) => ({ code: code as number | null, stdout, stderr }));
}
const inboxd = (...args: string[]) => run([process.execPath, "--import", "tsx", "adapters/node/cli.ts"], args);

async function serve(dataDir: string) {
  const child = spawn(process.execPath, ["--import", "tsx", "adapters/node/cli.ts", "serve", "--data-dir", dataDir, "--port", "0"], { cwd: ROOT });
  children.add(child);
  child.once("exit", () => children.delete(child));
  let stdout = "";
  child.stderr.on("data", () => undefined);
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      const match = /inboxd listening on (\S+)/.exec(stdout);
      if (match) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`serve exited with ${code}: ${stdout}`)));
  });
  const get = async (path: string, token: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const stop = async () => {
    child.kill("SIGTERM");
    return (await once(child, "exit"))[0];
  };
  return { url, get, stop };
}

async function createToken(dataDir: string, ...args: string[]) {
  const result = await inboxd("token", "create", "--data-dir", dataDir, ...args);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.trimEnd().split("\n").pop()!;
}

describe("inboxd CLI", () => {
  it("prints usage for --help and for each command's --help", async () => {
    const main = await inboxd("--help");
    expect(main.code).toBe(0);
    expect(main.stdout).toMatch(/Usage: inboxd <command>/);
    for (const command of ["serve", "token", "seed"]) {
      const help = await inboxd(command, "--help");
      expect(help.code, command).toBe(0);
      expect(help.stdout).toContain(`Usage: inboxd ${command}`);
    }
  });

  it("exits 2 with a message on an unknown command, flag or value", async () => {
    const unknown = await inboxd("frobnicate");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command frobnicate");
    expect((await inboxd("serve", "--no-such-flag")).code).toBe(2);
    expect((await inboxd("seed", "--data-dir", tempDir(), "--chats", "0", "--messages", "1")).code).toBe(2);
    expect((await inboxd("token", "create", "--data-dir", tempDir(), "--scope", "admin")).code).toBe(2);
  });

  it("runs the documented forms: npm run -s inboxd -- and the package bin", async () => {
    expect((await run(["npm", "run", "-s", "inboxd", "--"], ["--help"])).code).toBe(0);
    const bin = await run([process.execPath, "adapters/node/bin.js"], ["seed", "--help"]);
    expect(bin.code).toBe(0);
    expect(bin.stdout).toContain("Usage: inboxd seed");
  });

  it("creates a token shown once, lists it without revealing it, and never stores it", async () => {
    const dir = tempDir();
    const result = await inboxd("token", "create", "--data-dir", dir, "--scope", "read", "--name", "x");
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    const token = lines[lines.length - 1];
    expect(token).toMatch(/^\S{32,}$/);
    const list = await inboxd("token", "list", "--data-dir", dir);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/\bx\b.*\bread\b/);
    expect(list.stdout + list.stderr).not.toContain(token);
    for (const file of ["inboxd.sqlite3", "inboxd.sqlite3-wal"].map((f) => join(dir, f)).filter(existsSync))
      expect(readFileSync(file).includes(token), file).toBe(false);
  });

  it("revokes a token so that a running daemon refuses it within a second", async () => {
    const dir = tempDir();
    const keep = await createToken(dir, "--name", "keep");
    const doomed = await createToken(dir, "--name", "doomed");
    const daemon = await serve(dir);
    expect((await daemon.get("/v1/accounts", doomed)).status).toBe(200);
    const revoked = await inboxd("token", "revoke", "--data-dir", dir, "doomed");
    expect(revoked.code, revoked.stderr).toBe(0);
    // The daemon remembers a verification for at most a second.
    const deadline = Date.now() + 1500;
    let status = (await daemon.get("/v1/accounts", doomed)).status;
    while (status !== 401 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await daemon.get("/v1/accounts", doomed)).status;
    }
    expect(status).toBe(401);
    expect((await daemon.get("/v1/accounts", keep)).status).toBe(200);
    expect((await inboxd("token", "revoke", "--data-dir", dir, "doomed")).code).toBe(1);
    expect(await daemon.stop()).toBe(0);
  }, 30_000);

  it("honours INBOXD_DATA_DIR", async () => {
    const dir = tempDir();
    const created = await run([process.execPath, "--import", "tsx", "adapters/node/cli.ts"], ["token", "create", "--name", "from-env"], { INBOXD_DATA_DIR: dir });
    expect(created.code, created.stderr).toBe(0);
    expect(existsSync(join(dir, "inboxd.sqlite3"))).toBe(true);
    expect((await inboxd("token", "list", "--data-dir", dir)).stdout).toContain("from-env");
  });

  it("refuses to seed, or to serve a second time, a data directory a running daemon serves", async () => {
    const dir = tempDir();
    const daemon = await serve(dir);
    const seeding = await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50");
    expect(seeding.code).toBe(1);
    expect(seeding.stderr).toMatch(/stop it before seeding/);
    const second = await inboxd("serve", "--data-dir", dir, "--port", "0");
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another inboxd serve/);
    expect(await daemon.stop()).toBe(0);
    // Once stopped, the directory is free again.
    expect((await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50")).code).toBe(0);
  }, 30_000);

  it("refuses to seed a data directory twice", async () => {
    const dir = tempDir();
    expect((await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50")).code).toBe(0);
    const again = await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds data/);
  });

  it("gives the same chats for the same seed options", async () => {
    const chatIDs = async () => {
      const dir = tempDir();
      expect((await inboxd("seed", "--data-dir", dir, "--chats", "30", "--messages", "600", "--accounts", "2", "--seed", "77")).code).toBe(0);
      const token = await createToken(dir);
      const daemon = await serve(dir);
      const body = (await (await daemon.get("/v1/chats", token)).json()) as { items: { id: string; title: string }[] };
      await daemon.stop();
      return body.items.map((c) => `${c.id} ${c.title}`);
    };
    const first = await chatIDs();
    expect(first.length).toBeGreaterThan(10);
    expect(await chatIDs()).toEqual(first);
  }, 30_000);
});
