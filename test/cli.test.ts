import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VERSION } from "../src/version.ts";
import { databasePath } from "../adapters/node/data-dir.ts";
import { lockHolder } from "../adapters/node/daemon-lock.ts";
import { openSqliteStorage } from "../adapters/node/sqlite-storage.ts";
import { defaultBinding } from "../adapters/node/sqlite-binding.ts";

// The CLI as users run it: the package bin, `node adapters/node/bin.js …` from the repository root (what
// `npm run -s inboxd -- …` and an installed `inboxd` run: the bundle npm test builds first), each command in its own
// process over a temp data directory. Half the start-up time of running the TypeScript through tsx.
const ROOT = fileURLToPath(new URL("..", import.meta.url));

beforeAll(() => {
  const bundle = join(ROOT, "dist/node/inboxd.mjs");
  const built = existsSync(bundle) ? statSync(bundle).mtimeMs : 0;
  const stale = ["src", "adapters/node"].flatMap((dir) => newerSources(join(ROOT, dir), built));
  if (stale.length)
    throw new Error(
      `dist/node/inboxd.mjs is older than ${stale.slice(0, 3).join(", ")}: run npx tsx adapters/node/build.ts (npm test does) before this file`,
    );
});

function newerSources(dir: string, than: number): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.ts$/.test(entry.name) && !/\.test\.ts$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => statSync(path).mtimeMs > than);
}
const dirs: string[] = [];
const children = new Set<ChildProcess>();

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), "inboxd-cli-"));
  dirs.push(dir);
  return dir;
}

function run(
  command: string[],
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command[0], [...command.slice(1), ...args], {
    cwd: ROOT,
    env: { ...process.env, INBOXD_DATA_DIR: "", ...env },
  });
  let stdout = "",
    stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return once(child, "exit").then(([code]) => ({ code: code as number | null, stdout, stderr }));
}
const CLI = [process.execPath, "adapters/node/bin.js"];
const inboxd = (...args: string[]) => run(CLI, args);

/** `inboxd <args>` as a child process whose output is collected (for commands that run until stopped). */
function start(args: string[]) {
  const child = spawn(CLI[0], [...CLI.slice(1), ...args], { cwd: ROOT, env: { ...process.env, INBOXD_DATA_DIR: "" } });
  children.add(child);
  let stdout = "",
    stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  void exited.then(() => children.delete(child));
  /** Resolves once stdout or stderr matches (with the match), or rejects if the process exits first. */
  const printed = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(stdout) ?? pattern.exec(stderr);
        if (!match) return false;
        resolve(match);
        return true;
      };
      if (check()) return;
      child.stdout.on("data", check);
      child.stderr.on("data", check);
      void exited.then(
        (code) => check() || reject(new Error(`exited with ${code} before printing ${pattern}:\n${stdout}${stderr}`)),
      );
    });
  return { child, exited, printed, output: () => ({ stdout, stderr }) };
}

async function serve(dataDir: string, ...args: string[]) {
  const started = start(["serve", "--data-dir", dataDir, "--port", "0", ...args]);
  const url = (await started.printed(/inboxd listening on (\S+)/))[1];
  const get = async (path: string, token: string) =>
    fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const stop = async () => {
    started.child.kill("SIGTERM");
    return started.exited;
  };
  return { ...started, url, get, stop };
}

async function createToken(dataDir: string, ...args: string[]) {
  const result = await inboxd("token", "create", "--data-dir", dataDir, ...args);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.trimEnd().split("\n").pop()!;
}

