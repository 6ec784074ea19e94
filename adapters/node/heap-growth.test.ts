import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DAEMON_NODE_OPTIONS } from "./heap-growth.ts";

const ROOT = join(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const words = (line: string) => line.trim().split(/\s+/);

// V8 sizes the young generation as the process starts, so the daemon's node options must be on every command line
// that starts it; these are the ones the docs document.
describe("the daemon's node options", () => {
  it("are on npm start's command line", () => {
    const start = JSON.parse(read("package.json")).scripts.start as string;
    expect(words(start)).toEqual(["exec", "node", ...DAEMON_NODE_OPTIONS, "adapters/node/bin.js", "serve"]);
  });

  it("are on npm run inboxd's command line", () => {
    const inboxd = JSON.parse(read("package.json")).scripts.inboxd as string;
    expect(words(inboxd)).toEqual(["exec", "node", ...DAEMON_NODE_OPTIONS, "adapters/node/bin.js"]);
  });

  it("are on the inboxd command's first line", () => {
    expect(words(read("adapters/node/bin.js").split("\n")[0])).toEqual([
      "#!/usr/bin/env",
      "-S",
      "node",
      ...DAEMON_NODE_OPTIONS,
    ]);
  });

  it("are in the systemd unit's ExecStart", () => {
    const execStart = /^ExecStart=(.*)$/m.exec(read("adapters/node/inboxd.service"))![1];
    expect(words(execStart)).toEqual(["/usr/bin/node", ...DAEMON_NODE_OPTIONS, "adapters/node/bin.js", "serve"]);
  });
});
