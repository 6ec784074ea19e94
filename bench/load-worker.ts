/**
 * The load generator process: fixed concurrency over a keep-alive node:http Agent, requests taken in turn from the
 * job's list, per-request latency in an HDR histogram (µs). Requests that start during warm-up or end after the
 * measurement window are not counted.
 */
import http from "node:http";
import * as hdr from "hdr-histogram-js";
import type { Job, LoadResult, RequestSpec } from "./load.ts";

function request(agent: http.Agent, job: Job, target: URL, spec: RequestSpec, n: number): Promise<{ status: number; body: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const body = spec.body?.replaceAll("{n}", String(n));
    const headers: Record<string, string | number> = { ...spec.headers };
    if (job.token) headers.authorization = `Bearer ${job.token}`;
    if (body !== undefined) Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    const req = http.request({ host: target.hostname, port: target.port, method: spec.method, path: spec.path, agent, headers }, (res) => {
      const status = res.statusCode ?? 0;
      let bytes = 0, text = "";
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (status >= 400 && text.length < 300) text += chunk.toString();
      });
      res.on("end", () => resolve({ status, body: text, bytes }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function runJob(job: Job): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
  const target = new URL(job.url);
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
  const statuses: Record<string, number> = {};
  let next = 0, requests = 0, errors = 0, bytes = 0, firstError: string | undefined;
  const warmEnd = performance.now() + job.warmupSeconds * 1000;
  const end = warmEnd + job.durationSeconds * 1000;

  const client = async () => {
    while (performance.now() < end) {
      const n = next++;
      const spec = job.requests[n % job.requests.length];
      const started = performance.now();
      let status = "ERR", failed = true;
      try {
        const res = await request(agent, job, target, spec, n);
        status = String(res.status);
        failed = res.status >= 400;
        bytes += res.bytes;
        if (failed) firstError ??= `${spec.method} ${spec.path} → ${res.status} ${res.body}`;
      } catch (error) {
        firstError ??= `${spec.method} ${spec.path} → ${(error as Error).message}`;
        await new Promise((r) => setTimeout(r, 10));
      }
      const done = performance.now();
      if (started < warmEnd || done > end) continue;
      histogram.recordValue(Math.max(1, Math.round((done - started) * 1000)));
      statuses[status] = (statuses[status] ?? 0) + 1;
      requests++;
      if (failed) errors++;
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, client));
  agent.destroy();
  const ms = (p: number) => histogram.getValueAtPercentile(p) / 1000;
  const result: LoadResult = {
    concurrency: job.concurrency,
    requests,
    errors,
    statuses,
    firstError,
    seconds: job.durationSeconds,
    rps: requests / job.durationSeconds,
    p50: ms(50),
    p95: ms(95),
    p99: ms(99),
    max: histogram.maxValue / 1000,
    meanBytes: next ? bytes / next : 0,
  };
  histogram.destroy();
  return result;
}

process.on("message", (job) => {
  runJob(job as Job).then(
    (result) => process.send!(result),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
});
process.once("SIGTERM", () => process.exit(0));
process.once("disconnect", () => process.exit(0));