describe("inboxd CLI", () => {
  it("prints usage for --help and for each command's --help", async () => {
    const main = await inboxd("--help");
    expect(main.code).toBe(0);
    expect(main.stdout).toMatch(/Usage: inboxd <command>/);
    for (const command of ["serve", "token", "seed", "open", "webhook"]) {
      const help = await inboxd(command, "--help");
      expect(help.code, command).toBe(0);
      expect(help.stdout).toContain(`Usage: inboxd ${command}`);
    }
  });

  it("exits 2 with a message on an unknown command, flag or value", async () => {
    const unknown = await inboxd("frobnicate");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command frobnicate");
    expect((await inboxd("serve", "--no-such-flag")).code).toBe(2);
    expect((await inboxd("seed", "--data-dir", tempDir(), "--chats", "0", "--messages", "1")).code).toBe(2);
    expect((await inboxd("token", "create", "--data-dir", tempDir(), "--scope", "admin")).code).toBe(2);
  });

  it("the package bin runs the built JavaScript: serves the API and the web pages with every TypeScript import refused, which tsx's own start is not", async () => {
    const guard = ["--import", "./test/fixtures/no-typescript.mjs"];
    const dir = tempDir();
    const child = spawn(
      process.execPath,
      [...guard, "adapters/node/bin.js", "serve", "--port", "0", "--data-dir", dir],
      { cwd: ROOT, env: { ...process.env, INBOXD_DATA_DIR: "" } },
    );
    children.add(child);
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    await expect.poll(() => output, { timeout: 15_000 }).toMatch(/inboxd listening on (\S+)/);
    const url = /inboxd listening on (\S+)/.exec(output)![1];
    expect((await fetch(`${url}/v1/info`)).status).toBe(200);
    // The web inbox and the reference come from the file the build leaves beside the bundle, on first request.
    for (const page of ["/", "/docs"]) {
      const html = await (await fetch(url + page)).text();
      const script = /<script type="module" src="(\/web\/[^"]+\.js)"/.exec(html)?.[1];
      expect(script, `${page} names its script`).toBeTruthy();
      const asset = await fetch(url + script);
      expect(asset.status).toBe(200);
      expect(asset.headers.get("content-type")).toMatch(/javascript/);
      expect((await asset.text()).length).toBeGreaterThan(10_000);
    }
    child.kill("SIGTERM");
    expect((await once(child, "exit"))[0]).toBe(0);
    // The guard does refuse TypeScript: the development form fails under it.
    const dev = await run([process.execPath, ...guard, "--import", "tsx", "adapters/node/cli.ts"], ["--version"]);
    expect(dev.code).not.toBe(0);
    expect(dev.stderr).toContain("TypeScript at run time");
  }, 30_000);

  it("runs the documented forms: npm run -s inboxd -- and the package bin", async () => {
    expect((await run(["npm", "run", "-s", "inboxd", "--"], ["--help"])).code).toBe(0);
    // Without the --, npm keeps --data-dir for itself; the command must not then run on the default directory.
    const dir = tempDir();
    const swallowed = await run(["npm", "run", "-s", "inboxd"], ["token", "list", "--data-dir", dir]);
    expect([swallowed.code, swallowed.stdout]).toEqual([2, ""]);
    expect(swallowed.stderr).toContain("npm took --data-dir for itself: put -- before inboxd's options");
    const bin = await run([process.execPath, "adapters/node/bin.js"], ["seed", "--help"]);
    expect(bin.code).toBe(0);
    expect(bin.stdout).toContain("Usage: inboxd seed");
  });

  it("creates a token shown once, lists it without revealing it, and never stores it", async () => {
    const dir = tempDir();
    const result = await inboxd("token", "create", "--data-dir", dir, "--scope", "read", "--name", "x");
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    const token = lines[lines.length - 1];
    expect(token).toMatch(/^\S{32,}$/);
    const list = await inboxd("token", "list", "--data-dir", dir);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/\bx\b.*\bread\b/);
    expect(list.stdout + list.stderr).not.toContain(token);
    for (const file of ["inboxd.sqlite3", "inboxd.sqlite3-wal"].map((f) => join(dir, f)).filter(existsSync))
      expect(readFileSync(file).includes(token), file).toBe(false);
  });

  it("revokes a token so that a running daemon refuses it within a second", async () => {
    const dir = tempDir();
    const keep = await createToken(dir, "--name", "keep");
    const doomed = await createToken(dir, "--name", "doomed");
    const daemon = await serve(dir);
    expect((await daemon.get("/v1/accounts", doomed)).status).toBe(200);
    const revoked = await inboxd("token", "revoke", "--data-dir", dir, "doomed");
    expect(revoked.code, revoked.stderr).toBe(0);
    // The daemon remembers a verification for at most a second.
    const deadline = Date.now() + 1500;
    let status = (await daemon.get("/v1/accounts", doomed)).status;
    while (status !== 401 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await daemon.get("/v1/accounts", doomed)).status;
    }
    expect(status).toBe(401);
    expect((await daemon.get("/v1/accounts", keep)).status).toBe(200);
    expect((await inboxd("token", "revoke", "--data-dir", dir, "doomed")).code).toBe(1);
    expect(await daemon.stop()).toBe(0);
  }, 30_000);

  it("honours INBOXD_DATA_DIR", async () => {
    const dir = tempDir();
    const created = await run(
      [process.execPath, "--import", "tsx", "adapters/node/cli.ts"],
      ["token", "create", "--name", "from-env"],
      { INBOXD_DATA_DIR: dir },
    );
    expect(created.code, created.stderr).toBe(0);
    expect(existsSync(join(dir, "inboxd.sqlite3"))).toBe(true);
    expect((await inboxd("token", "list", "--data-dir", dir)).stdout).toContain("from-env");
  });

  it("refuses to seed, or to serve a second time, a data directory a running daemon serves", async () => {
    const dir = tempDir();
    const daemon = await serve(dir);
    const seeding = await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50");
    expect(seeding.code).toBe(1);
    expect(seeding.stderr).toMatch(/stop it before seeding/);
    const second = await inboxd("serve", "--data-dir", dir, "--port", "0");
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another inboxd serve/);
    expect(await daemon.stop()).toBe(0);
    // Once stopped, the directory is free again.
    expect((await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50")).code).toBe(0);
  }, 30_000);

  it("refuses to seed a data directory twice", async () => {
    const dir = tempDir();
    expect((await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50")).code).toBe(0);
    const again = await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds data/);
  });

  it("gives the same chats for the same seed options, into a fresh data dir or one that holds only a token", async () => {
    const chatIDs = async (tokenFirst: boolean) => {
      const dir = tempDir();
      const early = tokenFirst ? await createToken(dir) : undefined;
      expect(
        (
          await inboxd(
            "seed",
            "--data-dir",
            dir,
            "--chats",
            "30",
            "--messages",
            "600",
            "--accounts",
            "2",
            "--seed",
            "77",
          )
        ).code,
      ).toBe(0);
      const token = early ?? (await createToken(dir));
      const daemon = await serve(dir);
      const body = (await (await daemon.get("/v1/chats", token)).json()) as { items: { id: string; title: string }[] };
      await daemon.stop();
      return body.items.map((c) => `${c.id} ${c.title}`);
    };
    const first = await chatIDs(false);
    expect(first.length).toBeGreaterThan(10);
    expect(await chatIDs(true)).toEqual(first);
  }, 30_000);
});

