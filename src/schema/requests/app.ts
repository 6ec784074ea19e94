import * as v from "valibot";
import { bounded, id, LIMITS } from "../limits.ts";

/** The app-level operations (unified search, focus): the request schemas (query and body) of their routes, which MCP tools and /v0 share. */
export const SearchQuery = v.object({
  query: v.pipe(bounded(LIMITS.queryTextBytes), v.trim(), v.minLength(1, "query must not be empty")),
});

export const FocusBody = v.object({
  chatID: v.optional(id),
  messageID: v.optional(id),
  draftText: v.optional(bounded(LIMITS.textBytes)),
  draftAttachmentPath: v.optional(bounded(LIMITS.urlBytes)),
});
