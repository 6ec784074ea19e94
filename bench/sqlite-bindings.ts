/**
 * The SQLite binding comparison (`npm run bench -- --only bindings`): every binding inboxd could use on each Node
 * LTS, on the same data in the same run, through the daemon's own storage code (bench/sqlite-binding-worker.ts).
 * - Node 20: better-sqlite3 12 (what inboxd uses there; compiled at install), the baseline of the table.
 * - Node 22 and 24: the built-in node:sqlite (what inboxd uses there) and better-sqlite3 13 (Node-API, prebuilt),
 *   which is not a dependency of inboxd: the bench installs it into bench/sqlite-candidates with --ignore-scripts.
 * Other runtimes come from .ci/with-node (installed from the npm registry on first use).
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { ROOT, track } from "./daemon.ts";

type BindingArg = "default" | "node:sqlite" | "better-sqlite3-13";
interface Candidate {
  runtime: string;
  binding: BindingArg;
  node?: string;
  /** Why it was not measured. */
  unavailable?: string;
}
interface Measurement {
  node: string;
  binding: string;
  version: string;
  sqliteVersion: string;
  seedSeconds: number;
  seedMessagesPerSecond: number;
  openMs: number;
  keys: number;
  listMs: number;
  readsPerSecond: number;
  readP50Us: number;
  readP99Us: number;
  commitsPerSecond: number;
  commitP50Ms: number;
  commitP99Ms: number;
  fileMB: number;
}
export interface BindingResult {
  runtime: string;
  binding: BindingArg;
  unavailable?: string;
  rounds: Measurement[];
  /** The median of each figure over the rounds. */
  median?: Measurement;
}

const PLAN: [runtime: string, bindings: BindingArg[]][] = [
  ["20", ["default"]],
  ["22", ["node:sqlite", "better-sqlite3-13"]],
  ["24", ["node:sqlite", "better-sqlite3-13"]],
];

function nodeFor(runtime: string): string {
  if (process.versions.node.split(".")[0] === runtime) return process.execPath;
  return execFileSync(join(ROOT, ".ci/with-node"), [runtime, "node", "-p", "process.execPath"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  }).trim();
}

function installCandidates(log: (line: string) => void): void {
  const dir = join(ROOT, "bench/sqlite-candidates");
  if (existsSync(join(dir, "node_modules/better-sqlite3/package.json"))) return;
  log("installing better-sqlite3 13 into bench/sqlite-candidates (prebuilt binaries, --ignore-scripts)");
  execFileSync("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--silent"], {
    cwd: dir,
    stdio: "inherit",
  });
}

function runWorker(candidate: Candidate, chats: number, messages: number): Promise<Measurement> {
  const dir = mkdtempSync(join(os.tmpdir(), "inboxd-bench-sqlite-"));
  const args = [
    "--import",
    "tsx",
    join(ROOT, "bench/sqlite-binding-worker.ts"),
    "--binding",
    candidate.binding,
    "--dir",
    dir,
    "--chats",
    String(chats),
    "--messages",
    String(messages),
  ];
  const child = track(spawn(candidate.node!, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] }));
  let stdout = "",
    stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  return new Promise<Measurement>((resolve, reject) => {
    child.once("exit", (code) => {
      rmSync(dir, { recursive: true, force: true });
      if (code === 0) resolve(JSON.parse(stdout.trim().split("\n").pop()!) as Measurement);
      else
        reject(
          new Error(
            `Node ${candidate.runtime} ${candidate.binding} exited with ${code}: ${stderr.trim().split("\n").slice(-3).join(" | ")}`,
          ),
        );
    });
  });
}

function median(rounds: Measurement[]): Measurement {
  const result = { ...rounds[0] } as Record<string, unknown>;
  for (const [key, value] of Object.entries(rounds[0])) {
    if (typeof value !== "number") continue;
    const sorted = rounds.map((r) => r[key as keyof Measurement] as number).sort((a, b) => a - b);
    result[key] = sorted[Math.floor(sorted.length / 2)];
  }
  return result as unknown as Measurement;
}

