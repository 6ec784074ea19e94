import { startNode } from "../harness/node.ts";
import { conformanceSuite } from "./conformance.ts";

conformanceSuite("node", (options) => startNode(options));
