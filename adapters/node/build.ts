/**
 * Builds the daemon and its command line into plain JavaScript: `dist/node/inboxd.mjs` (one ES module, with a source
 * map), which `adapters/node/bin.js` runs. So `npm start`, the `inboxd` bin and a service manager's
 * `node adapters/node/bin.js serve` start without a TypeScript loader (tsx costs start-up time and memory on every
 * start); development and the tests keep running the TypeScript through tsx.
 *
 * Runs in `npm ci` (the `prepare` script, after the web inbox's build, which it bundles), in `npm test`, and before
 * `npm start` and `npm run inboxd` (so a checkout never runs a stale build); it takes well under a second. Dependencies stay outside the bundle (`node_modules`, as installed: one of them is a native
 * SQLite binding).
 */
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const root = fileURLToPath(new URL("../..", import.meta.url));
export const BUILT_CLI = join(root, "dist/node/inboxd.mjs");

const started = performance.now();
const result = await build({
  entryPoints: [join(root, "adapters/node/cli.ts")],
  outfile: BUILT_CLI,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  // Names stay readable in stack traces; the bundle is not shipped over a network, so size hardly matters.
  minify: false,
  metafile: true,
  logLevel: "warning",
});
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
// Quiet unless asked: it runs before every `npm start` and `npm run inboxd`, whose output people pipe.
if (process.argv.includes("--verbose")) console.error(`built ${BUILT_CLI.slice(root.length)} (${Math.round(bytes / 1024)} KiB with its map) in ${Math.round(performance.now() - started)} ms`);