export async function compareBindings(options: {
  chats: number;
  messages: number;
  rounds: number;
  log: (line: string) => void;
}): Promise<BindingResult[]> {
  const { chats, messages, rounds, log } = options;
  const candidates: Candidate[] = [];
  for (const [runtime, bindings] of PLAN) {
    let node: string | undefined, unavailable: string | undefined;
    try {
      node = nodeFor(runtime);
    } catch (error) {
      unavailable = `Node ${runtime} could not be installed: ${(error as Error).message.split("\n")[0]}`;
    }
    for (const binding of bindings) candidates.push({ runtime, binding, node, unavailable });
  }
  if (candidates.some((c) => c.binding === "better-sqlite3-13" && !c.unavailable)) installCandidates(log);
  const results = candidates.map(
    (c): BindingResult => ({ runtime: c.runtime, binding: c.binding, unavailable: c.unavailable, rounds: [] }),
  );
  for (let round = 0; round < rounds; round++) {
    // Alternate the order between rounds, so that no binding always runs first (or last) on a noisy machine.
    const order = round % 2 === 0 ? candidates : [...candidates].reverse();
    for (const candidate of order) {
      const result = results[candidates.indexOf(candidate)];
      if (result.unavailable) continue;
      log(
        `bindings round ${round + 1}/${rounds}: Node ${candidate.runtime}, ${candidate.binding} (${chats} chats, ${messages} messages)`,
      );
      try {
        result.rounds.push(await runWorker(candidate, chats, messages));
      } catch (error) {
        result.unavailable = (error as Error).message;
      }
    }
  }
  for (const result of results) if (result.rounds.length) result.median = median(result.rounds);
  return results;
}

export function formatBindings(results: BindingResult[], rounds: number, chats: number, messages: number): string {
  const baseline = results.find((r) => r.runtime === "20" && r.median)?.median;
  const relative = (value: number, base: number | undefined) =>
    base ? ` (${((value / base) * 100).toFixed(0)} %)` : "";
  const header = [
    "runtime",
    "binding",
    "SQLite",
    "seed msgs/s",
    "restart ms",
    "reads/s",
    "read p50 / p99 µs",
    "commits/s",
    "commit p50 / p99 ms",
  ];
  const rows = results.map((r) => {
    const m = r.median;
    const name =
      r.binding === "default" ? "better-sqlite3" : r.binding === "better-sqlite3-13" ? "better-sqlite3" : r.binding;
    if (!m) return [`Node ${r.runtime}`, name, "", `not measured: ${r.unavailable ?? "no result"}`, "", "", "", "", ""];
    return [
      `Node ${m.node}`,
      `${m.binding === "node:sqlite" ? "node:sqlite" : `${name} ${m.version}`}${r.runtime === "20" || m.binding === "node:sqlite" ? " *" : ""}`,
      m.sqliteVersion,
      `${Math.round(m.seedMessagesPerSecond).toLocaleString("en-US")}${relative(m.seedMessagesPerSecond, baseline?.seedMessagesPerSecond)}`,
      m.openMs.toFixed(0),
      `${Math.round(m.readsPerSecond).toLocaleString("en-US")}${relative(m.readsPerSecond, baseline?.readsPerSecond)}`,
      `${m.readP50Us.toFixed(1)} / ${m.readP99Us.toFixed(1)}`,
      `${Math.round(m.commitsPerSecond).toLocaleString("en-US")}${relative(m.commitsPerSecond, baseline?.commitsPerSecond)}`,
      `${m.commitP50Ms.toFixed(3)} / ${m.commitP99Ms.toFixed(3)}`,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i >= 3 ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  return [
    `SQLite bindings: the same ${chats} chats / ${messages} messages in each, median of ${rounds} round(s); * = what inboxd uses on that runtime; % = of Node 20 better-sqlite3 12`,
    line(header),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...rows.map(line),
    `  seed: the real seed through the daemon's storage (group commits); restart: open + rebuild the chat table;`,
    `  reads: 20,000 random records, each timed; commits: 2,000 sequential 3-record commits shaped like a send.`,
  ].join("\n");
}
