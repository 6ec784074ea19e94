/**
 * Process-level behaviour of the daemon (Node only): the real CLI in child processes, stopped with SIGTERM or
 * killed with SIGKILL. Reminders that came due while it was down fire on start; webhook deliveries survive
 * `kill -9` and are retried after a restart with the same delivery ID; `inboxd webhook add|list|remove` edits the
 * config of a running daemon.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Chat } from "../../src/schema/wire.ts";
import { chatPath, enc, sleep, waitFor } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { connect, Receiver, signatureValid } from "./kit.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const children = new Set<ChildProcess>();

/** Runs one CLI command to completion. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "adapters/node/cli.ts", ...args], { cwd: ROOT });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return once(child, "exit").then(([code]) => ({ code: code as number | null, stdout, stderr }));
}

/** Starts `inboxd serve --port 0` on the data dir; resolves with the URL it printed. */
async function daemon(dataDir: string) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "adapters/node/cli.ts", "serve", "--data-dir", dataDir, "--port", "0"],
    { cwd: ROOT },
  );
  children.add(child);
  const exited = once(child, "exit");
  child.once("exit", () => children.delete(child));
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon did not start: ${stdout} ${stderr}`)), 30_000);
    const onData = () => {
      const match = /inboxd listening on (\S+)/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      resolve(match[1]);
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`daemon exited with ${code}: ${stdout} ${stderr}`));
    });
  });
  return {
    url,
    async term() {
      child.kill("SIGTERM");
      const [code] = await exited;
      return code as number | null;
    },
    async kill9() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/**
 * Changes the chat's description, again and again, until `receiver` is delivered one of those changes, and answers
 * that delivery. A webhook the CLI added is delivered to once the running daemon has re-read its config, which it
 * does on its own ("within 2 s") and then delivers with the next change; when is not for a test on a busy machine to
 * say, so the deadline is generous, reached only when the daemon never picks the webhook up.
 */
async function deliveredChange(api: Api, receiver: Receiver, chatID: string, label: string, timeoutMs = 30_000) {
  const made = new Set<string>();
  const deadline = Date.now() + timeoutMs;
  for (let n = 1; ; n++) {
    const description = `${label} ${n} ${Date.now()}`;
    made.add(description);
    await api.ok("PATCH", chatPath(chatID), { description });
    const next = Math.min(deadline, Date.now() + 1000);
    do {
      const got = receiver.deliveries.find((x) => made.has(x.json?.entries?.[0]?.description));
      if (got) return got;
      await sleep(25);
    } while (Date.now() < next);
    if (Date.now() >= deadline)
      throw new Error(`no change of ${label} was delivered to ${receiver.url} within ${timeoutMs} ms`);
  }
}

describe("the daemon as a process: reminders and webhooks across restarts, the webhook CLI", () => {
  let dataDir: string;
  let token: string;
  let chats: Chat[];
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "inboxd-events-daemon-"));
    const seeded = await cli(["seed", "--data-dir", dataDir, "--chats", "8", "--messages", "80", "--seed", "13"]);
    expect(seeded.code, seeded.stderr).toBe(0);
    const created = await cli(["token", "create", "--data-dir", dataDir, "--name", "events"]);
    expect(created.code, created.stderr).toBe(0);
    token = created.stdout.trim().split("\n").pop()!;
    const d = await daemon(dataDir);
    const api = new Api(d.url, token);
    chats = await api.quietChats((await api.get("/v1/accounts"))[0].accountID, 4);
    expect(await d.term()).toBe(0);
  }, 120_000);

  afterAll(async () => {
    for (const child of children) child.kill("SIGKILL");
    for (const r of receivers) await r.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("fires a reminder that came due while the daemon was stopped as soon as it starts again", async () => {
    // The reminder must come due while the daemon is stopped: it is set a little ahead, and when setting it and
    // stopping the daemon took longer than that (a busy machine), it may have fired before the stop; then again,
    // further ahead.
    let at = 0;
    for (let ahead = 2000; ; ahead *= 2) {
      const first = await daemon(dataDir);
      const api = new Api(first.url, token);
      at = Date.now() + ahead;
      await api.ok("POST", `${chatPath(chats[0].id)}/reminders`, { reminder: { remindAtMs: at } });
      const set = (await api.chat(chats[0].id)).reminder;
      expect(await first.term()).toBe(0);
      if (Date.now() < at) {
        expect(set).toMatchObject({ remindAtMs: at, isFired: false });
        break;
      }
      if (ahead >= 16_000)
        throw new Error(
          `setting a reminder and stopping the daemon kept taking longer than the reminder was ahead (last ${ahead} ms)`,
        );
    }
    await sleep(Math.max(0, at - Date.now()) + 500);
    const started = Date.now();
    const second = await daemon(dataDir);
    const again = new Api(second.url, token);
    const chat = await again.chat(chats[0].id);
    expect(chat.reminder).toMatchObject({ remindAtMs: at, isFired: true });
    const firedAt = Date.parse(chat.reminder!.firedAt!);
    expect(firedAt).toBeGreaterThanOrEqual(started - 1000);
    await again.ok("DELETE", `${chatPath(chats[0].id)}/reminders`);
    expect(await second.term()).toBe(0);
  }, 60_000);

  it("fires a reminder set on a running daemon at its time (timer), with a chat.upserted", async () => {
    const d = await daemon(dataDir);
    try {
      const api = new Api(d.url, token);
      const c = await connect(d.url, token, [chats[1].id]);
      const at = Date.now() + 1500;
      await api.ok("POST", `${chatPath(chats[1].id)}/reminders`, { reminder: { remindAtMs: at } });
      const fired = await c.event("chat.upserted", chats[1].id, {
        timeoutMs: 10_000,
        where: (e) => e.entries?.[0]?.reminder?.isFired === true,
      });
      expect(Date.parse(fired.entries![0].reminder.firedAt)).toBeGreaterThanOrEqual(at);
      c.close();
      await api.ok("DELETE", `${chatPath(chats[1].id)}/reminders`);
    } finally {
      await d.term();
    }
  }, 60_000);

  it("redelivers after kill -9: an event made while the receiver was down arrives after the restart, same delivery ID", async () => {
    // A port that refuses connections now and can be listened on later.
    const receiver = await new Receiver().start();
    receivers.push(receiver);
    await receiver.stop();
    const first = await daemon(dataDir);
    const api = new Api(first.url, token);
    const hook = await api.ok("POST", "/v1/webhooks", { url: receiver.url });
    const description = `while down ${Date.now()}`;
    await api.ok("PATCH", chatPath(chats[2].id), { description });
    const failing = await waitFor("a failed attempt", async () => {
      const s = await api.get(`/v1/webhooks/${enc(hook.id)}`);
      return s.lastError && s;
    });
    expect(failing.pending).toBe(1);
    const deliveryID = failing.lastError.deliveryID as string;
    await first.kill9();
    await receiver.start(); // same port
    const second = await daemon(dataDir);
    const d = await receiver.waitFor(
      "the redelivery",
      (x) => x.json?.entries?.[0]?.description === description,
      15_000,
    );
    expect(d.headers["x-inboxd-delivery"]).toBe(deliveryID);
    expect(d.json.deliveryID).toBe(deliveryID);
    expect(signatureValid(d, hook.secret)).toBe(true);
    const again = new Api(second.url, token);
    const s = await waitFor("delivered after the restart", async () => {
      const x = await again.get(`/v1/webhooks/${enc(hook.id)}`);
      return x.pending === 0 && x.delivered === 1 && x;
    });
    expect(s.failed).toBe(0);
    await again.ok("DELETE", `/v1/webhooks/${enc(hook.id)}`);
    expect(await second.term()).toBe(0);
  }, 60_000);

  it("webhook add prints the secret last; list hides it; a running daemon picks it up on its own and delivers to it", async () => {
    const receiver = await new Receiver().start();
    receivers.push(receiver);
    const d = await daemon(dataDir);
    try {
      const api = new Api(d.url, token);
      const added = await cli(["webhook", "add", receiver.url, "--data-dir", dataDir]);
      expect(added.code, added.stderr).toBe(0);
      const secret = added.stdout.trim().split("\n").pop()!;
      expect(secret).toMatch(/^\S{16,}$/);
      const listed = await cli(["webhook", "list", "--data-dir", dataDir]);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain(receiver.url);
      expect(listed.stdout + listed.stderr).not.toContain(secret);
      // No API call about webhooks before the delivery: GET /v1/webhooks would make the daemon re-read its config.
      const got = await deliveredChange(api, receiver, chats[3].id, "cli hook");
      expect(signatureValid(got, secret)).toBe(true);
      const hook = (await api.get("/v1/webhooks")).items.find((h: { url: string }) => h.url === receiver.url);
      expect(hook).toBeDefined();
      expect(JSON.stringify(hook)).not.toContain(secret);
      expect(listed.stdout).toContain(hook.id);
      const removed = await cli(["webhook", "remove", hook.id, "--data-dir", dataDir]);
      expect(removed.code).toBe(0);
      expect((await cli(["webhook", "list", "--data-dir", dataDir])).stdout).not.toContain(hook.id);
    } finally {
      await d.term();
    }
  }, 60_000);

  it("webhook remove on a running daemon: once it has picked the change up, nothing more is delivered", async () => {
    const receiver = await new Receiver().start();
    const control = await new Receiver().start();
    receivers.push(receiver, control);
    const d = await daemon(dataDir);
    try {
      const api = new Api(d.url, token);
      const hook = await api.ok("POST", "/v1/webhooks", { url: receiver.url });
      await api.ok("PATCH", chatPath(chats[3].id), { description: `before remove ${Date.now()}` });
      await receiver.waitFor("a delivery before the removal", () => true);
      const removed = await cli(["webhook", "remove", hook.id, "--data-dir", dataDir]);
      expect(removed.code, removed.stderr).toBe(0);
      // The daemon picks the removal up when it next re-reads its config on its own. To see that it has without
      // asking (an API call about webhooks would make it re-read), the control webhook is added with the CLI after
      // the removal: the daemon delivers to it only after a re-read that finds it, and so finds the removal too.
      const added = await cli(["webhook", "add", control.url, "--data-dir", dataDir]);
      expect(added.code, added.stderr).toBe(0);
      const keptID = /Added webhook (wh_\w+)/.exec(added.stderr)?.[1];
      expect(keptID, added.stderr).toBeDefined();
      await deliveredChange(api, control, chats[3].id, "until the re-read");
      const description = `after remove ${Date.now()}`;
      await api.ok("PATCH", chatPath(chats[3].id), { description });
      await control.waitFor(
        "the same event on the kept webhook",
        (x) => x.json?.entries?.[0]?.description === description,
        30_000,
      );
      await waitFor(
        "nothing pending on the kept webhook",
        async () => (await api.get(`/v1/webhooks/${enc(keptID!)}`)).pending === 0,
        30_000,
      );
      expect(receiver.deliveries.filter((x) => x.json?.entries?.[0]?.description === description)).toEqual([]);
      expect((await api.raw("GET", `/v1/webhooks/${enc(hook.id)}`)).status).toBe(404);
      await api.ok("DELETE", `/v1/webhooks/${enc(keptID!)}`);
    } finally {
      await d.term();
    }
  }, 60_000);
});
