/**
 * The programs in examples/ run as a reader would run them — `node examples/….mjs`, `python3 examples/….py`, as
 * child processes with INBOXD_URL and INBOXD_TOKEN — against a real daemon on loopback (test/harness/node.ts), so a
 * change that breaks one fails `npm test`. Each is judged on its exit code and the lines it prints.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../bench/daemon.ts";
import { startNode, type NodeHarness } from "./harness/node.ts";
import { ROOT } from "./harness/process.ts";
import type { Chat } from "../src/schema/wire.ts";
import { chatPath } from "./kit/common.ts";
import { echoChat, echoReply, ok, type Env } from "./scenario/kit.ts";

const token = `inbx_examples_${randomBytes(12).toString("hex")}`;
let daemon: NodeHarness;
/** What the scenario kit's request helpers need: the daemon and the read+write token. */
let env: Env;
let echo: Chat;
const unique = (word: string) => `${word}${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  daemon = await startNode({
    seed: { chats: 12, messages: 150, accounts: 1, seed: 5 },
    tokens: [{ token, scopes: ["read", "write"] }],
  });
  env = { url: daemon.url, rw: token } as Env;
  echo = await echoChat(env, (await ok<{ accountID: string }[]>(env, "/v1/accounts"))[0].accountID);
});

afterAll(async () => {
  for (const child of running) child.kill("SIGKILL");
  await daemon?.stop();
});

/** Sends a text to the Echo chat and resolves once Echo's reply is stored (so both are in the event log). */
async function echoRoundTrip(text: string) {
  const sent = await ok<{ pendingMessageID: string }>(env, `${chatPath(echo.id)}/messages`, {
    method: "POST",
    json: { text },
  });
  return echoReply(env, echo.id, sent.pendingMessageID);
}

interface Program {
  /** Everything printed on stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` on stdout, waiting for it up to `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code once the program has exited (after `signal`, when given). */
  exit(signal?: NodeJS.Signals): Promise<number | null>;
}

const running = new Set<ChildProcess>();

/** Starts an example from the repository root with the daemon's URL and token in its environment (plus `extra`). */
function start(command: string, args: string[], extra: Record<string, string | undefined> = {}): Program {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, INBOXD_URL: daemon.url, INBOXD_TOKEN: token, ...extra },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (data: Buffer) => (stdout += data));
  child.stderr!.on("data", (data: Buffer) => (stderr += data));
  const exited = new Promise<number | null>((resolve) =>
    child.once("close", (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  const shown = () => `stdout:\n${stdout}\nstderr:\n${stderr}`;
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    async waitFor(pattern, timeoutMs = 8000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const match = stdout.match(pattern);
        if (match) return match;
        if (Date.now() > until || child.exitCode !== null || child.signalCode !== null)
          throw new Error(`${args.join(" ")}: no line matching ${pattern} within ${timeoutMs} ms\n${shown()}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async exit(signal) {
      if (signal && child.exitCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Runs an example to its end: its exit code and output. */
async function run(command: string, args: string[], extra: Record<string, string | undefined> = {}) {
  const program = start(command, args, extra);
  const code = await program.exit();
  return { code, stdout: program.stdout(), stderr: program.stderr() };
}

describe("examples/sdk.mjs (the official SDK)", () => {
  it("lists the accounts, sends to Echo and prints Echo's reply", async () => {
    const text = unique("hello-sdk-");
    const { code, stdout } = await run("node", ["examples/sdk.mjs", text]);
    expect(stdout).toMatch(/^account local-sandbox_\S+ \(Sandbox\): /m);
    expect(stdout).toContain(`Echo chat ${echo.id}`);
    expect(stdout).toMatch(new RegExp(`^sent \\S+: ${text}$`, "m"));
    expect(stdout).toMatch(new RegExp(`^reply \\S+ from Echo: Echo: ${text}$`, "m"));
    expect(code).toBe(0);
  });

  it("exits 1 with the error when the token is refused", async () => {
    const { code, stderr } = await run("node", ["examples/sdk.mjs"], { INBOXD_TOKEN: "inbx_not-a-token" });
    expect(code).toBe(1);
    expect(stderr).toContain('failed: HTTP 401 {"code":"UNAUTHORIZED"');
  });
});

describe("examples/websocket.mjs (ws on Node 20, resuming by eventID)", () => {
  it("prints live events, and after a dropped connection replays what it missed, once and in order", async () => {
    const link = await cuttableLink(new URL(daemon.url));
    const ws = start("node", ["examples/websocket.mjs"], { INBOXD_URL: link.url });
    try {
      await ws.waitFor(/^subscribed to every chat, starting after eventID \d+$/m);
      const first = unique("first-");
      await echoRoundTrip(first);
      await ws.waitFor(new RegExp(`message.upserted .*Echo: "Echo: ${first}"`));

      // Cut the connection and keep it cut until the next message and Echo's reply are logged: the client can
      // only learn of them from the log, by resuming after the last eventID it printed.
      link.cut();
      await ws.waitFor(/^disconnected; reconnecting/m);
      const second = unique("second-");
      await echoRoundTrip(second);
      link.restore();
      await ws.waitFor(new RegExp(`message.upserted .*Echo: "Echo: ${second}"`));
      expect(await ws.exit("SIGTERM")).toBe(0);

      const lines = ws.stdout().split("\n");
      const ids = lines.flatMap((line) => /^event (\d+) /.exec(line)?.[1] ?? []).map(Number);
      expect(ids.length).toBeGreaterThanOrEqual(4);
      expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b)); // no event twice, none out of order
      const resumed = lines
        .filter((line) => line.startsWith("subscribed"))
        .map((line) => Number(/eventID (\d+)/.exec(line)![1]));
      expect(resumed.length).toBeGreaterThanOrEqual(2);
      const beforeCut = lines.slice(
        0,
        lines.findIndex((line) => line.startsWith("disconnected")),
      );
      // The reconnect resumed exactly after the last event printed before the cut…
      expect(resumed.at(-1)).toBe(
        Math.max(...beforeCut.flatMap((line) => /^event (\d+) /.exec(line)?.[1] ?? []).map(Number)),
      );
      // …and what was logged while cut came after it, from the log.
      const secondLine = lines.find((line) => line.includes(`"${second}"`))!;
      expect(Number(/^event (\d+) /.exec(secondLine)![1])).toBeGreaterThan(resumed.at(-1)!);
      expect(ws.stdout()).toMatch(new RegExp(`^stopped; resume with INBOXD_SINCE=${ids.at(-1)}$`, "m"));
    } finally {
      await ws.exit("SIGKILL");
      await link.close();
    }
  });

  it("exits 1 when /v1/ws refuses the token", async () => {
    const { code, stderr } = await run("node", ["examples/websocket.mjs"], {
      INBOXD_TOKEN: "inbx_not-a-token",
      INBOXD_SINCE: "0",
    });
    expect(code).toBe(1);
    expect(stderr).toContain("failed: /v1/ws refused the token: HTTP 401");
  });
});

