import type { Api } from "../http/route-kit.ts";

/** POST /v1/chats/{chatID}/typing (issue 10). */
export function typingRoutes(_api: Api) {}
