import * as v from "valibot";
import { bounded, LIMITS } from "../http/limits.ts";
import type { ApiRouter } from "../http/route-kit.ts";
import { direction, pathParam, queryInt, validate } from "../http/validate.ts";
import { getAccount, listAccounts, listContacts, searchContacts } from "../services/accounts.ts";

export const ContactsQuery = v.object({ query: v.pipe(bounded(LIMITS.queryTextBytes), v.trim(), v.minLength(1, "query must not be empty")) });
export const ContactListQuery = v.object({
  cursor: v.optional(bounded(LIMITS.cursorBytes)),
  direction: v.optional(direction),
  limit: v.optional(queryInt(1, 200)),
  query: v.optional(bounded(LIMITS.queryTextBytes)),
});

export function accountRoutes(router: ApiRouter) {
  router
    .get("/v1/accounts", (_req, rc) => listAccounts(rc.app))
    .get("/v1/accounts/:accountID", (req, rc) => getAccount(rc.app, pathParam(req.params, "accountID")))
    .get("/v1/accounts/:accountID/contacts", (req, rc) => {
      const q = validate("query", ContactsQuery, rc.query);
      return searchContacts(rc.app, pathParam(req.params, "accountID"), q.query);
    })
    .get("/v1/accounts/:accountID/contacts/list", (req, rc) =>
      listContacts(rc.app, pathParam(req.params, "accountID"), validate("query", ContactListQuery, rc.query)),
    );
}
