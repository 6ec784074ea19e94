import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import BeeperDesktop from "@beeper/desktop-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databasePath } from "../../adapters/node/data-dir.ts";
import { startServer } from "../../adapters/node/serve.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { DEFAULT_RATE_LIMIT, type RateLimitOptions } from "../../src/http/rate-limit.ts";
import { ensureToken } from "../../src/services/tokens.ts";
import { killAll, startServing } from "../harness/process.ts";
import { startWorkerd } from "../harness/workerd.ts";

// Rate limits (issue 12 §2) on the real daemon (set through ServeOptions and through the CLI) and on workerd (set
// through INBOXD_RATE_LIMIT). The budgets are low, so that no test depends on how fast the machine answers: a flood
// meets its 429s however slowly it runs (a refill that could keep up with it would take longer than the test's
// timeout), and a refusal is checked against the retry-after-ms it announced rather than against a guess.

/** vitest.config.ts's testTimeout: no test runs longer. */
const TEST_TIMEOUT_MS = 30_000;

/**
 * Sends `next` right after `refused` (a 429 to a request sent at `sentAt`, from performance.now()) and checks that
 * it is refused too — unless its answer came after the retry-after-ms the refusal announced, when the budget may
 * have come back and letting it in is right.
 */
async function refusedAgain(
  refused: { res: Response; sentAt: number },
  next: () => Promise<Response>,
): Promise<Response> {
  const res = await next();
  const answeredAt = performance.now();
  const afterMs = Number(refused.res.headers.get("retry-after-ms"));
  // 2 ms: the server rounds the wait up to a whole ms, and reads a ms clock.
  if (res.status !== 429)
    expect(
      answeredAt - refused.sentAt,
      `let in (${res.status}) within the ${afterMs} ms the refusal announced`,
    ).toBeGreaterThanOrEqual(afterMs - 2);
  return res;
}

const token = (name: string) => `${name}_${randomBytes(18).toString("base64url")}`;
const get = (url: string, bearer: string, headers: Record<string, string> = {}) =>
  fetch(url, { headers: { authorization: `Bearer ${bearer}`, ...headers } });

interface Target {
  url: string;
  /** Read+write and read-only tokens (the Worker harness takes one of each). */
  a: string;
  b: string;
  stop(): Promise<void>;
}