const COMMANDS = ["serve", "token", "open", "seed", "webhook"];

describe("inboxd CLI: finding one's way (issue 17)", () => {
  it("prints its version for --version and -v", async () => {
    for (const flag of ["--version", "-v"]) {
      const result = await inboxd(flag);
      expect(result.code, flag).toBe(0);
      expect(result.stdout).toBe(`${VERSION}\n`);
    }
  });

  it("suggests the nearest command for a mistyped one, and none for a word far from all", async () => {
    const serv = await inboxd("serv");
    expect(serv.code).toBe(2);
    expect(serv.stderr).toContain("unknown command serv (did you mean serve?)");
    expect((await inboxd("tokn", "list")).stderr).toContain("did you mean token?");
    expect((await inboxd("frobnicate")).stderr).not.toContain("did you mean");
  });

  it("explains every option of every command on a line of its own, and names INBOXD_DATA_DIR and the default data dir", async () => {
    const xdg = tempDir();
    for (const command of COMMANDS) {
      for (const asked of [
        [command, "--help"],
        ["help", command],
      ]) {
        const result = await run(CLI, asked, { XDG_DATA_HOME: xdg });
        expect(result.code, asked.join(" ")).toBe(0);
        const usage = result.stdout.slice(0, result.stdout.indexOf("\n\n"));
        const flags = new Set([...usage.matchAll(/--[a-z-]+/g)].map((m) => m[0]));
        expect(flags.size, command).toBeGreaterThan(0);
        for (const flag of [...flags, "--data-dir", "--help"])
          expect(result.stdout, `${command}: ${flag}`).toMatch(new RegExp(`^ {2}(-\\w, )?${flag} .*\\S`, "m"));
        expect(result.stdout).toContain("INBOXD_DATA_DIR");
        expect(result.stdout).toContain(join(xdg, "inboxd"));
      }
    }
    // With INBOXD_DATA_DIR set, the help says which directory is in effect, not only the default.
    const fromEnv = await run(CLI, ["token", "--help"], { XDG_DATA_HOME: xdg, INBOXD_DATA_DIR: "/srv/inboxd-data" });
    expect(fromEnv.stdout).toMatch(/now \/srv\/inboxd-data, from INBOXD_DATA_DIR/);
  });

  it("serve --remote-access and --relay: --public-url and --trusted-proxy need remote access, bad values are usage errors, and start-up says who is believed", async () => {
    const dir = tempDir();
    const needs = await inboxd("serve", "--data-dir", dir, "--port", "0", "--public-url", "https://inbox.example.com");
    expect([needs.code, needs.stderr]).toEqual([2, expect.stringContaining("--public-url needs --remote-access")]);
    const cidr = await inboxd(
      "serve",
      "--data-dir",
      dir,
      "--port",
      "0",
      "--remote-access",
      "--trusted-proxy",
      "10.0.0.0/40",
    );
    expect([cidr.code, cidr.stderr]).toEqual([
      2,
      expect.stringContaining("--trusted-proxy: 10.0.0.0/40 is not an IP address or CIDR range"),
    ]);
    const path = await inboxd(
      "serve",
      "--data-dir",
      dir,
      "--port",
      "0",
      "--remote-access",
      "--public-url",
      "https://inbox.example.com/inbox",
    );
    expect([path.code, path.stderr]).toEqual([2, expect.stringContaining("--public-url must be an origin only")]);
    const plain = await run(CLI, ["serve", "--data-dir", dir, "--port", "0", "--relay", "http://relay.example.com"], {
      INBOXD_RELAY_SECRET: "a-secret-of-enough-length",
    });
    expect([plain.code, plain.stderr]).toEqual([
      2,
      expect.stringContaining("--relay must be https:// (plain http only for a relay on this machine"),
    ]);
    const noSecret = await run(
      CLI,
      ["serve", "--data-dir", dir, "--port", "0", "--relay", "https://relay.example.com"],
      { INBOXD_RELAY_SECRET: "" },
    );
    expect([noSecret.code, noSecret.stderr]).toEqual([
      2,
      expect.stringContaining("--relay needs INBOXD_RELAY_SECRET in the environment"),
    ]);
    const daemon = await serve(
      dir,
      "--remote-access",
      "--public-url",
      "https://inbox.example.com",
      "--trusted-proxy",
      "10.0.0.0/8",
    );
    try {
      await daemon.printed(
        /Remote access: forwarded headers from 127\.0\.0\.0\/8, ::1\/128, 10\.0\.0\.0\/8 are believed; answering proxied requests as https:\/\/inbox\.example\.com/,
      );
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
  });

  it("without a command prints the usage to stderr and exits 2, like any usage error; -v is --version only, never a command's flag", async () => {
    const bare = await inboxd();
    expect([bare.code, bare.stdout]).toEqual([2, ""]);
    expect(bare.stderr).toMatch(/^Usage: inboxd <command>/m);
    const serveV = await inboxd("serve", "-v", "--data-dir", tempDir());
    expect(serveV.code).toBe(2);
    expect(serveV.stderr).toContain("Unknown option '-v'");
  });

  it("says in one line when --data-dir is a file or holds a file that is not a database, naming it", async () => {
    const file = join(tempDir(), "a-file");
    writeFileSync(file, "not a directory");
    const notData = tempDir();
    writeFileSync(databasePath(notData), "hello, not SQLite");
    for (const args of [
      ["token", "create"],
      ["token", "list"],
      ["seed", "--chats", "1", "--messages", "1"],
      ["serve", "--port", "0"],
    ]) {
      for (const [dir, named] of [
        [file, file],
        [join(file, "below"), join(file, "below")],
        [notData, databasePath(notData)],
      ]) {
        const result = await inboxd(...args, "--data-dir", dir);
        expect(result.code, `${args.join(" ")} on ${named}`).toBe(2);
        const lines = result.stderr.trimEnd().split("\n");
        expect(lines, result.stderr).toHaveLength(1);
        expect(lines[0]).toContain(named);
        expect(lines[0]).toContain("--data-dir DIR");
        expect(lines[0]).not.toMatch(/EEXIST|ENOTDIR/);
      }
    }
  }, 60_000);

  it("never creates a data directory or database for a command that only reads or removes", async () => {
    const parent = tempDir();
    const empty = tempDir();
    const commands = [
      ["token", "list"],
      ["token", "revoke", "abcdef"],
      ["webhook", "list"],
      ["webhook", "remove", "wh_abcdef"],
      ["open", "--print"],
    ];
    for (const args of commands) {
      for (const dir of [join(parent, "new"), empty]) {
        const result = await inboxd(...args, "--data-dir", dir);
        expect(result.code, args.join(" ")).not.toBe(0);
        expect(result.stderr).toContain(`${dir} holds no inboxd data yet`);
      }
    }
    expect(readdirSync(parent)).toEqual([]);
    expect(readdirSync(empty)).toEqual([]);
  });

  it("lists tokens and webhooks under a header row; revoke and remove take an ID prefix and say inboxd: when nothing matches", async () => {
    const dir = tempDir();
    await createToken(dir, "--name", "listed");
    const tokens = await inboxd("token", "list", "--data-dir", dir);
    expect(tokens.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+SCOPES\s+CREATED/);
    const nosuch = await inboxd("token", "revoke", "nosuch", "--data-dir", dir);
    expect(nosuch.code).toBe(1);
    expect(nosuch.stderr).toMatch(/^inboxd: no token is named nosuch, and no token has an ID starting with nosuch/);
    const tooShort = await inboxd("token", "revoke", "abc", "--data-dir", dir);
    expect([tooShort.code, tooShort.stderr]).toEqual([
      1,
      expect.stringMatching(/abc is too short to pick a token: give at least 6 characters/),
    ]);

    const added = await Promise.all(
      [1, 2].map(async (n) => (await inboxd("webhook", "add", `http://127.0.0.1:9/${n}`, "--data-dir", dir)).stderr),
    );
    const [first, second] = added.map((stderr) => /Added webhook (wh_\w+)/.exec(stderr)![1]);
    const hooks = await inboxd("webhook", "list", "--data-dir", dir);
    const [header, ...rows] = hooks.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^ID\s+URL\s+CHATS\s+CREATED\s+DELIVERED\s+FAILED\s+PENDING\s+CURSOR\s+LAST ERROR$/);
    expect(rows).toHaveLength(2);
    for (const row of rows)
      expect(row).toMatch(/^wh_\w+\s+http:\/\/127\.0\.0\.1:9\/\d\s+\*\s+\S+\s+0\s+0\s+≤0\s+\d+\s+-$/);

    const short = await inboxd("webhook", "remove", first.slice(0, 5), "--data-dir", dir);
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(
      /^inboxd: wh_\w+ is too short to pick a webhook: give at least 6 characters of its ID/,
    );
    const nowhere = await inboxd("webhook", "remove", "wh_zzzzzzzz", "--data-dir", dir);
    expect([nowhere.code, nowhere.stderr]).toEqual([
      1,
      expect.stringMatching(/^inboxd: no webhook has an ID starting with wh_zzzzzzzz/),
    ]);
    const removed = await inboxd("webhook", "remove", first.slice(0, 8), "--data-dir", dir);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(`removed ${first}\n`);
    const left = (await inboxd("webhook", "list", "--data-dir", dir)).stdout;
    expect(left).not.toContain(first);
    expect(left).toContain(second);

    // Two IDs that share a prefix (made up: real ones are random) make it ambiguous.
    const { storage, close } = await openSqliteStorage(databasePath(dir));
    for (const id of ["wh_abcdef01", "wh_abcdef02"])
      await storage.setItem(`webhook:${id}`, {
        id,
        url: "http://127.0.0.1:9/",
        chatIDs: ["*"],
        secret: "whsec_x",
        createdAt: new Date().toISOString(),
      });
    await close();
    // The same for tokens: an ID prefix two share revokes neither.
    const twins = await openSqliteStorage(databasePath(dir));
    for (const id of ["abcdef0123", "abcdef4567"])
      await twins.storage.setItem(`tok:${id}`, {
        name: `twin-${id}`,
        scopes: ["read"],
        createdAt: new Date().toISOString(),
        hint: "inbx_xxxx",
      });
    await twins.close();
    const both = await inboxd("token", "revoke", "abcdef", "--data-dir", dir);
    expect([both.code, both.stderr]).toEqual([
      1,
      expect.stringMatching(/abcdef matches 2 tokens \(abcdef0123, abcdef4567\); give more of the ID/),
    ]);
    expect((await inboxd("token", "list", "--data-dir", dir)).stdout).toMatch(/abcdef0123[\s\S]*abcdef4567/);
    const ambiguous = await inboxd("webhook", "remove", "wh_abcdef", "--data-dir", dir);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toMatch(/^inboxd: wh_abcdef matches 2 webhooks \(wh_abcdef01, wh_abcdef02\)/);
    expect((await inboxd("webhook", "remove", "wh_abcdef02", "--data-dir", dir)).code).toBe(0);
  }, 30_000);

  it("says at start-up that only loopback names are answered when --host is not loopback and no --allow-host is given", async () => {
    const note = /only requests whose Host is a loopback name .*--allow-host NAME/;
    for (const [args, noted] of [
      [["--host", "0.0.0.0"], true],
      [["--host", "0.0.0.0", "--allow-host", "inbox.example"], false],
      [[], false],
    ] as const) {
      const daemon = await serve(tempDir(), ...args);
      expect(await daemon.stop()).toBe(0);
      expect(note.test(daemon.output().stderr), args.join(" ")).toBe(noted);
      // A wildcard bind is reached here through loopback: the links it prints must be ones the daemon answers.
      if (args[1] === "0.0.0.0")
        expect(daemon.output().stdout).toMatch(/http:\/\/127\.0\.0\.1:\d+\/oauth\/login\?code=/);
      expect(daemon.output().stdout).not.toContain("http://0.0.0.0");
    }
  }, 30_000);
});

