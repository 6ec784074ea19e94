import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generate } from "./generate.ts";
import { fuzzRoutes, type Route } from "./routes.ts";
import { runFuzz } from "./run.ts";
import { startFuzzTarget, type FuzzTarget } from "./target.ts";

// The bounded fuzz run of `npm test` (`npm run fuzz -- --requests N` runs longer): requests generated from the
// routes' own schemas against a real daemon process, judged by run.ts.
const REQUESTS = 3_000;
const SEED = 20261123;
/** Growth of the daemon's RSS (after a full GC) the run may cause: caches fill, but no input may make it balloon. */
const RSS_GROWTH_MB = 150;

let target: FuzzTarget;
let routes: Route[];

beforeAll(async () => {
  routes = await fuzzRoutes();
  target = await startFuzzTarget();
});
afterAll(async () => {
  expect(await target?.stop()).toBe(0);
});

describe("fuzz", () => {
  it("covers every /v1 route the app registers", () => {
    expect(routes.length).toBeGreaterThan(40);
    expect(routes.map((r) => `${r.method} ${r.path}`)).toContain("POST /v1/chats/:chatID/messages");
  });

  it(`${REQUESTS} malformed, boundary and hostile requests: no 5xx, errors in the documented shape, answers within 2 s, memory bounded`, async () => {
    const before = await target.settledRssMB();
    const result = await runFuzz({
      url: target.url,
      token: target.token,
      requests: generate(routes, SEED, REQUESTS, target.context),
      concurrency: 8,
    });
    const report = result.failures
      .slice(0, 15)
      .map((f) => `${f.reason} — ${f.label}${f.body ? ` → ${f.body.slice(0, 160)}` : ""}`);
    expect(report, `${result.failures.length} failures of ${result.sent}`).toEqual([]);
    expect(result.sent).toBe(REQUESTS);
    // Most answers are refusals, but some requests must get through to the code behind the validation.
    const ok = Object.entries(result.statuses)
      .filter(([status]) => Number(status) < 300)
      .reduce((n, [, c]) => n + c, 0);
    expect(ok).toBeGreaterThan(REQUESTS / 20);
    const after = await target.settledRssMB();
    expect(after, `RSS ${before.toFixed(0)} → ${after.toFixed(0)} MB`).toBeLessThan(before + RSS_GROWTH_MB);
    const still = await fetch(`${target.url}/v1/accounts`, {
      headers: { authorization: `Bearer ${target.token}` },
      signal: AbortSignal.timeout(2_000),
    });
    expect(still.status).toBe(200);
  }, 180_000);
});
