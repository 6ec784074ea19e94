import { defineConfig } from "vitest/config";

// `npm run test:runtimes`: a data directory written by each Node runtime, read and written by the others. It needs
// a checkout installed (`npm ci`) per runtime, which .ci/run prepares; `npm test` does not run it.
export default defineConfig({
  test: {
    include: ["test/runtimes/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
