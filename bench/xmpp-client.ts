/**
 * Helpers of the XMPP benchmark (bench/xmpp.ts): a daemon started the way bench/daemon.ts starts one but with extra
 * node flags (--cpu-prof), the one HTTP client (test/kit/http.ts) on a keep-alive connection, the local-xmpp login,
 * the account's status timeline, a count of a chat's stored messages, and latency percentiles from an HDR histogram.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import * as hdr from "hdr-histogram-js";
import { sleep } from "../test/kit/common.ts";
import { Api } from "../test/kit/http.ts";
import { nodeFetch } from "../test/kit/node-http.ts";
import { cpuSeconds, freePort, ROOT, spawnNode, waitUntilServing } from "./daemon.ts";

/** A running `inboxd serve` (its own process: the bench's XMPP peers do not share its event loop). */
export interface XmppDaemon {
  pid: number;
  url: string;
  stop(): Promise<void>;
}

/** `inboxd serve` on a free port with extra node flags; resolves once GET /v1/chats answers 200. */
export async function startDaemonWith(dir: string, token: string, nodeArgs: string[] = []): Promise<XmppDaemon> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnNode(
    join(ROOT, "adapters/node/cli.ts"),
    ["serve", "--data-dir", dir, "--port", String(port)],
    nodeArgs,
  );
  let output = "";
  child.stdout!.on("data", (d) => (output = (output + d).slice(-20_000)));
  child.stderr!.on("data", (d) => (output = (output + d).slice(-20_000)));
  await waitUntilServing(child, url, token, () => output);
  // SIGTERM: the daemon stops cleanly and exits 0, so that --cpu-prof writes its profile.
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
  return { pid: child.pid!, url, stop };
}

/**
 * CPU seconds the whole machine spent busy so far (all CPUs, all processes; /proc/stat, CLK_TCK = 100), beside the
 * bench process's own: with the daemon's and Prosody's, what is left was taken by other processes.
 */
export function machineCpu(): { busy: number; bench: number } {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, _idle, _iowait, irq, softirq, steal] = fields;
  const { user: benchUser, system: benchSystem } = process.cpuUsage();
  return { busy: (user + nice + system + irq + softirq + steal) / 100, bench: (benchUser + benchSystem) / 1e6 };
}

/**
 * Starts a CPU window over the given processes; the function it answers ends it: wall seconds, each process's CPU
 * seconds, and the CPU seconds every other process of the machine took meanwhile (the bench process excluded).
 */
export function cpuWindow(pids: number[]): () => { seconds: number; own: number[]; otherSeconds: number } {
  const started = { at: performance.now(), own: pids.map(cpuSeconds), ...machineCpu() };
  return () => {
    const now = machineCpu();
    const own = pids.map((pid, i) => cpuSeconds(pid) - started.own[i]);
    const ours = own.reduce((sum, x) => sum + x, 0) + now.bench - started.bench;
    return {
      seconds: (performance.now() - started.at) / 1000,
      own,
      otherSeconds: Math.max(0, now.busy - started.busy - ours),
    };
  };
}

/** The one client on one keep-alive connection (sequential use), so a timed request pays no connection setup. */
export type KeepAliveApi = Api & { close(): void };

export function keepAliveApi(url: string, token: string): KeepAliveApi {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return Object.assign(new Api(url, token, { fetch: nodeFetch(agent) }), { close: () => agent.destroy() });
}

/**
 * Signs in through a bridge's login-session API, one `user_input` step with `fields`; resolves with the account's ID
 * and the moment (performance.now()) the session was seen complete. `who` names the login in errors.
 */
export async function loginWith(
  api: Api,
  bridgeID: string,
  flowID: string,
  fields: Record<string, string>,
  who: string,
): Promise<{ accountID: string; completeAt: number; loginMs: number }> {
  const base = `/v1/bridges/${encodeURIComponent(bridgeID)}/login-sessions`;
  const started = performance.now();
  const session = await api.post(base, { flowID });
  let answer = await api.post(
    `${base}/${encodeURIComponent(session.loginSessionID)}/steps/${encodeURIComponent(session.currentStep.stepID)}`,
    { type: "user_input", fields },
  );
  // The step answers once the server accepted the credentials; should it ever answer earlier, the session is polled.
  while (answer.status !== "complete") {
    if (answer.status === "failed" || answer.status === "cancelled")
      throw new Error(`${bridgeID} login of ${who} ${answer.status}: ${JSON.stringify(answer.error ?? answer)}`);
    if (performance.now() - started > 60_000)
      throw new Error(`${bridgeID} login of ${who} not complete after 60 s: ${JSON.stringify(answer)}`);
    await sleep(10);
    answer = await api.get(`${base}/${encodeURIComponent(session.loginSessionID)}`);
  }
  const completeAt = performance.now();
  const accountID = answer.accountID ?? answer.accountIDs?.[0];
  if (typeof accountID !== "string")
    throw new Error(`the complete login session names no account: ${JSON.stringify(answer)}`);
  return { accountID, completeAt, loginMs: completeAt - started };
}

