import { startWorkerd } from "../harness/workerd.ts";
import { mcpSuite } from "./suite.ts";

// The sessions of /v0/sse live in the Durable Object's memory; the stateless /v0/mcp keeps none.
mcpSuite("workerd", (options) => startWorkerd(options));
