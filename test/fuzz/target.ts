/**
 * The fuzz target: a real daemon process (`inboxd seed`, `token create`, `serve`) on a temp data directory, and the
 * IDs it holds. Used by fuzz.test.ts (a bounded run in npm test) and main.ts (`npm run fuzz`).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, startServing, type ServingProcess } from "../harness/process.ts";
import { connectInspector } from "../../bench/inspector.ts";
import type { FuzzContext } from "./generate.ts";

export interface FuzzTarget {
  url: string;
  token: string;
  pid: number;
  context: FuzzContext;
  rssMB(): number;
  /** RSS after a full garbage collection (through the daemon's inspector): what the daemon really holds. */
  settledRssMB(): Promise<number>;
  stop(): Promise<number | null>;
}

const cli = (args: string[]) =>
  execFileSync(process.execPath, [join(ROOT, "adapters/node/bin.js"), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, INBOXD_DATA_DIR: "" },
  });

export async function startFuzzTarget(): Promise<FuzzTarget> {
  const dir = mkdtempSync(join(tmpdir(), "inboxd-fuzz-"));
  cli(["seed", "--data-dir", dir, "--chats", "30", "--messages", "1500", "--accounts", "2", "--seed", "11"]);
  const token = cli(["token", "create", "--data-dir", dir]).trim().split("\n").pop()!;
  let daemon: ServingProcess;
  try {
    daemon = await startServing(process.execPath, [
      "--inspect=127.0.0.1:0",
      join(ROOT, "adapters/node/bin.js"),
      "serve",
      "--data-dir",
      dir,
      "--port",
      "0",
    ]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const get = async <T>(path: string) =>
    (await (await fetch(`${daemon.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).json()) as T;
  const accounts = await get<{ accountID: string }[]>("/v1/accounts");
  const chatPage = await get<{ items: { id: string }[] }>("/v1/chats");
  const chats = await Promise.all(
    chatPage.items.slice(0, 10).map(async (chat) => ({
      id: chat.id,
      messageIDs: (
        await get<{ items: { id: string }[] }>(`/v1/chats/${encodeURIComponent(chat.id)}/messages`)
      ).items.map((m) => m.id),
    })),
  );
  const bridges = await get<{ items?: { id: string }[] } | { id: string }[]>("/v1/bridges");
  const bridgeIDs = (Array.isArray(bridges) ? bridges : (bridges.items ?? [])).map((b) => b.id);
  const pid = daemon.child.pid!;
  const inspectPort = Number(/Debugger listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(daemon.output())![1]);
  const rssMB = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
  return {
    url: daemon.url,
    token,
    pid,
    context: {
      accountIDs: accounts.map((a) => a.accountID),
      chats,
      bridgeIDs: bridgeIDs.length ? bridgeIDs : ["local-sandbox"],
    },
    rssMB,
    async settledRssMB() {
      const inspector = await connectInspector(inspectPort);
      try {
        await inspector.collectGarbage();
      } finally {
        inspector.close();
      }
      return rssMB();
    },
    async stop() {
      const code = await daemon.stop("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}
