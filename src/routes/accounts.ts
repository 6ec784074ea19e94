import * as v from "valibot";
import type { Api } from "../http/route-kit.ts";
import { Account, pageOf, User } from "../schema/wire.ts";
import { getAccount, listAccounts, listContacts, searchContacts } from "../services/accounts.ts";
import { ContactsQuery, ContactListQuery } from "../schema/requests/accounts.ts";

export function accountRoutes(api: Api) {
  const tag = "Accounts";
  api
    .add(
      {
        method: "GET",
        path: "/v1/accounts",
        operationId: "getAccounts",
        summary: "List chat accounts",
        tag,
        response: v.array(Account),
      },
      ({ rc }) => listAccounts(rc.app),
    )
    .add(
      {
        method: "GET",
        path: "/v1/accounts/:accountID",
        operationId: "getAccount",
        extension: true,
        summary: "Retrieve an account",
        tag,
        response: Account,
      },
      ({ rc, params }) => getAccount(rc.app, params.accountID),
    )
    .add(
      {
        method: "GET",
        path: "/v1/accounts/:accountID/contacts",
        operationId: "searchContacts",
        summary: "Search contacts",
        tag: "Contacts",
        query: ContactsQuery,
        response: v.strictObject({ items: v.array(User) }),
        description: "People on the account's network whose name, username, phone or email matches `query`.",
      },
      ({ rc, params, query }) => searchContacts(rc.app, params.accountID, query.query),
    )
    .add(
      {
        method: "GET",
        path: "/v1/accounts/:accountID/contacts/list",
        operationId: "listContacts",
        summary: "List contacts",
        tag: "Contacts",
        query: ContactListQuery,
        response: pageOf(User),
        description: "The account's contacts sorted by name, paged with cursors.",
      },
      ({ rc, params, query }) => listContacts(rc.app, params.accountID, query),
    );
}
