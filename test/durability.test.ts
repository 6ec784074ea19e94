import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The real daemon in a child process (node itself, not a wrapper, so SIGKILL hits the process that holds the
// data): every acknowledged send must survive `kill -9`, and SIGTERM must stop it cleanly.
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WORD = "durablexylophone";
const children = new Set<ChildProcess>();

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "adapters/node/cli.ts", ...args], { cwd: ROOT });
  let stdout = "",
    stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return once(child, "exit").then(([code]) => ({ code: code as number | null, stdout, stderr }));
}

async function startDaemon(dataDir: string) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "adapters/node/cli.ts", "serve", "--data-dir", dataDir, "--port", "0"],
    { cwd: ROOT },
  );
  children.add(child);
  child.once("exit", () => children.delete(child));
  let stdout = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", () => undefined);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon did not start: ${stdout}`)), 20_000);
    const onData = () => {
      const match = /inboxd listening on (\S+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off("data", onData);
        resolve(match[1]);
      }
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`daemon exited with ${code}: ${stdout}`)));
  });
  return { child, url, stdout: () => stdout };
}

describe("the daemon under kill -9 and SIGTERM", () => {
  let dataDir: string;
  let token: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "inboxd-durability-"));
    expect((await run(["seed", "--data-dir", dataDir, "--chats", "10", "--messages", "300", "--seed", "9"])).code).toBe(
      0,
    );
    const created = await run(["token", "create", "--data-dir", dataDir, "--name", "durability"]);
    expect(created.code).toBe(0);
    token = created.stdout.trim().split("\n").pop()!;
  });
  afterAll(() => {
    for (const child of children) if (child.pid) process.kill(child.pid, "SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  const api = (url: string) => async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: await response.json() };
  };

  it("prints the port it really bound when started with --port 0", async () => {
    const daemon = await startDaemon(dataDir);
    expect(new URL(daemon.url).port).not.toMatch(/^0?$/);
    expect((await fetch(`${daemon.url}/v1/info`)).status).toBe(200);
    daemon.child.kill("SIGKILL");
    await once(daemon.child, "exit");
  });

  it("keeps every acknowledged message after kill -9 right after the last acknowledgment", async () => {
    const daemon = await startDaemon(dataDir);
    // Listen for the exit before killing: the event may fire before the workers finish.
    const exited = once(daemon.child, "exit");
    const call = api(daemon.url);
    const chats = (await call("GET", "/v1/chats")).body.items as { id: string; title: string }[];
    const chatID = chats.find((c) => c.title !== "Echo")!.id;
    const acked: { id: string; text: string }[] = [];
    let next = 0;
    const worker = async () => {
      while (next < 200) {
        const text = `${WORD} number ${next++}`;
        const sent = await call("POST", `/v1/chats/${encodeURIComponent(chatID)}/messages`, { text });
        expect(sent.status).toBe(200);
        acked.push({ id: sent.body.pendingMessageID, text });
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    process.kill(daemon.child.pid!, "SIGKILL");
    const [, signal] = await exited;
    expect(signal).toBe("SIGKILL");
    expect(acked).toHaveLength(200);

    const restarted = await startDaemon(dataDir);
    const again = api(restarted.url);
    for (const { id, text } of acked) {
      const got = await again("GET", `/v1/chats/${encodeURIComponent(chatID)}/messages/${id}`);
      expect(got.status, id).toBe(200);
      expect(got.body.text).toBe(text);
    }
    const found = new Set<string>();
    let cursor: string | undefined;
    for (;;) {
      const page = await again("GET", `/v1/messages/search?query=${WORD}${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      for (const m of page.body.items) found.add(m.id);
      if (!page.body.hasMore) break;
      cursor = page.body.oldestCursor;
    }
    expect(found).toEqual(new Set(acked.map((a) => a.id)));
    // The chat itself comes back as committed too: start-up reads chats from the snapshot plus the chats changed
    // since it was written (store/chat-snapshot.ts), and this one changed 200 times after it.
    const newest = (await again("GET", `/v1/chats/${encodeURIComponent(chatID)}/messages`)).body.items[0];
    expect(acked.map((a) => a.id)).toContain(newest.id);
    const chat = (await again("GET", `/v1/chats/${encodeURIComponent(chatID)}`)).body;
    expect(chat.preview.id).toBe(newest.id);
    expect((await again("GET", "/v1/chats")).body.items[0].id).toBe(chatID);

    // SIGTERM: a clean stop with exit code 0.
    restarted.child.kill("SIGTERM");
    const [code, termSignal] = await once(restarted.child, "exit");
    expect({ code, termSignal }).toEqual({ code: 0, termSignal: null });
    expect(restarted.stdout()).toContain("inboxd stopping");
  }, 60_000);

  it("keeps acknowledged messages when killed while other sends are still in flight", async () => {
    const daemon = await startDaemon(dataDir);
    // Listen for the exit before killing: the event may fire before the workers finish.
    const exited = once(daemon.child, "exit");
    const call = api(daemon.url);
    const chats = (await call("GET", "/v1/chats")).body.items as { id: string; title: string }[];
    const chatID = chats.find((c) => c.title !== "Echo")!.id;
    const acked: { id: string; text: string }[] = [];
    let killed = false;
    const worker = async (w: number) => {
      for (let i = 0; !killed; i++) {
        const text = `inflight ${w} ${i}`;
        const sent = await call("POST", `/v1/chats/${encodeURIComponent(chatID)}/messages`, { text }).catch(() => null);
        if (!sent || killed) return;
        acked.push({ id: sent.body.pendingMessageID, text });
        if (acked.length === 100) {
          killed = true;
          process.kill(daemon.child.pid!, "SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
    await exited;

    const restarted = await startDaemon(dataDir);
    const again = api(restarted.url);
    for (const { id, text } of acked) {
      const got = await again("GET", `/v1/chats/${encodeURIComponent(chatID)}/messages/${id}`);
      expect(got.status, id).toBe(200);
      expect(got.body.text).toBe(text);
    }
    restarted.child.kill("SIGTERM");
    expect((await once(restarted.child, "exit"))[0]).toBe(0);
  }, 60_000);
});
