/**
 * The API scenario suite: one set of scenarios run against any runtime that serves the app (the Node daemon, the
 * Worker in workerd). Each entry file calls `scenarioSuite` with its harness. The scenarios drive the server the way
 * real clients do: the official SDKs (5.0.0 and 4.2.3) and raw HTTP for the wire details SDKs hide.
 *
 * Every JSON answer a scenario receives is checked against the server's own OpenAPI document (openapi-check.ts).
 *
 * Not covered here: asset endpoints (their own suite in test/assets), /oauth, WebSocket events (test/events),
 * MCP (test/mcp).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountScenarios } from "./accounts.ts";
import { authScenarios } from "./auth.ts";
import { bridgeScenarios } from "./bridges.ts";
import { chatActionScenarios } from "./chat-actions.ts";
import { chatScenarios } from "./chats.ts";
import { chatSearchScenarios } from "./chat-search.ts";
import { encodingScenarios } from "./encoding.ts";
import { hardeningScenarios } from "./hardening.ts";
import { randomToken, type Start } from "../kit/common.ts";
import { makeClients, ok, SEED, type Env, type SuiteOptions } from "./kit.ts";
import { messageScenarios } from "./messages.ts";
import { messageCursorScenarios } from "./message-cursors.ts";
import { messageSearchScenarios } from "./message-search.ts";
import { paginationScenarios } from "./pagination.ts";
import { reactionScenarios } from "./reactions.ts";
import { robustnessScenarios } from "./robustness.ts";
import { sdk4Scenarios } from "./sdk4.ts";
import { unifiedSearchScenarios } from "./unified-search.ts";
import { v0Scenarios } from "./v0.ts";
import { chatLabelScenarios } from "./chat-labels.ts";
import { appSurfaceScenarios } from "./app-surface.ts";
import { ResponseChecker } from "./openapi-check.ts";

export function scenarioSuite(name: string, start: Start, options: Partial<SuiteOptions> = {}) {
  describe(`scenarios on ${name}`, () => {
    const env = { name, options: { checksHost: name === "node", ...options } } as Env;
    let stop: (() => Promise<void>) | undefined;

    beforeAll(async () => {
      env.rw = randomToken("rw");
      env.ro = randomToken("ro");
      const server = await start({
        seed: SEED,
        tokens: [
          { token: env.rw, scopes: ["read", "write"] },
          { token: env.ro, scopes: ["read"] },
        ],
      });
      stop = () => server.stop();
      env.rw = server.tokens?.[env.rw] ?? env.rw;
      env.ro = server.tokens?.[env.ro] ?? env.ro;
      env.url = server.url.replace(/\/$/, "");
      env.spec = new ResponseChecker(await ok(env, "/v1/spec"));
      makeClients(env);
      env.accounts = await ok(env, "/v1/accounts");
    });

    afterAll(async () => {
      await stop?.();
    });

    authScenarios(env);
    accountScenarios(env);
    chatScenarios(env);
    chatActionScenarios(env);
    chatSearchScenarios(env);
    messageScenarios(env);
    reactionScenarios(env);
    messageSearchScenarios(env);
    unifiedSearchScenarios(env);
    paginationScenarios(env);
    messageCursorScenarios(env);
    encodingScenarios(env);
    sdk4Scenarios(env);
    robustnessScenarios(env);
    bridgeScenarios(env, start);
    v0Scenarios(env);
    chatLabelScenarios(env);
    appSurfaceScenarios(env);
    // Last: its chats (empty groups, refused sends) would come first in the lists other scenarios walk.
    hardeningScenarios(env);

    it("checked the answers it received against the served OpenAPI document", () => {
      const operations = [...env.spec!.checked.keys()];
      expect(operations.length, operations.join(", ")).toBeGreaterThan(35);
    });
  });
}
