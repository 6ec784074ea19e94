/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, a devDependency) against /v0/mcp, once per
 * protocol revision, each at its own wire: 2025-11-25 with the initialize handshake, 2026-07-28 stateless with the
 * per-request `_meta` envelope. The suite needs Node ≥ 22, so it runs under `.ci/with-node 22` (Node from the npm
 * registry, cached after the first use).
 *
 * The suite's server runner sends no credentials, and every route here authenticates, so it talks to a loopback
 * forwarder that adds the bearer token and passes everything else (Host and Origin included) through untouched.
 *
 * Many required scenarios call the suite's own fixture tools, resources and prompts (`test_simple_text`,
 * `test://static-text`, `prompts/get test_prompt`…), which a server with real tools does not have. Those are the
 * expected failures below, each with why it does not apply; the suite fails the run on any other failure, and on an
 * expected one that passes (a stale entry), so the list cannot rot.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomToken, type Start } from "../kit/common.ts";

const root = join(import.meta.dirname, "../..");
const CLI = join(root, "node_modules/@modelcontextprotocol/conformance/dist/index.js");

const FIXTURE_TOOLS = "calls one of the suite's fixture tools (test_*), which this server does not have";
const FIXTURE_RESOURCES = "reads the suite's fixture resources (test://…), which this server does not have";
const NO_PROMPTS = "this server offers no prompts (its surface is 24 tools and resources)";

