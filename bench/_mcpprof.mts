// scratch (not committed): CPU profile of the daemon under one MCP leg. LEG=legacy|modern
import { createToken, startDaemon, killAll, cpuSeconds } from "./daemon.ts";
import { LoadGenerator } from "./load.ts";
import { mcpModernSearchRequests, mcpSearchRequests } from "./mcp.ts";
const dir = process.env.DIR!;
const token = await createToken(dir);
const gen = new LoadGenerator();
const words = ["alpha", "omega", "zebra", "quartz"];
for (const leg of (process.env.LEGS ?? "legacy,modern").split(",")) {
  const d = await startDaemon(
    dir,
    token,
    process.env.PROF ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=/tmp/prof-${leg}`] } : {},
  );
  const c0 = cpuSeconds(d.pid);
  const res = await gen.run({
    url: d.url,
    token,
    requests: (leg === "modern" ? mcpModernSearchRequests : mcpSearchRequests)(words),
    concurrency: 8,
    warmupSeconds: 1,
    durationSeconds: 5,
  });
  const us = (1e6 * (cpuSeconds(d.pid) - c0)) / (res.rps * 6);
  console.log(
    `${leg}: ${res.rps.toFixed(0)} req/s p50 ${res.p50.toFixed(2)} daemon ${us.toFixed(0)} µs/req errs ${res.errors}`,
  );
  await d.stop();
}
gen.close();
killAll();
