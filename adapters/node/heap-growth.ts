import { setFlagsFromString } from "node:v8";

/**
 * How far past the live heap (what survived the last full GC) V8 may grow before the next full GC, once the daemon
 * has started: 50 % instead of V8's own choice, which under sustained load goes up to 300 %.
 *
 * Why: at 10 million messages the live heap is about 150 MB. Under the scale benchmark's load, the serving process
 * ended at 365 MB in some runs and 520 MB in others, depending only on when V8 last ran a full GC; with 50 % it
 * ended at 359–372 MB in every run, at the same throughput (`npm run bench -- --scale`, README "Scale").
 *
 * Set after start-up, not on the command line: loading the chat snapshot builds the whole live heap at once, and a
 * tight factor there only adds full GCs (ready after restart went from about 0.8 s to 0.9 s). V8 reads the flag at
 * each GC, so setting it at run time takes effect from the next one.
 */
export function limitHeapGrowth(percent = 50): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
