import { setFlagsFromString } from "node:v8";

/**
 * Node options every documented way of starting the daemon passes (`npm start`, `npm run inboxd`, the `inboxd`
 * command's first line, which every CLI command gets too, the systemd unit; a test checks they agree): the young
 * generation as Node 20 sizes it, 16 MB per semi-space.
 *
 * Why: Node 22 and 24 size it by the machine's memory, 64 MB per semi-space on this 24 GB machine, and the daemon
 * then keeps a 128 MB young generation. At 10M messages on Node 24, the serving process took 362 MB idle and 518–529 MB
 * after the scale benchmark's load, and GET /v1/chats at 16 connections had a p99 of 15–16 ms at 8,700 req/s (two runs);
 * with 16 MB: 284 MB idle, 402 MB after load, p99 4.8 ms at 13,500 req/s. It must be on the command line: V8 sizes
 * the young generation when the process starts. `node adapters/node/bin.js serve` without it works the same, with
 * the runtime's own sizing.
 */
export const DAEMON_NODE_OPTIONS = ["--max-semi-space-size=16"];

/**
 * How far past the live heap (what survived the last full GC) V8 may grow before the next full GC, once the daemon
 * has started: 50 % instead of V8's own choice, which under sustained load goes up to 300 %.
 *
 * Why: at 10 million messages the live heap is about 150 MB. Under the scale benchmark's load, the serving process
 * ended at 365 MB in some runs and 520 MB in others, depending only on when V8 last ran a full GC; with 50 % it
 * ended at 359–372 MB in every run, at the same throughput (`npm run bench -- --scale`, docs/scale-and-benchmarks.md, "Scale").
 *
 * Set after start-up, not on the command line: loading the chat snapshot builds the whole live heap at once, and a
 * tight factor there only adds full GCs (ready after restart went from about 0.8 s to 0.9 s). V8 reads the flag at
 * each GC, so setting it at run time takes effect from the next one.
 */
export function limitHeapGrowth(percent = 50): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
