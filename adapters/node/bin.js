#!/usr/bin/env node
// The `inboxd` command: runs the built daemon and command line (dist/node/inboxd.mjs, made by adapters/node/build.ts
// in `npm ci` and before `npm start`), plain JavaScript with no TypeScript loader at run time.
import { existsSync } from "node:fs";

const built = new URL("../../dist/node/inboxd.mjs", import.meta.url);
if (!existsSync(built)) {
  console.error("inboxd: not built yet: run npm ci (or npm run build) in the checkout first");
  process.exit(1);
}
// Stack traces name the TypeScript sources (the build writes a source map beside the bundle).
process.setSourceMapsEnabled(true);
await import(built.href);
