import * as v from "valibot";
import type { ApiRouter } from "../http/route-kit.ts";
import { direction, pathParam, queryInt, validate } from "../http/validate.ts";
import { getAccount, listAccounts, listContacts, searchContacts } from "../services/accounts.ts";

const ContactsQuery = v.object({ query: v.pipe(v.string(), v.trim(), v.minLength(1, "query must not be empty")) });
const ContactListQuery = v.object({
  cursor: v.optional(v.string()),
  direction: v.optional(direction),
  limit: v.optional(queryInt(1, 200)),
  query: v.optional(v.string()),
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
