import type { Api } from "../http/route-kit.ts";

/** /v1/labels: device-local chat labels (issue 10). */
export function labelRoutes(_api: Api) {}
