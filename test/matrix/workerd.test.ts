import { startWorkerdRuntime } from "../harness/bridge-runtime.ts";
import { matrixSuite } from "./suite.ts";

// The Durable Object drives the account's /sync long poll with outbound fetch while it is awake; after a restart
// (or an eviction) the next request wakes it and the sync resumes from the position it saved.
matrixSuite({
  name: "workerd",
  start: (token, { firstBackfill }) => startWorkerdRuntime(token, { matrixFirstBackfill: firstBackfill }),
});
