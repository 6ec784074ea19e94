/** The webhook log suite (webhooks-log.ts) on the Node daemon. */
import { startNode } from "../harness/node.ts";
import { webhookLogSuite } from "./webhooks-log.ts";

webhookLogSuite("node", ({ maxEvents, ...options }) =>
  startNode({ ...options, eventLog: maxEvents ? { maxEvents } : undefined }),
);
