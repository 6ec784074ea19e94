import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { alive, descendants, killAll, ROOT, startServing } from "./harness/process.ts";
import { lockHolder } from "../adapters/node/daemon-lock.ts";

// How the daemon is started and stopped for real: `npm start` and `npm run inboxd -- serve` (npm forwards the signal
// to its child, which must be the daemon itself), node directly, and the systemd unit's ExecStart. Whatever is
// signalled, the whole process tree must end with the daemon's own clean shutdown (exit 0, which it gives only when
// the shutdown finished within its 10 s limit; "inboxd stopping"; the data-dir lock released).
const dirs: string[] = [];
const leftovers: number[] = [];
afterAll(() => {
  killAll(leftovers);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), "inboxd-supervision-"));
  dirs.push(dir);
  return dir;
}

/** The environment of a user whose only inboxd setting is the data directory; port 0 picks a free port. */
function userEnv(dataDir: string): NodeJS.ProcessEnv {
  return { ...process.env, INBOXD_DATA_DIR: dataDir, INBOXD_PORT: "0" };
}

async function expectCleanStop(
  started: Awaited<ReturnType<typeof startServing>>,
  dataDir: string,
  signal: NodeJS.Signals,
) {
  const tree = [started.child.pid!, ...descendants(started.child.pid!)];
  leftovers.push(...tree);
  expect(lockHolder(dataDir)).toMatchObject({ command: "serve" });
  const code = await started.stop(signal);
  // Exit 0 is the bound on the stop's time: a shutdown that does not finish within the daemon's own limit (10 s) is
  // given up with exit 1, and one that never ends fails the test's timeout. How long a clean stop takes is not
  // asserted here; on a busy machine it varies.
  expect(code, started.output()).toBe(0);
  expect(started.output()).toContain("inboxd stopping");
  // The started process ends after the daemon (npm waits for its child), so this only waits for the kernel to reap;
  // the deadline is generous because it is reached only when something is left running.
  const deadline = Date.now() + 20_000;
  while (tree.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(tree.filter(alive), `still running after ${signal}`).toEqual([]);
  expect(lockHolder(dataDir), "lock released").toBeUndefined();
}

describe("stopping the daemon under a supervisor", () => {
  it("SIGTERM to `npm start` stops npm and the daemon, cleanly", async () => {
    const dataDir = tempDir();
    const started = await startServing("npm", ["start"], { env: userEnv(dataDir) });
    expect(descendants(started.child.pid!).length, "npm's child is the daemon").toBeGreaterThan(0);
    await expectCleanStop(started, dataDir, "SIGTERM");
  }, 60_000);

  it("SIGINT to `npm run inboxd -- serve` does the same", async () => {
    const dataDir = tempDir();
    const started = await startServing("npm", ["run", "-s", "inboxd", "--", "serve"], { env: userEnv(dataDir) });
    await expectCleanStop(started, dataDir, "SIGINT");
  }, 60_000);

  it("a second signal during the shutdown (Ctrl-C reaches npm and the daemon) does not cut it short", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/children/slow-shutdown.ts"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    leftovers.push(child.pid!);
    let output = "";
    child.stdout.on("data", (data: Buffer) => (output += data));
    const printed = async (line: string) => {
      while (!output.includes(line)) await once(child.stdout, "data");
    };
    const exited = once(child, "close"); // after its output is read to the end
    await printed("ready");
    child.kill("SIGINT");
    await printed("stopping");
    child.kill("SIGINT");
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(output).toContain("stopped");
  }, 60_000);

  it("the systemd unit's ExecStart serves from its WorkingDirectory and stops cleanly on its KillSignal", async () => {
    const unit = readFileSync(join(ROOT, "adapters/node/inboxd.service"), "utf8");
    const setting = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(unit)?.[1];
    const [executable, ...args] = setting("ExecStart")!.split(/\s+/);
    expect(executable).toBe("/usr/bin/node");
    const killSignal = setting("KillSignal") as NodeJS.Signals;
    expect(killSignal).toBe("SIGTERM");
    // systemd waits TimeoutStopSec before SIGKILL; the daemon's own shutdown limit (10 s) must come first.
    expect(Number(setting("TimeoutStopSec"))).toBeGreaterThan(10);
    // As systemd would run it for a user whose home is `home` and who checked inboxd out at ~/inboxd (%h/inboxd):
    // this checkout stands in for it, and the node running this test for /usr/bin/node.
    expect(setting("WorkingDirectory")).toBe("%h/inboxd");
    const home = tempDir();
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, INBOXD_PORT: "0" };
    delete env.INBOXD_DATA_DIR;
    delete env.XDG_DATA_HOME;
    const started = await startServing(process.execPath, args, { cwd: ROOT, env });
    const dataDir = join(home, ".local/share/inboxd");
    expect(started.output()).toContain(`(data: ${dataDir}`);
    await expectCleanStop(started, dataDir, killSignal);
  }, 60_000);
});
