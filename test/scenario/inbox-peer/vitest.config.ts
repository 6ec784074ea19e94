import { defineConfig } from "vitest/config";

// The second inbox's scenario run, started by test/scenario/inboxes.test.ts beside its own (never on its own).
export default defineConfig({
  test: {
    include: ["test/scenario/inbox-peer/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
