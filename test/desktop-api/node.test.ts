import { startDaemonRuntime } from "../harness/bridge-runtime.ts";
import { desktopApiSuite } from "./suite.ts";

desktopApiSuite({
  name: "the Node daemon",
  start: (token, { firstBackfill }) => startDaemonRuntime(token, { desktopApiFirstBackfill: firstBackfill }),
});
