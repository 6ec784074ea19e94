// The 2026-07-28 revision on the daemon: the official conformance suite for both revisions, and subscriptions/listen.
import { startNode } from "../harness/node.ts";
import { conformanceSuite } from "./conformance.ts";
import { listenSuite } from "./listen.ts";

conformanceSuite("node", (options) => startNode(options));
listenSuite("node", (options) => startNode(options));
