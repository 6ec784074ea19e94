import { startDaemonRuntime } from "../harness/bridge-runtime.ts";
import { encryptedSuite } from "./encrypted-suite.ts";

encryptedSuite({
  name: "the Node daemon",
  start: (token, { firstBackfill }) => startDaemonRuntime(token, { matrixFirstBackfill: firstBackfill }),
});
