import { startWorkerdRuntime } from "../harness/bridge-runtime.ts";
import { desktopApiSuite } from "./suite.ts";

// The Durable Object opens the upstream's /v1/ws with a fetch upgrade and keeps itself awake while it is open; after
// a restart the next request wakes it and the stream resumes from the last event it saved.
desktopApiSuite({
  name: "workerd",
  start: (token, { firstBackfill }) => startWorkerdRuntime(token, { desktopApiFirstBackfill: firstBackfill }),
});
