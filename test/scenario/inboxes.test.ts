/**
 * The scenario suite (suite.ts) against two inboxes of one deployment of many (INBOXD_TENANCY=multi) at the same
 * time: this file runs it in the inbox "alice-1" while a second vitest process (inbox-peer/) runs it in "bob-1",
 * both through the official SDKs against the same workerd. Each suite asserts exact counts and contents of its own
 * seeded data and of what it wrote, so anything of one inbox that reached the other — a chat, a message, an event,
 * a token — fails one of them. The peer's verdict is this file's last test.
 */
import { spawn } from "node:child_process";
import { stripVTControlCharacters } from "node:util";
import { afterAll, expect, it } from "vitest";
import { inboxStart, OPERATOR_TOKEN } from "../harness/inboxes.ts";
import { startWorkerd } from "../harness/workerd.ts";
import { scenarioSuite } from "./suite.ts";

const deployment = await startWorkerd({ operatorToken: OPERATOR_TOKEN });

const peer = new Promise<{ code: number | null; output: string }>((resolve) => {
  const child = spawn(
    process.execPath,
    ["node_modules/vitest/vitest.mjs", "run", "--config", "test/scenario/inbox-peer/vitest.config.ts"],
    { env: { ...process.env, INBOXD_PEER_DEPLOYMENT: deployment.url }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  child.on("close", (code) => resolve({ code, output }));
});

afterAll(async () => {
  await peer;
  await deployment.stop();
});

scenarioSuite(
  "workerd, the inbox alice of many",
  inboxStart(() => deployment, "alice"),
  { checksHost: false },
);

it("ran the same scenarios in the inbox bob at the same time, and they passed", async () => {
  const { code, output } = await peer;
  const plain = stripVTControlCharacters(output);
  expect(code, plain.slice(-4000)).toBe(0);
  const passed = Number(/Tests\s+(\d+) passed/.exec(plain)?.[1] ?? 0);
  console.log(`the peer inbox's run: ${passed} tests passed`);
  expect(passed).toBeGreaterThan(100);
}, 600_000);
