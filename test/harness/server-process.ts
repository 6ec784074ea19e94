import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// What the harnesses of real servers (prosody.ts, synapse.ts) share: a server run in the foreground as a child of
// the test process, its config, data and log in a temp dir, stopped by a signal and started again on the same ports.

/** One run of the server process. */
export interface Running {
  child: ChildProcess;
  /** Resolves once the process has exited and all it printed has been read. */
  exited: Promise<void>;
  /** What this run printed (stdout and stderr). */
  output(): string;
  /** Whether the process has exited already, or never started. */
  ended(): boolean;
}

/** The members a harness's server object takes from here as they are. */
export interface ServerControl {
  /** The running server's PID; undefined while it is down. */
  pid(): number | undefined;
  start(): Promise<void>;
  /** Stops gracefully (SIGTERM) and starts again on the same ports and data. */
  restart(): Promise<void>;
  /** SIGKILL: an abrupt loss of the server, down until start(). */
  kill(): Promise<void>;
  /** Stops the server and removes its temp dir. */
  close(): Promise<void>;
  /** The tail of the server's log and of what the process printed, for failure messages. */
  log(): string;
}

export interface ServerOptions {
  /** Names the server in messages ("Prosody is already running"). */
  name: string;
  /** The temp dir of config, data and log: close() removes it, and so does a failed first start. */
  dir: string;
  /** What the server logs or prints when a port it was given is no longer free. */
  bindFailed: string;
  /** How long a stop waits after its signal before SIGKILL. */
  graceMs: number;
  /** Picks fresh ports and writes the config: before the first start, and again after a failed bind. */
  configure(): Promise<void>;
  /** The command line and its cwd and env, asked afresh for each start. */
  spawn(): { command: string[]; cwd?: string; env?: NodeJS.ProcessEnv };
  /** Resolves once this run answers; rejects with a message when it exited or did not answer in time. */
  ready(running: Running): Promise<void>;
  /** The tail of the server's log followed by `output`, for failure messages. */
  logTail(output: string): string;
}

/** Configures and starts the server; the caller's server object spreads the result. */
export async function startServer(options: ServerOptions): Promise<ServerControl> {
  let running: Running | undefined;
  let printed = "";

  const start = async () => {
    if (running) throw new Error(`${options.name} is already running`);
    running = launch(options.spawn(), (data) => (printed = (printed + data).slice(-20_000)));
    await options.ready(running).catch(async (error) => {
      await stop("SIGKILL");
      throw error;
    });
  };
  const stop = async (signal: NodeJS.Signals) => {
    const current = running;
    running = undefined;
    if (current) await terminate(current, signal, options.graceMs);
  };

  // A free port can be taken between freePort() and the server's bind, so a bind failure is retried on fresh ports
  // (only here: a restart must keep its ports).
  for (let attempt = 1; ; attempt++) {
    await options.configure();
    try {
      await start();
      break;
    } catch (error) {
      if (attempt >= 3 || !String(error).includes(options.bindFailed)) {
        rmSync(options.dir, { recursive: true, force: true });
        throw error;
      }
    }
  }

  return {
    pid: () => running?.child.pid,
    start,
    async restart() {
      await stop("SIGTERM");
      await start();
    },
    kill: () => stop("SIGKILL"),
    async close() {
      await stop("SIGTERM");
      rmSync(options.dir, { recursive: true, force: true });
    },
    log: () => options.logTail(printed),
  };
}

const SETPRIV = "/usr/bin/setpriv";

function launch({ command, cwd, env }: ReturnType<ServerOptions["spawn"]>, onOutput: (data: string) => void): Running {
  // setpriv (util-linux) makes the kernel SIGKILL the server if the test process dies without closing it; it execs
  // the server, so the PID stays the server's own.
  const [file, ...args] = existsSync(SETPRIV) ? [SETPRIV, "--pdeathsig", "KILL", ...command] : command;
  const child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const record = (data: Buffer) => {
    output += data;
    onOutput(String(data));
  };
  child.stdout!.on("data", record);
  child.stderr!.on("data", record);
  child.on("error", (error) => record(Buffer.from(`spawn failed: ${error.message}\n`)));
  // "close", not "exit": it comes after the last output, and also when the spawn failed (which has no "exit").
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const ended = () => child.exitCode !== null || child.signalCode !== null || child.pid === undefined;
  return { child, exited, output: () => output, ended };
}

async function terminate(running: Running, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  const { child, exited } = running;
  if (running.ended()) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

export function readLog(logPath: string): string {
  return existsSync(logPath) ? readFileSync(logPath, "utf8") : "";
}

/** The last lines of the log file and then of `output`, which starts with `heading` when there is any. */
export function tail(logPath: string, output: string, heading = "", lines = 60): string {
  return `${readLog(logPath)}${output ? `${heading}${output}` : ""}`.trimEnd().split("\n").slice(-lines).join("\n");
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error)
        reject(new Error(`${file} ${args.join(" ")} exited with ${error.code ?? error.signal}:\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * Installs Debian packages with apt when this process runs as root (as CI does); otherwise throws `notRoot`, which
 * says what to install, and `failed` leads the message of a failed install. flock(1) serialises concurrent test
 * workers on `lock` (a file in the temp dir) and releases it when its holder dies, so a crashed worker leaves no
 * stale lock. `unless` is a shell test run under the lock: the workers that waited find the install done and skip
 * apt. A failed install retries once after refreshing the package lists, which a fresh machine may not have.
 */
export async function aptInstall(
  packages: string[],
  options: { lock: string; unless?: string; notRoot: string; failed: string },
): Promise<void> {
  const { lock, unless, notRoot, failed } = options;
  if (process.getuid?.() !== 0) throw new Error(notRoot);
  const apt = `apt-get -o DPkg::Lock::Timeout=300 install -y ${packages.join(" ")}`;
  const script = `${unless ? `${unless} || ` : ""}${apt} || { apt-get update && ${apt}; }`;
  await run("flock", [join(tmpdir(), lock), "sh", "-c", script], {
    ...process.env,
    DEBIAN_FRONTEND: "noninteractive",
  }).catch((error) => {
    throw new Error(`${failed}\n${error.message}`);
  });
}