/** Scenario (or `scenario:check`) → why it does not apply to inboxd. */
const NOT_APPLICABLE: Record<"2025-11-25" | "2026-07-28", Record<string, string>> = {
  "2025-11-25": {
    "completion-complete": "this server offers no completions (no prompts or templated arguments to complete)",
    "logging-set-level": "this server declares no logging capability (it logs to its own log, not to clients)",
    "tools-call-simple-text": FIXTURE_TOOLS,
    "tools-call-image": FIXTURE_TOOLS,
    "tools-call-audio": FIXTURE_TOOLS,
    "tools-call-embedded-resource": FIXTURE_TOOLS,
    "tools-call-mixed-content": FIXTURE_TOOLS,
    "tools-call-with-logging": FIXTURE_TOOLS,
    "tools-call-error": FIXTURE_TOOLS,
    "tools-call-with-progress": FIXTURE_TOOLS,
    "tools-call-sampling": FIXTURE_TOOLS,
    "tools-call-elicitation": FIXTURE_TOOLS,
    "elicitation-sep1034-defaults": FIXTURE_TOOLS,
    "elicitation-sep1330-enums": FIXTURE_TOOLS,
    "json-schema-2020-12": FIXTURE_TOOLS,
    "resources-read-text": FIXTURE_RESOURCES,
    "resources-read-binary": FIXTURE_RESOURCES,
    "resources-templates-read": FIXTURE_RESOURCES,
    "resources-subscribe":
      "resources/subscribe needs a session; /v0/mcp is stateless on 2025-11-25 (2026-07-28 clients use subscriptions/listen)",
    "resources-unsubscribe": "as resources-subscribe: no sessions on the 2025-11-25 leg",
    "server-sse-multiple-streams:server-sse-multiple-streams-session":
      "warns that no session ID was given: the 2025-11-25 leg is stateless, so streams need none",
    "prompts-list": NO_PROMPTS,
    "prompts-get-simple": NO_PROMPTS,
    "prompts-get-with-args": NO_PROMPTS,
    "prompts-get-embedded-resource": NO_PROMPTS,
    "prompts-get-with-image": NO_PROMPTS,
  },
  "2026-07-28": {
    "server-stateless:sep-2575-server-rejects-undeclared-capability": FIXTURE_TOOLS,
    "server-stateless:sep-2575-missing-capability-http-400": FIXTURE_TOOLS,
    "server-stateless:sep-2575-http-server-no-independent-requests-on-stream": FIXTURE_TOOLS,
    "server-stateless:sep-2575-server-no-log-without-loglevel": FIXTURE_TOOLS,
    "caching:sep-2549-prompts-list-caching-hints": NO_PROMPTS,
    "completion-complete": "this server offers no completions",
    "tools-call-simple-text": FIXTURE_TOOLS,
    "tools-call-image": FIXTURE_TOOLS,
    "tools-call-audio": FIXTURE_TOOLS,
    "tools-call-embedded-resource": FIXTURE_TOOLS,
    "tools-call-mixed-content": FIXTURE_TOOLS,
    "tools-call-error": FIXTURE_TOOLS,
    "tools-call-with-progress": FIXTURE_TOOLS,
    "json-schema-2020-12": FIXTURE_TOOLS,
    "resources-read-text": FIXTURE_RESOURCES,
    "resources-read-binary": FIXTURE_RESOURCES,
    "resources-templates-read": FIXTURE_RESOURCES,
    "prompts-list": NO_PROMPTS,
    "prompts-get-simple": NO_PROMPTS,
    "prompts-get-with-args": NO_PROMPTS,
    "prompts-get-embedded-resource": NO_PROMPTS,
    "prompts-get-with-image": NO_PROMPTS,
    "input-required-result-basic-elicitation": FIXTURE_TOOLS,
    "input-required-result-basic-sampling": FIXTURE_TOOLS,
    "input-required-result-basic-list-roots": FIXTURE_TOOLS,
    "input-required-result-request-state": FIXTURE_TOOLS,
    "input-required-result-multiple-input-requests": FIXTURE_TOOLS,
    "input-required-result-multi-round": FIXTURE_TOOLS,
    "input-required-result-non-tool-request": FIXTURE_TOOLS,
    "input-required-result-result-type": FIXTURE_TOOLS,
    "input-required-result-tampered-state": FIXTURE_TOOLS,
    "input-required-result-capability-check": FIXTURE_TOOLS,
    "input-required-result-missing-input-response": FIXTURE_TOOLS,
    "input-required-result-ignore-extra-params": FIXTURE_TOOLS,
    "http-custom-header-server-validation": "calls the suite's fixture tool with x-mcp-header parameters (test_*)",
    // Not scored (the Tasks extension, SEP-2663): this server does not offer tasks.
    "tasks-lifecycle": "the Tasks extension is not offered",
    "tasks-capability-negotiation": "the Tasks extension is not offered",
    "tasks-wire-fields": "the Tasks extension is not offered",
    "tasks-request-state-removal": "the Tasks extension is not offered",
    "tasks-mrtr-input": "the Tasks extension is not offered",
    "tasks-request-headers": "the Tasks extension is not offered",
    "tasks-dispatch-and-envelope": "the Tasks extension is not offered",
    "tasks-required-task-error": "the Tasks extension is not offered",
    "tasks-mrtr-composition": "the Tasks extension is not offered",
  },
};

/**
 * What the Worker does not do on purpose: it answers any Host, since Cloudflare delivers to a Worker only requests
 * for the hostnames routed to it, so a name rebound to another address never reaches it (the daemon, on loopback,
 * refuses foreign Host names and passes the check).
 */
const WORKER_NOT_APPLICABLE: Record<string, string> = {
  "dns-rebinding-protection:localhost-host-rebinding-rejected":
    "a Worker is reached only through the hostnames routed to it; the daemon refuses a foreign Host",
};

/** The scenarios the issue names as applying to this server: each must pass outright, never by the baseline. */
export const MUST_PASS: Record<"2025-11-25" | "2026-07-28", string[]> = {
  "2025-11-25": ["server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection"],
  "2026-07-28": [
    "server-stateless",
    "tools-list",
    "resources-list",
    "sep-2164-resource-not-found",
    "caching",
    "http-header-validation",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "input-required-result-unsupported-methods",
    "input-required-result-validate-input",
  ],
};

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
}