/** The daemon over a temp data dir with the given tokens and rate limits, on loopback unless told otherwise. */
async function startDaemon(tokens: string[], rateLimit: RateLimitOptions, host = "127.0.0.1") {
  const dataDir = mkdtempSync(join(tmpdir(), "inboxd-ratelimit-"));
  const dbPath = databasePath(dataDir);
  const { storage, close } = await openSqliteStorage(dbPath);
  for (const t of tokens) await ensureToken(storage, t, { name: t.slice(0, 8), scopes: ["read", "write"] });
  await close();
  const server = await startServer({
    port: 0,
    host,
    dbPath,
    allowHosts: [host],
    verbose: false,
    print: () => undefined,
    rateLimit,
  });
  return {
    url: server.url,
    async stop() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Token A floods (16 at a time, half on /v1, half on /v0, whose error body differs) while token B makes `quiet`
 * requests one after another: A gets 429s with the retry headers, every one of B's requests succeeds. The flood must
 * be larger than what the budget admits during the test's timeout, so that a slow machine cannot keep below it.
 */
function floodSuite(
  name: string,
  start: () => Promise<Target>,
  budget: { perSecond: number; burst: number },
  flood: number,
) {
  describe(name, () => {
    if (flood <= budget.burst + (budget.perSecond * TEST_TIMEOUT_MS) / 1000)
      throw new Error(`a flood of ${flood} could stay within ${name} until the test times out`);
    let target: Target;
    beforeAll(async () => {
      target = await start();
    });
    afterAll(() => target?.stop());

    it("a flood on one token gets 429 with retry-after and retry-after-ms, while another token's requests all succeed", async () => {
      const statuses: number[] = [];
      const refusals: Response[] = [];
      let next = 0,
        quietDone = false;
      const started = performance.now();
      // The flood goes on until B is done, so that every one of B's requests meets it.
      const flooder = async () => {
        while (next < flood || !quietDone) {
          const path = next++ % 2 ? "/v0/get-accounts" : "/v1/accounts";
          const res = await get(`${target.url}${path}`, target.a);
          statuses.push(res.status);
          if (res.status === 429) refusals.push(res);
          else await res.arrayBuffer();
        }
      };
      // Within B's burst, so its 200s owe nothing to refills; one request of it is left for later tests.
      const quiet = Math.min(10, budget.burst - 1);
      const bStatuses: number[] = [];
      const floods = Promise.all(Array.from({ length: 16 }, flooder));
      for (let i = 0; i < quiet; i++) {
        const res = await get(`${target.url}/v1/accounts`, target.b);
        bStatuses.push(res.status);
        await res.arrayBuffer();
      }
      quietDone = true;
      await floods;
      const seconds = (performance.now() - started) / 1000;

      expect(bStatuses).toEqual(Array(quiet).fill(200));
      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      const admitted = statuses.filter((s) => s === 200).length;
      // The bucket: the burst, plus what refilled while the flood ran (+1 for a refill between two clock reads).
      expect(admitted).toBeGreaterThanOrEqual(budget.burst);
      expect(admitted).toBeLessThanOrEqual(budget.burst + Math.ceil(budget.perSecond * seconds) + 1);
      expect(refusals.length, `429s among ${flood} requests in ${seconds.toFixed(1)} s`).toBeGreaterThan(0);

      const maxWaitMs = Math.ceil(1000 / budget.perSecond);
      for (const res of refusals) {
        const afterMs = Number(res.headers.get("retry-after-ms"));
        expect(Number.isInteger(afterMs) && afterMs >= 1 && afterMs <= maxWaitMs, `retry-after-ms ${afterMs}`).toBe(
          true,
        );
        expect(res.headers.get("retry-after")).toBe(String(Math.max(1, Math.ceil(afterMs / 1000))));
      }
      const bodies = await Promise.all(
        refusals.map(async (res) => ({ v0: new URL(res.url).pathname.startsWith("/v0/"), body: await res.json() })),
      );
      const v1 = bodies.find((b) => !b.v0)?.body,
        v0 = bodies.find((b) => b.v0)?.body;
      expect(v1).toEqual({ code: "RATE_LIMITED", message: expect.stringMatching(/per second with bursts of up to/) });
      expect(v0).toEqual({ code: "RATE_LIMITED", error: expect.stringMatching(/per second with bursts of up to/) });
    });
  });
}

describe("the Node daemon", () => {
  const budget = { perSecond: 0.25, burst: 5 };
  const [a, b] = [token("a"), token("b")];
  floodSuite("a low budget", async () => ({ ...(await startDaemon([a, b], budget)), a, b }), budget, 60);

  it("the official SDK, with its default retries, rides out a 429 by waiting as retry-after-ms says", async () => {
    const c = token("c");
    const daemon = await startDaemon([c], budget);
    try {
      for (let i = 0; i < budget.burst; i++) expect((await get(`${daemon.url}/v1/accounts`, c)).status).toBe(200);
      const attempts: { status: number; at: number; afterMs?: number }[] = [];
      const recording = async (input: string | URL | Request, init?: RequestInit) => {
        const res = await fetch(input, init);
        attempts.push({
          status: res.status,
          at: performance.now(),
          afterMs: Number(res.headers.get("retry-after-ms")) || undefined,
        });
        return res;
      };
      const sdk = new BeeperDesktop({
        baseURL: daemon.url,
        accessToken: c,
        logLevel: "off",
        fetch: recording as typeof fetch,
      });
      await expect(sdk.accounts.list()).resolves.toBeDefined();
      expect(attempts.map((x) => x.status)).toEqual([429, 200]);
      // The SDK's own backoff waits at most 0.5 s, then 1 s: a wait this long shows it took the server's word.
      const asked = attempts[0].afterMs!;
      expect(asked).toBeGreaterThan(1500);
      expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(asked - 5);
    } finally {
      await daemon.stop();
    }
  });

  // Loopback clients are exempt (src/http/rate-limit.ts, isLoopback): the daemon listens on this machine's LAN address.
  const lan = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === "IPv4")?.address;
  it.skipIf(!lan)(
    `throttles failed authentication per client address (the TCP peer, from ${lan ?? "— skipped: no non-loopback IPv4 address here"}): 429 instead of 401 after the budget`,
    async () => {
      const good = token("good");
      const perMinute = 60; // one more try a second once the budget is spent
      const daemon = await startDaemon([good], { failedAuthPerMinute: perMinute }, lan);
      try {
        let failures = 0,
          refusal: Response | undefined,
          sentAt = 0;
        // The window refills while the loop runs: up to 100 more than the budget is still "after the budget" (100 s of
        // refills, longer than the test may run).
        while (!refusal && failures < perMinute + 100) {
          // POSTs (the daemon rebuilds their requests to stream the body) and GETs must count under the same address.
          sentAt = performance.now();
          const res = await fetch(`${daemon.url}/v1/chats`, {
            method: "POST",
            headers: {
              authorization: `Bearer wrong-${failures}`,
              "content-type": "application/json",
              "x-forwarded-for": `198.51.100.${failures % 250}`,
            },
            body: "{}",
          });
          if (res.status === 401) failures++;
          else refusal = res;
        }
        expect(failures).toBeGreaterThanOrEqual(perMinute);
        expect(refusal?.status).toBe(429);
        expect(await refusal!.json()).toMatchObject({
          code: "RATE_LIMITED",
          message: expect.stringMatching(/failed authentications/),
        });
        const afterMs = Number(refusal!.headers.get("retry-after-ms"));
        expect(afterMs).toBeGreaterThan(0);
        expect(afterMs).toBeLessThanOrEqual(1000);
        expect(refusal!.headers.get("retry-after")).toBe("1");
        // X-Forwarded-For (sent above, a new value each time) is not believed: the address is still the socket's.
        await refusedAgain({ res: refusal!, sentAt }, () =>
          get(`${daemon.url}/v1/accounts`, "wrong", { "x-forwarded-for": "203.0.113.1" }),
        );
        // A valid token still gets in (src/app.ts, admit): only failed attempts are throttled.
        expect((await get(`${daemon.url}/v1/accounts`, good)).status).toBe(200);
        // One failure's worth of refill: one at a time, failures never take the window below empty, so it then holds one.
        await new Promise((resolve) => setTimeout(resolve, 60_000 / perMinute + 50));
        expect((await get(`${daemon.url}/v1/accounts`, "wrong")).status).toBe(401);
      } finally {
        await daemon.stop();
      }
    },
  );

  describe("inboxd serve --rate-limit / INBOXD_RATE_LIMIT", () => {
    const dirs: string[] = [];
    afterAll(() => {
      killAll();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    /** Starts the CLI on a fresh data dir; answers the statuses of 10 quick requests with the first-start token. */
    async function tenRequests(args: string[], env: Record<string, string>) {
      const dir = mkdtempSync(join(tmpdir(), "inboxd-ratelimit-cli-"));
      dirs.push(dir);
      const serving = await startServing(
        process.execPath,
        ["--import", "tsx", "adapters/node/cli.ts", "serve", "--data-dir", dir, "--port", "0", ...args],
        {
          env: { ...process.env, INBOXD_DATA_DIR: "", ...env },
        },
      );
      try {
        const first = /store it now:\n(\S+)/.exec(serving.output())![1];
        const statuses: number[] = [];
        for (let i = 0; i < 10; i++) statuses.push((await get(`${serving.url}/v1/accounts`, first)).status);
        return statuses;
      } finally {
        await serving.stop();
      }
    }

    it("the flag sets the budget and wins over the environment; the environment alone sets it too", async () => {
      // 0.5/s: bursts of 2, and 10 requests take far less than the 16 s that would refill the other 8.
      const flag = await tenRequests(["--rate-limit", "0.5"], { INBOXD_RATE_LIMIT: "off" });
      expect(flag.slice(0, 2)).toEqual([200, 200]);
      expect(flag).toContain(429);
      expect(await tenRequests([], { INBOXD_RATE_LIMIT: "0.5" })).toContain(429);
      expect(await tenRequests(["--rate-limit", "off"], { INBOXD_RATE_LIMIT: "0.5" })).toEqual(Array(10).fill(200));
    });
  });
});

describe("workerd", () => {
  const [a, b] = [token("a"), token("b")];
  // INBOXD_RATE_LIMIT=1.25: bursts of 5 (a number keeps the default 4 s of burst), one request back every 0.8 s.
  const budget = { perSecond: 1.25, burst: 5 };
  let shared: Promise<Awaited<ReturnType<typeof startWorkerd>>> | undefined;
  const worker = () =>
    (shared ??= startWorkerd({
      tokens: [
        { token: a, scopes: ["read", "write"] },
        { token: b, scopes: ["read"] },
      ],
      rateLimit: String(budget.perSecond),
    }));
  afterAll(async () => (await shared)?.stop());

  floodSuite(
    "a low budget, set through INBOXD_RATE_LIMIT",
    async () => ({ url: (await worker()).url, a, b, stop: async () => undefined }),
    budget,
    60,
  );

  it("the official SDK rides out a 429 (its retry-after-ms here is under a second, close to the SDK's own backoff, so the daemon's test is the one that shows retry-after-ms is honoured)", async () => {
    const { url } = await worker();
    const attempts: number[] = [];
    const recording = async (input: string | URL | Request, init?: RequestInit) => {
      const res = await fetch(input, init);
      attempts.push(res.status);
      return res;
    };
    const sdk = new BeeperDesktop({ baseURL: url, accessToken: a, logLevel: "off", fetch: recording as typeof fetch });
    // Empty A's bucket, then ask at once; a refill can slip in between (one every 0.8 s), so up to 10 rounds.
    let rodeOut = false;
    for (let round = 0; round < 10 && !rodeOut; round++) {
      let empty = false;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (!empty)
            empty =
              (await get(`${url}/v1/accounts`, a).then(async (res) => (await res.arrayBuffer(), res.status))) === 429;
        }),
      );
      attempts.length = 0;
      await expect(sdk.accounts.list()).resolves.toBeDefined();
      rodeOut = attempts[0] === 429;
      if (rodeOut) expect(attempts.at(-1)).toBe(200);
    }
    expect(rodeOut, "the SDK met a 429 and then succeeded").toBe(true);
  });

  it("throttles failed authentication per CF-Connecting-IP (Miniflare keeps the one a client sends)", async () => {
    const { url } = await worker();
    const from = (ip: string) => ({ "cf-connecting-ip": ip });
    let failures = 0,
      refusal: Response | undefined,
      sentAt = 0;
    // Up to 20 more than the budget: 40 s of refills at 30 a minute, longer than the test may run.
    while (!refusal && failures < DEFAULT_RATE_LIMIT.failedAuthPerMinute + 20) {
      sentAt = performance.now();
      const res = await get(`${url}/v1/accounts`, `wrong-${failures}`, from("198.51.100.7"));
      if (res.status === 401) failures++;
      else refusal = res;
    }
    expect(failures).toBeGreaterThanOrEqual(DEFAULT_RATE_LIMIT.failedAuthPerMinute);
    expect(refusal?.status).toBe(429);
    expect(await refusal!.json()).toMatchObject({ code: "RATE_LIMITED" });
    expect(Number(refusal!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(refusal!.headers.get("retry-after-ms"))).toBeGreaterThan(0);
    await refusedAgain({ res: refusal!, sentAt }, () => get(`${url}/v1/accounts`, "wrong", from("198.51.100.7")));
    expect((await get(`${url}/v1/accounts`, "wrong", from("198.51.100.8"))).status).toBe(401);
    expect((await get(`${url}/v1/accounts`, b, from("198.51.100.7"))).status).toBe(200); // a valid token still gets in
  });
});
