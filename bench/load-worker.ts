/**
 * The load generator process: autocannon (fixed concurrency over keep-alive connections, its own HTTP/1.1 client
 * and response parser) running the job's requests in turn. Latency goes into our own HDR histogram in µs from
 * autocannon's per-response event, so percentiles keep sub-millisecond resolution (autocannon's own histogram counts
 * whole milliseconds). Requests that start during warm-up or end after the measurement window are not counted.
 *
 * Why autocannon and not a node:http Agent loop: on this machine kind an Agent loop tops out at about half of what
 * bare node:http can serve at 16 connections, which flattered every "% of bare" figure (issue 33).
 */
import autocannon from "autocannon";
import * as hdr from "hdr-histogram-js";
import { latencyHistogram, type Job, type LoadResult } from "./load.ts";

async function runJob(job: Job): Promise<LoadResult> {
  const histogram = latencyHistogram();
  const statuses: Record<string, number> = {};
  let counter = 0,
    requests = 0,
    errors = 0,
    bytes = 0,
    firstError: string | undefined;
  const startedAt = performance.now();
  const warmEnd = startedAt + job.warmupSeconds * 1000;
  const end = warmEnd + job.durationSeconds * 1000;
  const headers: Record<string, string> = {};
  if (job.token) headers.authorization = `Bearer ${job.token}`;

  let finished!: (error?: Error) => void;
  const done = new Promise<void>((resolve, reject) => {
    finished = (error) => (error ? reject(error) : resolve());
  });
  const instance = autocannon(
    {
      url: job.url,
      connections: job.concurrency,
      pipelining: 1,
      // A little past the window, so that the last counted requests are not cut off by autocannon's own stop.
      duration: job.warmupSeconds + job.durationSeconds + 0.5,
      headers,
      requests: job.requests.map((spec) => {
        const base = { method: spec.method, path: spec.path, headers: { ...headers, ...spec.headers } };
        if (spec.body === undefined) return base;
        const body = spec.body;
        const json = { ...base.headers, "content-type": "application/json" };
        // "{n}": a counter per request, as every send needs a distinct text.
        return {
          ...base,
          headers: json,
          setupRequest: (request: autocannon.Request) => ({
            ...request,
            body: body.replaceAll("{n}", String(counter++)),
          }),
        };
      }),
    },
    (error) => finished(error ?? undefined),
  );
  instance.on("response", (_client: unknown, statusCode: number, resBytes: number, responseTime: number) => {
    const done = performance.now();
    const started = done - responseTime;
    if (started < warmEnd || done > end) return;
    const status = String(statusCode);
    histogram.recordValue(Math.max(1, Math.round(responseTime * 1000)));
    statuses[status] = (statuses[status] ?? 0) + 1;
    requests++;
    bytes += resBytes;
    if (statusCode >= 400) {
      errors++;
      firstError ??= `HTTP ${statusCode}`;
    }
  });
  instance.on("reqError", (error: Error) => {
    const now = performance.now();
    if (now < warmEnd || now > end) return;
    statuses.ERR = (statuses.ERR ?? 0) + 1;
    errors++;
    firstError ??= error.message;
  });
  await done;
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
    meanBytes: requests ? bytes / requests : 0,
    histogram: hdr.encodeIntoCompressedBase64(histogram),
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
