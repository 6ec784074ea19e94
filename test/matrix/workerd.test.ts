import { startWorkerd } from "../harness/workerd.ts";
import { matrixSuite } from "./suite.ts";

// The Durable Object drives the account's /sync long poll with outbound fetch while it is awake; after a restart
// (or an eviction) the next request wakes it and the sync resumes from the position it saved.
matrixSuite({
  name: "workerd",
  async start(token, { firstBackfill }) {
    const worker = await startWorkerd({ token, tuning: { matrixFirstBackfill: firstBackfill } });
    return {
      url: worker.url,
      token,
      async restart(whileDown) {
        await worker.restart();
        await whileDown?.();
      },
      stop: () => worker.stop(),
    };
  },
});
