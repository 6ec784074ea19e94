import { startServing, type ServingProcess } from "../harness/process.ts";

/** `inboxd serve --relay URL` on a prepared data dir, as a person runs it (the pairing secret from the environment). */
export const serveRelayed = (secret: string, to: { relay: string; dataDir: string }) =>
  startServing(
    process.execPath,
    [
      "--import",
      "tsx",
      "adapters/node/cli.ts",
      "serve",
      "--data-dir",
      to.dataDir,
      "--port",
      "0",
      "--rate-limit",
      "off",
      "--relay",
      to.relay,
    ],
    { env: { ...process.env, INBOXD_RELAY_SECRET: secret } },
  );

/** Resolves once the daemon says it dialed in (also outside a test: expect.poll is not allowed in beforeAll). */
export async function connected(daemon: ServingProcess) {
  const deadline = Date.now() + 15_000;
  while (!daemon.output().includes("relay: connected to")) {
    if (Date.now() > deadline) throw new Error(`the daemon did not dial in within 15 s:\n${daemon.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
