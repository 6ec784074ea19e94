/**
 * npx tsx bench/startup.ts [--starts N]: how long `inboxd serve` takes to answer its first request, and its RSS once
 * it has, run as built JavaScript (`node adapters/node/bin.js`, what `npm start` runs) and through tsx (`node --import
 * tsx adapters/node/cli.ts`, what development runs), in alternating starts on one empty data directory. Prints the
 * medians. Build first (`npm run build`).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { median, ROOT } from "./daemon.ts";

const { values } = parseArgs({ options: { starts: { type: "string", default: "6" } } });
const starts = Number(values.starts);
const variants = { built: ["adapters/node/bin.js"], tsx: ["--import", "tsx", "adapters/node/cli.ts"] } as const;
type Variant = keyof typeof variants;
const dir = mkdtempSync(join(tmpdir(), "inboxd-startup-"));
const results: Record<Variant, { readyMs: number; rssMB: number }[]> = { built: [], tsx: [] };

async function once(variant: Variant) {
  const started = performance.now();
  const child = spawn(process.execPath, [...variants[variant], "serve", "--port", "0", "--data-dir", dir], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    const read = (data: Buffer) => {
      output += data;
      const match = /inboxd listening on (\S+)/.exec(output);
      if (match) resolve(match[1]);
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.once("exit", () => reject(new Error(`exited before listening:\n${output}`)));
  });
  while ((await fetch(`${url}/v1/info`).catch(() => undefined))?.status !== 200);
  const readyMs = performance.now() - started;
  await new Promise((r) => setTimeout(r, 300));
  const rssMB = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]) / 1024;
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  results[variant].push({ readyMs, rssMB });
}

try {
  for (let i = 0; i < starts; i++)
    for (const variant of (i % 2 ? ["tsx", "built"] : ["built", "tsx"]) as Variant[]) await once(variant);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
for (const variant of ["built", "tsx"] as Variant[])
  console.log(
    `${variant.padEnd(5)}  first 200 after ${Math.round(median(results[variant].map((r) => r.readyMs)))} ms, RSS ${Math.round(median(results[variant].map((r) => r.rssMB)))} MB (median of ${starts} starts)`,
  );
