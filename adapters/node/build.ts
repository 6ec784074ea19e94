/**
 * Builds the daemon and its command line into plain JavaScript: `dist/node/inboxd.mjs` (one ES module, with a source
 * map) and, beside it, `dist/node/web-assets.mjs` (the web pages, see webAssetsBeside), which `adapters/node/bin.js` runs. So `npm start`, the `inboxd` bin and a service manager's
 * `node adapters/node/bin.js serve` start without a TypeScript loader (tsx costs start-up time and memory on every
 * start); development and the tests keep running the TypeScript through tsx.
 *
 * Runs in `npm ci` (the `prepare` script, after the web inbox's build, which it copies beside the bundle), in `npm test`, and before
 * `npm start` and `npm run inboxd` (so a checkout never runs a stale build). esbuild takes about a second (2.5 s in
 * all with tsx's own start, 1.9 s before the dependencies were bundled; every start of the daemon is then about
 * 0.3-0.6 s sooner, below).
 *
 * The JavaScript dependencies are bundled too; only the SQLite bindings (native code, or code that loads it) stay in
 * `node_modules`. Why: resolving and loading some 400 files of node_modules one by one, and looking in each for a
 * source map, was most of the daemon's start-up: ready after restart on a small data set went from about 1.39 s to
 * 0.80 s (source maps on, as bin.js runs it; 1.02 s to 0.64 s without). A CommonJS dependency's `require` comes from
 * createRequire in the banner, resolved from dist/node/ as before.
 */
import { build, type Plugin } from "esbuild";
import { copyFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const root = fileURLToPath(new URL("../..", import.meta.url));
export const BUILT_CLI = join(root, "dist/node/inboxd.mjs");

/**
 * Packages the bundle leaves to node_modules: native SQLite and what loads it (adapters/node/sqlite-binding.ts picks
 * one at run time), and packages that read files from beside their own modules.
 */
const LEFT_IN_NODE_MODULES = [
  "better-sqlite3",
  "inboxd-sqlite-node20",
  "db0/connectors/better-sqlite3",
  "db0/connectors/node-sqlite",
  // matrix-sdk-crypto reads its wasm file from beside its own module (adapters/node/matrix-crypto.ts).
  "@matrix-org/matrix-sdk-crypto-wasm",
  // ws's optional native helpers: absent unless installed, and ws works without them.
  "bufferutil",
  "utf-8-validate",
];

/**
 * The web inbox and API reference (web/dist/assets.js, about 1.9 MB of strings) stay out of the bundle: src/web/
 * imports them on a page's first request, and here that import names a copy beside the bundle. Compiled into it,
 * they were two fifths of what every start of the daemon parsed and kept.
 */
const WEB_ASSETS = join(root, "web/dist/assets.js");
const BUILT_WEB_ASSETS = join(root, "dist/node/web-assets.mjs");
const webAssetsBeside: Plugin = {
  name: "web-assets-beside",
  setup(b) {
    b.onResolve({ filter: /web\/dist\/assets\.js$/ }, (args) => {
      if (args.kind !== "dynamic-import")
        throw new Error(`${args.importer} imports ${args.path} statically: only src/web/assets.ts may, lazily`);
      return { path: "./web-assets.mjs", external: true };
    });
  },
};

const started = performance.now();
const result = await build({
  entryPoints: [join(root, "adapters/node/cli.ts")],
  outfile: BUILT_CLI,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: LEFT_IN_NODE_MODULES,
  plugins: [webAssetsBeside],
  banner: {
    js: 'import { createRequire as __inboxdRequire } from "node:module"; const require = __inboxdRequire(import.meta.url);',
  },
  sourcemap: "linked",
  // Stack traces need only the mappings; the sources themselves are in the checkout. With them, the map was 7.7 MB,
  // which Node reads and parses at every start (source maps are on, see bin.js) and then keeps in memory.
  sourcesContent: false,
  // Names stay readable in stack traces; the bundle is not shipped over a network, so size hardly matters.
  minify: false,
  metafile: true,
  logLevel: "warning",
});
copyFileSync(WEB_ASSETS, BUILT_WEB_ASSETS);
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
// Quiet unless asked: it runs before every `npm start` and `npm run inboxd`, whose output people pipe.
if (process.argv.includes("--verbose"))
  console.error(
    `built ${BUILT_CLI.slice(root.length)} (${Math.round(bytes / 1024)} KiB with its map) in ${Math.round(performance.now() - started)} ms`,
  );
