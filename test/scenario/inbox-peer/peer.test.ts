import { inboxStart } from "../../harness/inboxes.ts";
import { scenarioSuite } from "../suite.ts";

// The same scenarios as test/scenario/inboxes.test.ts runs, in another inbox of the deployment that file started
// (its URL in INBOXD_PEER_DEPLOYMENT), at the same time.
const url = process.env.INBOXD_PEER_DEPLOYMENT;
if (!url) throw new Error("INBOXD_PEER_DEPLOYMENT is not set: test/scenario/inboxes.test.ts starts this run");
scenarioSuite(
  "workerd, the inbox bob of many",
  inboxStart(() => ({ url }), "bob"),
  { checksHost: false },
);
