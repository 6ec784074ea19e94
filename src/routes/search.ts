import * as v from "valibot";
import { bounded, LIMITS } from "../http/limits.ts";
import type { ApiRouter } from "../http/route-kit.ts";
import { validate } from "../http/validate.ts";
import { unifiedSearch } from "../services/search.ts";

export const SearchQuery = v.object({ query: v.pipe(bounded(LIMITS.queryTextBytes), v.trim(), v.minLength(1, "query must not be empty")) });

/** GET /v1/search: chats, groups by participant and the first page of messages in one answer (services/search.ts). */
export function searchRoutes(router: ApiRouter) {
  router.get("/v1/search", (_req, rc) => unifiedSearch(rc.app, validate("query", SearchQuery, rc.query).query));
}
