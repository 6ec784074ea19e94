/** Reconnect delays: 0.5 s, 1 s, 2 s … up to 30 s, each with ±20 % jitter so that clients of a restarted server spread out. */
export class Backoff {
  attempts = 0;

  next(): number {
    const base = Math.min(30_000, 500 * 2 ** this.attempts++);
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  reset() {
    this.attempts = 0;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
