import { defineConfig } from "vitest/config";

// `npm run test:matrix-live`: the optional live test (test/matrix/live.ts), outside `npm test`, which runs
// against the bundled Synapse only.
export default defineConfig({
  test: { include: ["test/matrix/live.ts"], testTimeout: 300_000, hookTimeout: 120_000, pool: "forks" },
});
