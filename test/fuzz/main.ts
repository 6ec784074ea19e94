/**
 * npm run fuzz -- [--requests N] [--seed S] [--concurrency C]: a longer fuzz run than the one in npm test, against a
 * fresh daemon process, with progress on stderr and the failures (with what was sent) on stdout. Exit code 1 if any.
 */
import { parseArgs } from "node:util";
import { generate } from "./generate.ts";
import { fuzzRoutes } from "./routes.ts";
import { runFuzz } from "./run.ts";
import { startFuzzTarget } from "./target.ts";

const HELP = `Usage: npm run fuzz -- [--requests N] [--seed S] [--concurrency C]

Seeds a temp data directory, starts inboxd on it, and sends N requests generated from the routes' own schemas
(malformed, boundary and hostile values; broken bodies; hostile paths and queries). Fails on any 5xx, an error
answer that is not the documented JSON shape, an answer slower than 2 s or a stalled connection, a daemon that
stops answering, or RSS (after a full GC) growing by more than 150 MB.
  --requests N     requests to send (default 20000)
  --seed S         generator seed: the same seed sends the same requests (default: the time)
  --concurrency C  requests in flight at once (default 8)
  -h, --help       this help`;

const { values } = parseArgs({
  options: {
    requests: { type: "string" },
    seed: { type: "string" },
    concurrency: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const positive = (raw: string | undefined, fallback: number, name: string) => {
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`fuzz: --${name} must be a non-negative integer, got ${raw}\n\n${HELP}`);
    process.exit(2);
  }
  return n;
};
const requests = positive(values.requests, 20_000, "requests");
const seed = positive(values.seed, Date.now() % 2 ** 31, "seed");
const concurrency = Math.max(1, positive(values.concurrency, 8, "concurrency"));

const target = await startFuzzTarget();
let code = 1;
try {
  const before = await target.settledRssMB();
  console.error(
    `fuzz: ${requests} requests, seed ${seed}, concurrency ${concurrency}, daemon pid ${target.pid} (RSS ${before.toFixed(0)} MB)`,
  );
  const started = performance.now();
  const result = await runFuzz({
    url: target.url,
    token: target.token,
    requests: generate(await fuzzRoutes(), seed, requests, target.context),
    concurrency,
    onProgress: (done, failures) =>
      console.error(`fuzz: ${done}/${requests} sent, ${failures} failures, RSS ${target.rssMB().toFixed(0)} MB`),
  });
  const after = await target.settledRssMB();
  const alive = await fetch(`${target.url}/v1/accounts`, {
    headers: { authorization: `Bearer ${target.token}` },
    signal: AbortSignal.timeout(2_000),
  })
    .then((r) => r.status === 200)
    .catch(() => false);
  for (const f of result.failures) console.log(`${f.reason} — ${f.label}${f.body ? ` → ${f.body}` : ""}`);
  const statuses = Object.entries(result.statuses)
    .map(([s, n]) => `${s}×${n}`)
    .join(" ");
  console.error(
    `fuzz: ${result.sent} sent in ${((performance.now() - started) / 1000).toFixed(1)} s; statuses ${statuses}; slowest ${result.slowestMs.toFixed(0)} ms (${result.slowest})`,
  );
  console.error(
    `fuzz: RSS after a full GC ${before.toFixed(0)} → ${after.toFixed(0)} MB; daemon ${alive ? "still answers" : "STOPPED ANSWERING"}; ${result.failures.length} failures (seed ${seed})`,
  );
  code = result.failures.length === 0 && alive && after < before + 150 ? 0 : 1;
} finally {
  await target.stop();
}
process.exit(code);
