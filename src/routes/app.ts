import * as v from "valibot";
import { bounded, id, LIMITS } from "../http/limits.ts";
import type { ApiRouter } from "../http/route-kit.ts";
import { validate, validateBody } from "../http/validate.ts";
import { focus } from "../services/focus.ts";
import { unifiedSearch } from "../services/search.ts";

export const SearchQuery = v.object({ query: v.pipe(bounded(LIMITS.queryTextBytes), v.trim(), v.minLength(1, "query must not be empty")) });

export const FocusBody = v.object({
  chatID: v.optional(id),
  messageID: v.optional(id),
  draftText: v.optional(bounded(LIMITS.textBytes)),
  draftAttachmentPath: v.optional(bounded(LIMITS.urlBytes)),
});

/**
 * The app-level routes: GET /v1/search (chats, groups by participant and the first page of messages in one answer,
 * services/search.ts) and POST /v1/focus (services/focus.ts).
 */
export function appRoutes(router: ApiRouter) {
  router
    .get("/v1/search", (_req, rc) => unifiedSearch(rc.app, validate("query", SearchQuery, rc.query).query))
    .post("/v1/focus", async (req, rc) => focus(rc.app, await validateBody(req, FocusBody)));
}
