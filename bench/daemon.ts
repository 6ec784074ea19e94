/** Child processes of the benchmark: the inboxd CLI (seed, token, serve) and the bare baseline server. */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DAEMON_NODE_OPTIONS } from "../adapters/node/heap-growth.ts";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "adapters/node/cli.ts");
const live = new Set<ChildProcess>();

/** The node that runs inboxd and the bare baseline server (`--node`); the load generators stay on the bench's own. */
let inboxdNode = process.execPath;

/** Runs inboxd on Node `version` (20, 22, 24 or system), installed by .ci/with-node if needed. */
export function useNode(version: string): void {
  inboxdNode = execFileSync(join(ROOT, ".ci/with-node"), [version, "node", "-p", "process.execPath"], {
    encoding: "utf8",
  }).trim();
}

/** The node binary inboxd runs on in this run (see useNode). */
export const inboxdNodePath = () => inboxdNode;

export const daemonNodeVersion = () =>
  inboxdNode === process.execPath
    ? process.version
    : execFileSync(inboxdNode, ["--version"], { encoding: "utf8" }).trim();

/** The daemon and CLI as users run them: built (`npm run bench` builds first, as `npm start` does). */
const BUILT_CLI = join(ROOT, "dist/node/inboxd.mjs");

/**
 * `node FILE ...` with no npm wrapper, so the PID is the process that does the work: inboxd's CLI as built, with
 * source maps for its stack traces; any other script (the bench's own workers) through tsx.
 */
export function spawnNode(file: string, args: string[], nodeArgs: string[] = [], built = BUILT_CLI): ChildProcess {
  // The CLI with the node options the `inboxd` command's first line gives every command (seed and serve included).
  const run = file === CLI ? [...DAEMON_NODE_OPTIONS, "--enable-source-maps", built] : ["--import", "tsx", file];
  return track(spawn(inboxdNode, [...nodeArgs, ...run, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] }));
}

/** Remembers a child so that killAll() can end it. */
export function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once("exit", () => live.delete(child));
  return child;
}

/** Kills every child still running, by PID (used on exit and on errors). */
export function killAll(): void {
  for (const child of live)
    if (child.pid && child.exitCode === null) {
      try {
        process.kill(child.pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
}

/** Runs a CLI command to completion; returns stdout and wall-clock seconds, throws on a non-zero exit. */
export async function runCli(args: string[]): Promise<{ stdout: string; seconds: number }> {
  const started = performance.now();
  const child = spawnNode(CLI, args);
  let stdout = "",
    stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`inboxd ${args[0]} exited with ${code}:\n${stderr}${stdout}`);
  return { stdout, seconds: (performance.now() - started) / 1000 };
}

export async function createToken(dir: string): Promise<string> {
  const { stdout } = await runCli([
    "token",
    "create",
    "--data-dir",
    dir,
    "--scope",
    "read",
    "--scope",
    "write",
    "--name",
    "bench",
  ]);
  return stdout.trim().split("\n").pop()!.trim();
}

export async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** One GET with its own connection; resolves with the status and body, rejects on connection errors. */
export function getOnce(url: string, token?: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

export function memory(pid: number): { rssMB: number; peakMB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kB = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssMB: kB("VmRSS") / 1024, peakMB: kB("VmHWM") / 1024 };
}

/** CPU seconds (user + system) used so far by a process; assumes CLK_TCK = 100. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** SIGTERM (a clean exit), SIGKILL after 10 s. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

export interface Daemon {
  pid: number;
  url: string;
  /** ms from spawn to the first successful GET /v1/chats. */
  readyMs: number;
  /** With `inspect`: the port of its inspector (bench/inspector.ts), used to force a GC before memory readings. */
  inspectPort?: number;
  stop(): Promise<void>;
}

/** Starts `inboxd serve` and polls GET /v1/chats every 20 ms until it answers 200. */
export async function startDaemon(
  dir: string,
  token: string,
  /** `built`: another checkout's dist/node/inboxd.mjs instead of this one's (bench/compare.ts). */
  options: { inspect?: boolean; args?: string[]; nodeArgs?: string[]; built?: string } = {},
): Promise<Daemon> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const inspectPort = options.inspect ? await freePort() : undefined;
  const started = performance.now();
  const child = spawnNode(
    CLI,
    ["serve", "--data-dir", dir, "--port", String(port), ...(options.args ?? [])],
    [...(options.nodeArgs ?? []), ...(inspectPort ? [`--inspect=127.0.0.1:${inspectPort}`] : [])],
    options.built,
  );
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  await waitUntilServing(child, url, token, () => output, started);
  return { pid: child.pid!, url, readyMs: performance.now() - started, inspectPort, stop: () => stopChild(child) };
}

/** Starts bench/baseline-server.ts answering every request with the given body. */
export async function startBaseline(bodyFile: string): Promise<{ pid: number; url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawnNode(join(ROOT, "bench/baseline-server.ts"), [bodyFile, String(port)]);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`baseline server exited with ${child.exitCode}`);
    if (
      await getOnce(url).then(
        (r) => r.status === 200,
        () => false,
      )
    )
      break;
    if (i > 1500) throw new Error("baseline server not ready after 30 s");
    await new Promise((r) => setTimeout(r, 20));
  }
  return { pid: child.pid!, url, stop: () => stopChild(child) };
}

/** Polls GET /v1/chats until the daemon answers 200; throws with what it printed if it exits, errs or takes 60 s. */
export async function waitUntilServing(
  child: import("node:child_process").ChildProcess,
  url: string,
  token: string,
  output: () => string,
  started = performance.now(),
) {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`inboxd serve exited with ${child.exitCode}:\n${output()}`);
    const status = await getOnce(`${url}/v1/chats`, token).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (status !== 0) throw new Error(`GET /v1/chats answered ${status} during startup:\n${output()}`);
    if (performance.now() - started > 60_000) throw new Error(`inboxd not ready after 60 s:\n${output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** PIDs of every process below `pid` (from /proc/PID/task/TID/children). */
export function descendants(pid: number): number[] {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children = tids.flatMap((tid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ").filter(Boolean).map(Number);
    } catch {
      return [];
    }
  });
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** This process's descendants whose command line matches. */
export function childrenRunning(test: (argv: string[]) => boolean): number[] {
  return descendants(process.pid).filter((pid) => {
    try {
      return test(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0"));
    } catch {
      return false;
    }
  });
}

/** Busy CPU seconds of the whole machine so far: the first line of /proc/stat but idle and iowait (CLK_TCK = 100). */
export function machineBusySeconds(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .split("\n", 1)[0]
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
