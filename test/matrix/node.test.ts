import { startDaemonRuntime } from "../harness/bridge-runtime.ts";
import { matrixSuite } from "./suite.ts";

matrixSuite({
  name: "the Node daemon",
  start: (token, { firstBackfill }) => startDaemonRuntime(token, { matrixFirstBackfill: firstBackfill }),
});
