/**
 * The crash scenario (crash.ts) on the Worker: workerd restarted in the middle of the load (Miniflare kills the
 * workerd process with SIGKILL and starts a new one on the same Durable Object storage), so the object, its
 * hibernatable sockets and its streams all go away at once.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { startWorkerd, type WorkerdServer } from "../harness/workerd.ts";
import { crashScenario } from "./crash.ts";
import { randomToken } from "../kit/common.ts";

describe("the event log across a Durable Object restart", () => {
  const token = randomToken("rw");
  let server: WorkerdServer;

  beforeAll(async () => {
    server = await startWorkerd({ seed: { chats: 6, messages: 60, accounts: 1, seed: 14 }, token });
  });
  afterAll(() => server?.stop());

  it("100 subscribers with since and an SSE consumer each end with every event exactly once, in order; no acknowledged send is lost", async () => {
    await crashScenario(
      { name: "workerd", token, url: () => server.url, crash: () => server.restart() },
      { subscribers: 100, sendsPerSecond: 500, beforeCrashMs: 2500, afterRestartMs: 1000, chats: 4 },
    );
  }, 60_000);
});