describe("inboxd seed, interrupted (issue 17)", () => {
  const big = ["--chats", "4000", "--messages", "1000000"];

  it("on SIGINT says so, leaves no partial dataset, and the next seed succeeds (stdout and stderr not a terminal)", async () => {
    for (const tokenFirst of [false, true]) {
      const dir = tempDir();
      const token = tokenFirst ? await createToken(dir, "--name", "kept") : undefined;
      const seeding = start(["seed", "--data-dir", dir, ...big]);
      await seeding.printed(/seeding: \d+\/1000000 messages/);
      seeding.child.kill("SIGINT");
      expect(await seeding.exited).toBe(130);
      const { stdout, stderr } = seeding.output();
      expect(stderr).toContain(`inboxd: seed interrupted (SIGINT); nothing was written to ${dir}`);
      // No progress bar without a terminal, so nothing turned line wrapping off.
      expect(stdout + stderr).not.toContain("\x1b[?7l");
      expect(readdirSync(dir).sort()).toEqual(tokenFirst ? ["inboxd.lock", "inboxd.sqlite3"] : ["inboxd.lock"]);
      const again = await inboxd("seed", "--data-dir", dir, "--chats", "20", "--messages", "200");
      expect(again.code, again.stderr).toBe(0);
      if (token) expect((await inboxd("token", "list", "--data-dir", dir)).stdout).toContain("kept");
    }
  }, 60_000);

  // A real terminal, through util-linux `script` (a pty): the progress bar turns line wrapping off, and Ctrl-C
  // (the ^C byte, which the terminal turns into SIGINT) must turn it back on.
  it.skipIf(!existsSync("/usr/bin/script"))(
    "on Ctrl-C in a terminal stops the progress bar, restoring line wrapping",
    async () => {
      const dir = tempDir();
      const command = [...CLI, "seed", "--data-dir", dir, ...big].map((arg) => `'${arg}'`).join(" ");
      const child = spawn("script", ["-qfec", command, "/dev/null"], {
        cwd: ROOT,
        env: { ...process.env, INBOXD_DATA_DIR: "" },
      });
      children.add(child);
      let output = "";
      child.stdout.on("data", (d) => (output += d));
      const exited = once(child, "exit");
      while (!/[1-9]\d*\/1000000 messages/.test(output)) await once(child.stdout, "data");
      child.stdin.write("\x03");
      const [code] = await exited;
      child.stdin.end();
      expect(code, output).toBe(130);
      const off = output.lastIndexOf("\x1b[?7l");
      expect(off).toBeGreaterThanOrEqual(0);
      expect(output.indexOf("\x1b[?7h", off), "line wrapping restored").toBeGreaterThan(off);
      expect(output).toContain("inboxd: seed interrupted (SIGINT)");
      expect((await inboxd("seed", "--data-dir", dir, "--chats", "20", "--messages", "200")).code).toBe(0);
    },
    60_000,
  );
});

