import { startNode } from "../harness/node.ts";
import { sessionTests } from "./sessions.ts";
import { mcpSuite } from "./suite.ts";

mcpSuite("node", (options) => startNode(options));
sessionTests((options) => startNode(options), "immediately");
