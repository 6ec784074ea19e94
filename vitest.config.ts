import { defineConfig } from "vitest/config";

// One Node-side config: unit tests beside the code, and the scenario suite in test/ that drives the real daemon
// over HTTP and workerd through Miniflare.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "adapters/**/*.test.ts", "test/**/*.test.ts"],
    // Needs one installed checkout per Node runtime: `npm run test:runtimes`, run by .ci/run.
    exclude: ["test/runtimes/**", "**/node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
