/**
 * Two builds of the daemon side by side: this checkout's and another's (the commit before a change), each serving a
 * copy of one seeded data set, measured in alternating rounds so that the noise of a shared machine falls on both.
 * What a refactor's "no slowdown" is checked with.
 */
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createToken, getOnce, killAll, median, ROOT, runCli, startDaemon } from "./daemon.ts";
import { type LoadResult, LoadGenerator, type RequestSpec } from "./load.ts";

const HELP = `Usage: npx tsx bench/compare.ts --base DIR [--rounds N] [--chats N] [--messages N]

Seeds one data set, starts this checkout's daemon and the one built in DIR (another checkout, built with
\`npm run build\`: its dist/node/inboxd.mjs) on copies of it, and measures GET /v1/chats, a chat's messages, a
search and POST send in alternating rounds (2 s each after 0.5 s of warm-up; the order flips every round). Prints
the medians over rounds and the median of the per-round ratios of requests/s (this / base). Rate limits are off.

  --base DIR      the other checkout (required), e.g. a git worktree of the commit before a change
  --rounds N      rounds (default 10)
  --chats N       chats to seed (default 1000)
  --messages N    messages to seed (default 50000)`;

const { values } = parseArgs({
  options: {
    base: { type: "string" },
    rounds: { type: "string", default: "10" },
    chats: { type: "string", default: "1000" },
    messages: { type: "string", default: "50000" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const baseBuild = values.base && resolve(values.base, "dist/node/inboxd.mjs");
if (!baseBuild || !existsSync(baseBuild)) {
  console.error(`${values.base ? `no ${baseBuild}: run npm run build there` : "--base DIR is required"}\n\n${HELP}`);
  process.exit(2);
}
const builds = { base: baseBuild, this: join(ROOT, "dist/node/inboxd.mjs") };
type Build = keyof typeof builds;
const rounds = Number(values.rounds);

process.env.INBOXD_RATE_LIMIT = "off";
const root = mkdtempSync(join(tmpdir(), "inboxd-compare-"));
const seeded = join(root, "seed");
console.error(`[compare] seeding ${values.chats} chats, ${values.messages} messages`);
await runCli(["seed", "--data-dir", seeded, "--chats", values.chats, "--messages", values.messages]);
const token = await createToken(seeded);

async function start(build: Build) {
  const dir = join(root, build);
  cpSync(seeded, dir, { recursive: true });
  return startDaemon(dir, token, { built: builds[build] });
}

const daemons = { base: await start("base"), this: await start("this") };
const firstChats = JSON.parse((await getOnce(`${daemons.base.url}/v1/chats`, token)).body.toString()).items;
const chat = encodeURIComponent(firstChats[1].id);
const jobs: Record<string, { requests: RequestSpec[]; concurrency: number }> = {
  "GET /v1/chats, c=8": { requests: [{ method: "GET", path: "/v1/chats" }], concurrency: 8 },
  "GET a chat's messages, c=8": { requests: [{ method: "GET", path: `/v1/chats/${chat}/messages` }], concurrency: 8 },
  "search one word, c=8": { requests: [{ method: "GET", path: "/v1/messages/search?query=coffee" }], concurrency: 8 },
  "POST send, c=16": {
    requests: [{ method: "POST", path: `/v1/chats/${chat}/messages`, body: '{"text":"compare {n}"}' }],
    concurrency: 16,
  },
};

const load = new LoadGenerator();
const results: Record<string, Record<Build, LoadResult[]>> = {};
for (let round = 0; round < rounds; round++) {
  const order: Build[] = round % 2 ? ["this", "base"] : ["base", "this"];
  for (const [name, job] of Object.entries(jobs))
    for (const build of order) {
      const result = await load.run({ url: daemons[build].url, token, warmupSeconds: 0.5, durationSeconds: 2, ...job });
      if (result.errors) throw new Error(`${name} on ${build}: ${result.errors} errors (${result.firstError})`);
      ((results[name] ??= { base: [], this: [] })[build] ??= []).push(result);
    }
  console.error(`[compare] round ${round + 1}/${rounds}`);
}

const summary = (list: LoadResult[]) =>
  `p50 ${median(list.map((r) => r.p50)).toFixed(2)} ms, p99 ${median(list.map((r) => r.p99)).toFixed(2)} ms, ` +
  `${Math.round(median(list.map((r) => r.rps)))}/s`;
console.log(`${rounds} alternating rounds; medians over rounds; this/base: median of the per-round ratios of req/s`);
for (const [name, by] of Object.entries(results)) {
  const ratios = by.base.map((base, i) => by.this[i].rps / base.rps);
  console.log(`${name.padEnd(28)} base: ${summary(by.base)} | this: ${summary(by.this)}`);
  console.log(
    `${"".padEnd(28)} this/base ${median(ratios).toFixed(3)} (rounds: ${ratios.map((r) => r.toFixed(2)).join(" ")})`,
  );
}
load.close();
await daemons.base.stop();
await daemons.this.stop();
killAll();
rmSync(root, { recursive: true, force: true });
process.exit(0);
