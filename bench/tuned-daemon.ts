/**
 * A daemon started with ServeOptions.tuning the CLI has no flag for (matrixFirstBackfill, desktopApiFirstBackfill,
 * sandboxEchoDelayMs…): adapters/node/serve.ts's startServer, bundled as adapters/node/build.ts bundles the CLI and
 * run in its own process, so that the bench's clients do not share its event loop.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { DAEMON_NODE_OPTIONS } from "../adapters/node/heap-growth.ts";
import type { ServeOptions } from "../adapters/node/serve.ts";
import { freePort, inboxdNodePath, ROOT, stopChild, track, waitUntilServing, type Daemon } from "./daemon.ts";

export type Tuning = NonNullable<ServeOptions["tuning"]>;

const ENTRY = `
import { startServer } from "./adapters/node/serve.ts";
import { databasePath } from "./adapters/node/data-dir.ts";
import { parseRateLimit } from "./src/http/rate-limit.ts";
import { eventLogSettings } from "./src/events/log.ts";
const [dataDir, port, tuning] = process.argv.slice(2);
const server = await startServer({
  port: Number(port), host: "127.0.0.1", dbPath: databasePath(dataDir), allowHosts: [], verbose: false, print: () => undefined,
  rateLimit: parseRateLimit(process.env.INBOXD_RATE_LIMIT), eventLog: eventLogSettings(process.env),
  tuning: JSON.parse(tuning),
});
console.log("inboxd (bench, tuning " + tuning + ") listening on " + server.url);
let stopping = false;
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, async () => {
  if (stopping) return;
  stopping = true;
  await server.close();
  process.exit(0);
});
`;
const BUNDLE = join(ROOT, "dist/bench/tuned-daemon.mjs");
let built: Promise<void> | undefined;

/** Builds the bundle once per bench run (the options of adapters/node/build.ts). */
export function buildTunedDaemon(): Promise<void> {
  mkdirSync(join(ROOT, "dist/bench"), { recursive: true });
  built ??= build({
    stdin: { contents: ENTRY, resolveDir: ROOT, sourcefile: "bench-tuned-daemon.ts", loader: "ts" },
    outfile: BUNDLE,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    sourcemap: "linked",
    minify: false,
    logLevel: "warning",
  }).then(() => undefined);
  return built;
}

/** The node arguments that run the bundle (after the caller's own node flags). */
export const tunedDaemonArgs = (dir: string, port: number, tuning: Tuning) => [
  ...DAEMON_NODE_OPTIONS,
  "--enable-source-maps",
  BUNDLE,
  dir,
  String(port),
  JSON.stringify(tuning),
];

/** Starts the bundle on a free port (on the `--node` of the run, after `nodeArgs`); resolves once GET /v1/chats answers 200. */
export async function startTunedDaemon(
  dir: string,
  token: string,
  tuning: Tuning,
  options: { env?: Record<string, string>; nodeArgs?: string[] } = {},
): Promise<Daemon & { child: ChildProcess; output(): string }> {
  await buildTunedDaemon();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = track(
    spawn(inboxdNodePath(), [...(options.nodeArgs ?? []), ...tunedDaemonArgs(dir, port, tuning)], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...options.env },
    }),
  );
  let output = "";
  child.stdout!.on("data", (d) => (output = (output + d).slice(-20_000)));
  child.stderr!.on("data", (d) => (output = (output + d).slice(-20_000)));
  await waitUntilServing(child, url, token, () => output, started);
  return {
    pid: child.pid!,
    url,
    readyMs: performance.now() - started,
    child,
    output: () => output,
    stop: () => stopChild(child),
  };
}