export function conformanceSuite(runtime: "node" | "workerd", start: Start) {
  describe(`the official MCP conformance suite (0.2.0-alpha.12, on Node 22) against /v0/mcp on ${runtime}`, () => {
    let server: Awaited<ReturnType<Start>>;
    let forwarder: http.Server;
    let url: string;
    let work: string;
    const token = randomToken("conformance");

    beforeAll(async () => {
      server = await start({
        seed: { chats: 6, messages: 60, accounts: 1, seed: 8 },
        tokens: [{ token, scopes: ["read", "write"] }],
      });
      forwarder = bearerForwarder(new URL(server.url), token);
      await new Promise<void>((resolve) => forwarder.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(forwarder.address() as { port: number }).port}/v0/mcp`;
      work = await mkdtemp(join(tmpdir(), "inboxd-conformance-"));
    }, 120_000);
    afterAll(async () => {
      forwarder?.closeAllConnections();
      await new Promise((resolve) => forwarder?.close(resolve));
      await server?.stop();
      if (work) await rm(work, { recursive: true, force: true });
    });

    for (const revision of ["2025-11-25", "2026-07-28"] as const)
      it(`passes every scenario the ${revision} requirement set holds that applies to this server`, async () => {
        const expected = { ...NOT_APPLICABLE[revision], ...(runtime === "workerd" ? WORKER_NOT_APPLICABLE : {}) };
        const baseline = join(work, `expected-${revision}.yml`);
        await writeFile(
          baseline,
          `server:\n${Object.keys(expected)
            .map((k) => `  - ${k}\n`)
            .join("")}`,
        );
        const out = join(work, revision);
        const run = await promisify(execFile)(
          join(root, ".ci/with-node"),
          [
            "22",
            "node",
            CLI,
            "server",
            "--url",
            url,
            "--requirements",
            revision,
            "--expected-failures",
            baseline,
            "-o",
            out,
          ],
          { timeout: 240_000, maxBuffer: 32 * 1024 * 1024 },
        ).then(
          (r) => ({ code: 0, output: r.stdout + r.stderr }),
          (e: { code?: number; stdout?: string; stderr?: string }) => ({
            code: e.code ?? 1,
            output: `${e.stdout ?? ""}${e.stderr ?? ""}`,
          }),
        );
        const summary = run.output.slice(run.output.indexOf("=== SUMMARY"));
        console.log(`conformance ${revision} on ${runtime}:\n${summary}`);
        expect(run.code, summary).toBe(0);

        // Beyond the exit code: the scenarios that apply passed every check outright.
        const checks = await checksByScenario(out);
        for (const scenario of MUST_PASS[revision]) {
          const list = checks.get(scenario);
          expect(list, `${scenario} ran`).toBeDefined();
          const failed = list!.filter(
            (c) => (c.status === "FAILURE" || c.status === "WARNING") && !expected[`${scenario}:${c.id}`],
          );
          expect(failed, `${scenario}: ${failed.map((c) => `${c.id}: ${c.errorMessage}`).join("; ")}`).toEqual([]);
          expect(
            list!.some((c) => c.status === "SUCCESS"),
            `${scenario} passed a check`,
          ).toBe(true);
        }
      }, 300_000);
  });
}

/** Results are saved as `<out>/server-<scenario>-<timestamp>/checks.json`. */
async function checksByScenario(out: string): Promise<Map<string, Check[]>> {
  const map = new Map<string, Check[]>();
  for (const dir of await readdir(out)) {
    const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(dir)?.[1];
    if (scenario) map.set(scenario, JSON.parse(await readFile(join(out, dir, "checks.json"), "utf8")));
  }
  return map;
}

/** Forwards every request to `target` with `Authorization: Bearer <token>` added; nothing else changes. */
function bearerForwarder(target: URL, token: string): http.Server {
  return http.createServer((req, res) => {
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", (error) => res.destroy(error));
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
}
