// The 2026-07-28 revision on the Worker: the official conformance suite for both revisions, and subscriptions/listen.
import { startWorkerd } from "../harness/workerd.ts";
import { conformanceSuite } from "./conformance.ts";
import { listenSuite } from "./listen.ts";

conformanceSuite("workerd", (options) => startWorkerd(options));
listenSuite("workerd", (options) => startWorkerd(options));