/** Signs an XMPP account in (flow "password"). */
export function loginXmpp(
  api: Api,
  fields: { jid: string; password: string; host: string; port: number },
): Promise<{ accountID: string; completeAt: number; loginMs: number }> {
  return loginWith(
    api,
    "local-xmpp",
    "password",
    { jid: fields.jid, password: fields.password, host: fields.host, port: String(fields.port) },
    fields.jid,
  );
}

/**
 * Polls GET /v1/accounts/{id} every `intervalMs` until its status is `target`; answers when each status was first
 * seen, in ms after `since`, and the longest a poll waited for its answer. A status that can only be left by the
 * user (reconnect_required, …) fails at once.
 */
export async function waitForStatus(
  api: Pick<Api, "get">,
  accountID: string,
  target: string,
  since: number,
  timeoutMs: number,
  intervalMs = 5,
): Promise<{ ms: number; seen: Record<string, number>; longestPollMs: number }> {
  const seen: Record<string, number> = {};
  let longestPollMs = 0;
  for (;;) {
    const asked = performance.now();
    const account = await api.get(`/v1/accounts/${encodeURIComponent(accountID)}`);
    longestPollMs = Math.max(longestPollMs, performance.now() - asked);
    const at = performance.now() - since;
    seen[account.status] ??= at;
    if (account.status === target) return { ms: at, seen, longestPollMs };
    if (!["connecting", "backfilling", "connected"].includes(account.status))
      throw new Error(`account ${accountID} is ${account.status}: ${account.statusText ?? ""}`);
    if (at > timeoutMs)
      throw new Error(
        `account ${accountID} still ${account.status} (${account.statusText ?? ""}) after ${timeoutMs / 1000} s`,
      );
    await sleep(intervalMs);
  }
}

/** The chat of `accountID` whose network ID is `peer` (the 1:1 chat with that JID). */
export async function findChat(api: Api, accountID: string, peerJID: string): Promise<{ id: string }> {
  let cursor: string | undefined;
  for (;;) {
    const page = await api.get(
      `/v1/chats?accountIDs=${encodeURIComponent(accountID)}${cursor ? `&cursor=${encodeURIComponent(cursor)}&direction=before` : ""}`,
    );
    const chat = page.items.find(
      (c: any) => c.accountID === accountID && (c.participants?.items ?? []).some((p: any) => p.id === peerJID),
    );
    if (chat) return chat;
    if (!page.hasMore || !page.oldestCursor) throw new Error(`no chat with ${peerJID} on account ${accountID}`);
    cursor = page.oldestCursor;
  }
}

/** Every stored message of a chat, oldest first (pages of GET /v1/chats/{id}/messages with direction=after). */
export async function storedTexts(api: Api, chatID: string): Promise<string[]> {
  const texts: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const query = cursor ? `?cursor=${encodeURIComponent(cursor)}&direction=after` : "?direction=after";
    const page = await api.get(`/v1/chats/${encodeURIComponent(chatID)}/messages${query}`);
    // Each page is newest first.
    for (let i = page.items.length - 1; i >= 0; i--) texts.push(page.items[i].text ?? "");
    if (!page.hasMore || !page.newestCursor) return texts;
    cursor = page.newestCursor;
  }
}

export interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Latencies (ms) into an HDR histogram in µs, as bench/load-worker.ts records them; answers percentiles in ms. */
export function percentiles(samplesMs: number[]): Percentiles {
  const histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 120_000_000,
    numberOfSignificantValueDigits: 3,
  });
  for (const ms of samplesMs) histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  const at = (p: number) => histogram.getValueAtPercentile(p) / 1000;
  const result = { count: samplesMs.length, p50: at(50), p90: at(90), p99: at(99), max: histogram.maxValue / 1000 };
  histogram.destroy();
  return result;
}

/** A plain-text table, right-aligning the given columns. */
export function table(header: string[], rows: string[][], rightAligned: number[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}