describe("examples/webhook-receiver.mjs", () => {
  it("verifies inboxd's signed deliveries, refuses forged and stale ones, and handles a repeated delivery once", async () => {
    const port = await freePort();
    const hook = await ok<{ id: string; secret: string }>(env, "/v1/webhooks", {
      method: "POST",
      json: { url: `http://127.0.0.1:${port}/`, chatIDs: [echo.id] },
    });
    const receiver = start("node", ["examples/webhook-receiver.mjs"], {
      PORT: String(port),
      INBOXD_WEBHOOK_SECRET: hook.secret,
    });
    try {
      await receiver.waitFor(/^listening on /m);

      // Someone without the secret, and someone replaying a delivery signed 10 minutes ago.
      const post = (secret: string, timestamp: number, deliveryID: string) => {
        const body = JSON.stringify({
          type: "message.upserted",
          eventID: 1,
          chatID: echo.id,
          ids: [],
          deliveryID,
          webhookID: hook.id,
        });
        const signature = createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
        return fetch(`http://127.0.0.1:${port}/`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-inboxd-timestamp": String(timestamp),
            "x-inboxd-signature": `sha256=${signature}`,
            "x-inboxd-delivery": deliveryID,
          },
          body,
        });
      };
      const now = Math.floor(Date.now() / 1000);
      expect((await post("whsec_guessed", now, "dlv_forged_1")).status).toBe(401);
      expect((await post(hook.secret, now - 600, "dlv_stale_1")).status).toBe(401);
      await receiver.waitFor(/^rejected delivery dlv_forged_1: bad signature$/m);
      await receiver.waitFor(/^rejected delivery dlv_stale_1: stale timestamp \(\d+ s old\)$/m);

      const text = unique("hook-");
      await echoRoundTrip(text);
      const [, firstEventID, firstDelivery] = await receiver.waitFor(
        new RegExp(
          `^verified message.upserted eventID=(\\d+) delivery=(\\S+) chat=\\S+ Sandbox User 1: "${text}"$`,
          "m",
        ),
      );
      await receiver.waitFor(
        new RegExp(`^verified message.upserted eventID=\\d+ delivery=\\S+ chat=\\S+ Echo: "Echo: ${text}"$`, "m"),
      );
      expect(firstDelivery).toBe(`dlv_${hook.id.replace(/^wh_/, "")}_${firstEventID}`);

      // inboxd delivers at least once: a replay sends the same delivery IDs again, which the receiver skips.
      await ok(env, `/v1/webhooks/${hook.id}/replay?since=${Number(firstEventID) - 1}`, { method: "POST" });
      await receiver.waitFor(new RegExp(`^duplicate delivery ${firstDelivery}: already handled$`, "m"));
      expect(receiver.stdout().match(new RegExp(`^verified .* delivery=${firstDelivery} `, "gm"))).toHaveLength(1);
      expect(await receiver.exit("SIGTERM")).toBe(0);
    } finally {
      await receiver.exit("SIGKILL");
      await ok(env, `/v1/webhooks/${hook.id}`, { method: "DELETE" }, 204);
    }
  });

  it("exits non-zero without a secret", async () => {
    expect((await run("node", ["examples/webhook-receiver.mjs"], { INBOXD_WEBHOOK_SECRET: "" })).code).toBe(2);
  });
});