describe("the data-dir lock (issue 17, item 20)", () => {
  it("a daemon killed with SIGKILL never blocks the next start, whatever live PID its leftovers name", async () => {
    const dir = tempDir();
    const killed = await serve(dir);
    expect(lockHolder(dir)).toMatchObject({ command: "serve", pid: killed.child.pid });
    killed.child.kill("SIGKILL");
    await killed.exited;
    // As after a reboot that gave the dead daemon's PID to another process: its lock row and an inboxd.pid of an
    // older version both name a live process (this one).
    const lock = defaultBinding().open(join(dir, "inboxd.lock"));
    lock.prepare("UPDATE holder SET pid = ?").run(process.pid);
    lock.close();
    writeFileSync(join(dir, "inboxd.pid"), `${process.pid}\n`);
    expect(lockHolder(dir)).toBeUndefined();
    const next = await serve(dir);
    expect(existsSync(join(dir, "inboxd.pid"))).toBe(false);
    expect(await next.stop()).toBe(0);
    expect(lockHolder(dir)).toBeUndefined();
  }, 30_000);

  it("of two daemons started at once on one data dir, exactly one serves", async () => {
    for (let round = 0; round < 3; round++) {
      const dir = tempDir();
      const both = [
        start(["serve", "--data-dir", dir, "--port", "0"]),
        start(["serve", "--data-dir", dir, "--port", "0"]),
      ];
      const outcomes = await Promise.all(
        both.map((one) =>
          Promise.race([
            one.printed(/inboxd listening/).then(() => "serving"),
            one.exited.then((code) => `exit ${code}`),
          ]),
        ),
      );
      expect([...outcomes].sort(), JSON.stringify(both.map((one) => one.output()))).toEqual(["exit 1", "serving"]);
      const [winner, loser] = outcomes[0] === "serving" ? both : [both[1], both[0]];
      // Who holds the lock is told when the winner has recorded it; at the very same instant the message is generic.
      const refusal = loser.output().stderr;
      expect(refusal).toMatch(/another inboxd (serve \(pid \d+|is using)/);
      if (/\(pid \d+/.test(refusal)) expect(refusal).toContain(`another inboxd serve (pid ${winner.child.pid}`);
      winner.child.kill("SIGTERM");
      expect(await winner.exited).toBe(0);
    }
  }, 60_000);

  it("refuses seed beside a running daemon, while token, webhook and open keep working", async () => {
    const dir = tempDir();
    const daemon = await serve(dir);
    const seeding = await inboxd("seed", "--data-dir", dir, "--chats", "5", "--messages", "50");
    expect(seeding.code).toBe(1);
    expect(seeding.stderr).toMatch(
      new RegExp(
        `^inboxd: another inboxd serve \\(pid ${daemon.child.pid}, since .*\\) is using .*; stop it before seeding`,
      ),
    );
    const token = await createToken(dir, "--name", "beside");
    expect((await daemon.get("/v1/accounts", token)).status).toBe(200);
    expect((await inboxd("token", "list", "--data-dir", dir)).stdout).toContain("beside");
    expect((await inboxd("webhook", "add", "http://127.0.0.1:9/", "--data-dir", dir)).code).toBe(0);
    expect((await inboxd("webhook", "list", "--data-dir", dir)).stdout).toContain("http://127.0.0.1:9/");
    // open links to the daemon serving the directory, on whatever port it was given (here a random one).
    const opened = await inboxd("open", "--print", "--data-dir", dir);
    expect(opened.stdout).toMatch(new RegExp(`^${daemon.url.replace(/[.]/g, "\\.")}/oauth/login\\?code=`));
    expect(opened.stderr).not.toMatch(/no inboxd serve/);
    const signedIn = await fetch(opened.stdout.trim(), { redirect: "manual" });
    expect(signedIn.status, "the link works on the daemon it names").toBe(303);
    expect((await inboxd("token", "revoke", "beside", "--data-dir", dir)).code).toBe(0);
    expect(await daemon.stop()).toBe(0);
    // With no daemon serving the directory, open says so (the link is for the default port, or the one given).
    const idle = await inboxd("open", "--print", "--data-dir", dir, "--port", "23999");
    expect(idle.stdout).toMatch(/^http:\/\/127\.0\.0\.1:23999\/oauth\/login\?code=/);
    expect(idle.stderr).toContain(
      `no inboxd serve is running on ${dir} yet: this link works once one serves it at http://127.0.0.1:23999`,
    );
  }, 30_000);
});
