import * as v from "valibot";
import { bounded, LIMITS } from "../limits.ts";
import { direction, queryInt } from "../query.ts";

/** Accounts and contacts: the request schemas (query and body) of their routes, which MCP tools and /v0 share. */
export const ContactsQuery = v.object({
  query: v.pipe(bounded(LIMITS.queryTextBytes), v.trim(), v.minLength(1, "query must not be empty")),
});
export const ContactListQuery = v.object({
  cursor: v.optional(bounded(LIMITS.cursorBytes)),
  direction: v.optional(direction),
  limit: v.optional(queryInt(1, 200)),
  query: v.optional(bounded(LIMITS.queryTextBytes)),
});
