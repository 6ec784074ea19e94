/**
 * The crash scenario (crash.ts) on the daemon: `inboxd serve` as a child process, killed with SIGKILL in the middle
 * of the load and started again on the same data directory and port.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareDataDir } from "../harness/node.ts";
import { killAll, startServing, type ServingProcess } from "../harness/process.ts";
import { crashScenario } from "./crash.ts";
import { randomToken } from "../kit/common.ts";

describe("the event log across kill -9 of the daemon", () => {
  const token = randomToken("rw");
  let dataDir: string;
  let daemon: ServingProcess;
  /** node itself (not npm), so SIGKILL hits the process that holds the data; no rate limit, as for any load test. */
  const serve = (port: number) =>
    startServing(process.execPath, [
      "--import",
      "tsx",
      "adapters/node/cli.ts",
      "serve",
      "--data-dir",
      dataDir,
      "--port",
      String(port),
      "--rate-limit",
      "off",
    ]);

  beforeAll(async () => {
    dataDir = await prepareDataDir({
      seed: { chats: 6, messages: 60, accounts: 1, seed: 14 },
      tokens: [{ token, scopes: ["read", "write"] }],
    });
    daemon = await serve(0);
  });
  afterAll(async () => {
    await daemon?.stop("SIGTERM");
    killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("100 subscribers with since and an SSE consumer each end with every event exactly once, in order; no acknowledged send is lost", async () => {
    await crashScenario(
      {
        name: "node",
        token,
        url: () => daemon.url,
        async crash() {
          const port = Number(new URL(daemon.url).port);
          expect(await daemon.stop("SIGKILL")).toBeNull();
          expect(daemon.child.signalCode).toBe("SIGKILL");
          daemon = await serve(port);
        },
      },
      { subscribers: 100, sendsPerSecond: 500, beforeCrashMs: 2500, afterRestartMs: 1000, chats: 4 },
    );
  }, 60_000);
});
