#!/usr/bin/env -S node --max-semi-space-size=16
// The `inboxd` command: runs the built daemon and command line (dist/node/inboxd.mjs, made by adapters/node/build.ts
// in `npm ci` and before `npm start`), plain JavaScript with no TypeScript loader at run time. The first line's node
// option is the daemon's (adapters/node/heap-growth.ts).
import { existsSync } from "node:fs";
import * as nodeModule from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";

const built = new URL("../../dist/node/inboxd.mjs", import.meta.url);
if (!existsSync(built)) {
  console.error("inboxd: not built yet: run npm ci (or npm run build) in the checkout first");
  process.exit(1);
}
// Stack traces name the TypeScript sources (the build writes a source map beside the bundle).
process.setSourceMapsEnabled(true);
// Node 22+ keeps the compiled bundle in an on-disk code cache, which shortens every later start (Node 20 has none
// and compiles each time). The cache is the user's own, not the shared temp dir Node picks by default, where another
// local user could plant compiled code. Where it cannot be written, Node just runs without it.
nodeModule.enableCompileCache?.(
  join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "inboxd", "compile-cache"),
);
await import(built.href);
