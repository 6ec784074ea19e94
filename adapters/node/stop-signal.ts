/**
 * Resolves with the first SIGINT or SIGTERM. The listeners stay afterwards: a terminal's Ctrl-C reaches both npm
 * and the daemon, and npm forwards it too, so the same signal often arrives twice, and a repeat that found no
 * listener would kill the process halfway through its shutdown (Node's default action).
 */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => resolve(signal));
  });
}
