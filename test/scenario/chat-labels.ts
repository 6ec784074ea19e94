/** Labels, and the newer chat/message/account fields (issue 10). */
import type { Env } from "./kit.ts";

export function chatLabelScenarios(_env: Env) {}
