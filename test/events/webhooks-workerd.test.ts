/** The webhook log suite (webhooks-log.ts) on the Worker (workerd through Miniflare). */
import { startWorkerd } from "../harness/workerd.ts";
import { webhookLogSuite } from "./webhooks-log.ts";

webhookLogSuite("workerd", ({ maxEvents, ...options }) =>
  startWorkerd({ ...options, vars: maxEvents ? { INBOXD_EVENT_LOG_MAX_EVENTS: String(maxEvents) } : undefined }),
);
