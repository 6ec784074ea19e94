import { startNode } from "../harness/node.ts";
import { scenarioSuite } from "./suite.ts";

scenarioSuite("node", (options) => startNode(options), { checksHost: true });
