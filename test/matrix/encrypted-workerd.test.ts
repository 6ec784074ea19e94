import { startWorkerdRuntime } from "../harness/bridge-runtime.ts";
import { encryptedSuite } from "./encrypted-suite.ts";

// The device's crypto store lives in the Durable Object's storage: a restart rebuilds it from there.
encryptedSuite({
  name: "workerd",
  start: (token, { firstBackfill }) => startWorkerdRuntime(token, { matrixFirstBackfill: firstBackfill }),
});