describe("examples/python_stdlib.py (Python 3, standard library only)", () => {
  const python3 = () => {
    const probe = spawnSync("python3", ["--version"]);
    if (probe.error || probe.status !== 0)
      throw new Error(
        "python3 is not installed: examples/python_stdlib.py is tested with it. Install it (Debian: apt-get install python3; .ci/run does).",
      );
  };

  it("lists chats, finds a message by its words and sends one", async () => {
    python3();
    const word = unique("pyword");
    await echoRoundTrip(`a message with ${word} in it`);
    const { code, stdout } = await run("python3", ["examples/python_stdlib.py", word]);
    expect(stdout).toMatch(/^chats \(first page, \d+\):$/m);
    expect(stdout).toContain(`  ${echo.id}  Echo  unread=`);
    expect(stdout).toContain(`messages matching '${word}': 2 shown, more: False`); // the message and Echo's reply
    expect(stdout).toContain(`Sandbox User 1: a message with ${word} in it`);
    expect(stdout).toMatch(/^sent \S+ to Echo: hello from Python \((PENDING|SUCCESS)\)$/m);
    expect(code).toBe(0);
  });

  it("takes the main README's TOKEN and API when INBOXD_TOKEN and INBOXD_URL are not set", async () => {
    python3();
    const { code, stdout, stderr } = await run("python3", ["examples/python_stdlib.py", "nothing-matches-this"], {
      INBOXD_URL: undefined,
      INBOXD_TOKEN: undefined,
      API: daemon.url,
      TOKEN: token,
    });
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^chats \(first page, \d+\):$/m);
  });

  it("exits 1 with inboxd's error body when the token is refused", async () => {
    python3();
    const { code, stdout, stderr } = await run("python3", ["examples/python_stdlib.py"], {
      INBOXD_TOKEN: "inbx_not-a-token",
    });
    expect({ code, stdout }).toEqual({ code: 1, stdout: "" });
    expect(stderr).toContain('failed: HTTP 401 {"code":"UNAUTHORIZED"');
  });
});

/**
 * A TCP relay in front of the daemon that the test can cut: `cut()` drops every connection through it and turns new
 * ones away (accepted, then closed) until `restore()`. A real network interruption, between a real client and server.
 */
async function cuttableLink(target: URL) {
  let up = true;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
  };
  const server = net.createServer((client) => {
    track(client);
    if (!up) return client.destroy();
    const upstream = net.connect(Number(target.port), target.hostname);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cut() {
      up = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      up = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
