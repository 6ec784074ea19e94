import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { killAll, startServing } from "../harness/process.ts";

// Node 20 stores data through better-sqlite3 12, Node 22 and 24 through node:sqlite: the same SQLite file format,
// so a data directory must move between them in every direction. Each runtime runs from its own checkout, installed
// by `npm ci` on that runtime: INBOXD_RUNTIME_CHECKOUTS="NODE=DIR NODE=DIR …", NODE the path of a node binary.
const spec = process.env.INBOXD_RUNTIME_CHECKOUTS ?? "";
const runtimes = spec
  .split(/\s+/)
  .filter(Boolean)
  .map((entry) => {
    const [node, dir] = entry.split("=");
    const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
    return { dir, node, version, bin: join(dir, "adapters/node/bin.js") };
  });
type Runtime = (typeof runtimes)[number];

const dirs: string[] = [];
afterAll(() => {
  killAll();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function inboxd(runtime: Runtime, args: string[]): string {
  return execFileSync(runtime.node, [runtime.bin, ...args], {
    cwd: runtime.dir,
    encoding: "utf8",
    env: { ...process.env, INBOXD_DATA_DIR: "" },
  });
}

interface Chat {
  id: string;
  title: string;
}

describe("a data directory moves between Node runtimes", () => {
  it("is given at least two different runtimes (.ci/run sets INBOXD_RUNTIME_CHECKOUTS)", () => {
    expect(
      new Set(runtimes.map((r) => r.version)).size,
      "INBOXD_RUNTIME_CHECKOUTS names the checkouts to test; see .ci/run",
    ).toBeGreaterThanOrEqual(2);
    expect(new Set(runtimes.map((r) => r.version)).size, "each runtime once").toBe(runtimes.length);
  });

  for (const writer of runtimes) {
    it(`seeded on Node ${writer.version}: every other runtime reads it and adds to it, then it reads all of it again`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), `inboxd-portability-${writer.version}-`));
      dirs.push(dataDir);
      inboxd(writer, ["seed", "--data-dir", dataDir, "--chats", "20", "--messages", "400", "--seed", "7"]);
      const token = inboxd(writer, ["token", "create", "--data-dir", dataDir]).trim().split("\n").pop()!;
      const sent: string[] = [];
      let expectedChats: Chat[] | undefined;
      // The writer first, then each other runtime, then the writer again: each reads what all before it wrote.
      for (const reader of [writer, ...runtimes.filter((r) => r !== writer), writer]) {
        const daemon = await startServing(reader.node, [reader.bin, "serve", "--data-dir", dataDir, "--port", "0"], {
          cwd: reader.dir,
        });
        const call = async (path: string, init?: RequestInit) => {
          const response = await fetch(`${daemon.url}${path}`, {
            ...init,
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          });
          expect(response.status, `${reader.version} ${path}`).toBe(200);
          return response.json() as Promise<Record<string, unknown>>;
        };
        const chats = ((await call("/v1/chats")).items as Chat[]).map(({ id, title }) => ({ id, title }));
        expectedChats ??= chats;
        const group = expectedChats.find((c) => c.title !== "Echo")!;
        // Sends move the chat to the top of the list; the set of chats stays the same.
        expect(chats.map((c) => c.id).sort(), `chats as Node ${reader.version} reads them`).toEqual(
          expectedChats.map((c) => c.id).sort(),
        );
        const messages = (await call(`/v1/chats/${encodeURIComponent(group.id)}/messages`)).items as {
          text?: string;
        }[];
        for (const text of sent)
          expect(
            messages.map((m) => m.text),
            `Node ${reader.version} sees "${text}"`,
          ).toContain(text);
        const text = `written by node ${reader.version} ${sent.length}`;
        await call(`/v1/chats/${encodeURIComponent(group.id)}/messages`, {
          method: "POST",
          body: JSON.stringify({ text }),
        });
        sent.push(text);
        const search = (
          await call(`/v1/messages/search?query=${encodeURIComponent(`written by node ${reader.version}`)}`)
        ).items as unknown[];
        expect(search.length, "the search index takes writes from every runtime").toBeGreaterThan(0);
        expect(await daemon.stop("SIGTERM"), daemon.output()).toBe(0);
      }
      expect(sent.length).toBe(runtimes.length + 1);
    });
  }
});
