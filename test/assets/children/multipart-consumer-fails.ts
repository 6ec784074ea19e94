/**
 * Run as a child process by src/assets/multipart.test.ts (a hang here must not freeze the test runner): a
 * multipart upload whose consumer fails while the body is still arriving, as a storage write error would make it.
 * Prints one JSON line with the outcome; exits 0 when streamMultipart settles and timers still run.
 */
import { streamMultipart } from "../../../src/assets/multipart.ts";

const boundary = "----childBoundary";
const enc = new TextEncoder();
const total = 16 * 1024 * 1024;
let pulled = 0;
const body = new ReadableStream<Uint8Array>(
  {
    start(c) {
      c.enqueue(
        enc.encode(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        ),
      );
    },
    pull(c) {
      if (pulled >= total) {
        c.enqueue(enc.encode(`\r\n--${boundary}--\r\n`));
        c.close();
        return;
      }
      pulled += 65_536;
      c.enqueue(new Uint8Array(65_536).fill(7));
    },
  },
  { highWaterMark: 0 },
);
const request = new Request("http://127.0.0.1/v1/assets/upload", {
  method: "POST",
  body,
  headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
  duplex: "half",
} as RequestInit);

let timerRan = false;
setTimeout(() => (timerRan = true), 50);
const outcome = await streamMultipart(request, "file", { maxFileBytes: 1e9 }, async (content) => {
  let n = 0;
  for await (const chunk of content) {
    n += chunk.length;
    if (n > 200_000) {
      await new Promise((r) => setTimeout(r, 5)); // a storage write that takes a moment, then fails
      throw new Error("storage write failed");
    }
  }
  return n;
}).then(
  () => ({ settled: "resolved" }),
  (error: unknown) => ({ settled: "rejected", message: error instanceof Error ? error.message : String(error) }),
);
await new Promise((r) => setTimeout(r, 100));
process.stdout.write(`${JSON.stringify({ ...outcome, pulled, timerRan })}\n`);
