import { defineConfig } from "vitest/config";

// One Node-side config: unit tests beside the code, and the scenario suite in test/ that drives the real daemon
// over HTTP and workerd through Miniflare.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "adapters/**/*.test.ts", "test/**/*.test.ts"],
    // Needs one installed checkout per Node runtime: `npm run test:runtimes`, run by .ci/run. The inbox peer is
    // started by test/scenario/inboxes.test.ts, against the deployment that file starts.
    exclude: ["test/runtimes/**", "test/scenario/inbox-peer/**", "**/node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    // The encrypted Matrix suites' peer (matrix-js-sdk, with its Rust crypto) logs every sync and key operation at
    // debug level, and some of its loggers are made before a test can quiet them: their stdout is dropped. A failing
    // test there still says what it waited for and what it saw.
    onConsoleLog: (_log, type, entity) => {
      const file = entity && ("moduleId" in entity ? entity.moduleId : entity.module.moduleId);
      return !(type === "stdout" && file && /test\/matrix\/encrypted-/.test(file));
    },
  },
});
