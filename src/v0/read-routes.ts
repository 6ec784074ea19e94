/**
 * The six reading endpoints of /v0 (GET, parameters in the query): each calls the service its /v1 successor calls
 * and answers in the v0 shapes (src/v0/shapes.ts).
 */
import * as v from "valibot";
import type { Api } from "../http/route-kit.ts";
import { User, type Chat, type Page } from "../schema/wire.ts";
import { listAccounts, searchContacts } from "../services/accounts.ts";
import { getChat, searchChats } from "../services/chats.ts";
import { searchMessages } from "../services/message-search.ts";
import { fromJsonText } from "../services/present.ts";
import { unifiedSearch } from "../services/search.ts";
import {
  GetChatQuery,
  SearchChatsQuery,
  SearchMessagesQuery,
  SearchQuery,
  SearchUsersQuery,
  V0_PARTICIPANTS,
  withoutNulls,
} from "./inputs.ts";
import { addV0 } from "./operation.ts";
import {
  toV0Chat,
  toV0ChatPage,
  toV0MessageSearch,
  V0Account,
  V0Chat,
  V0ChatPage,
  V0MessageSearchPage,
  V0SearchResult,
} from "./shapes.ts";

export function v0ReadRoutes(api: Api): void {
  addV0(
    api,
    "get-accounts",
    {
      summary: "List accounts (v0)",
      response: v.array(V0Account),
      notes: "Each account as `{accountID, network, user}`.",
    },
    ({ rc }) =>
      listAccounts(rc.app).map(({ accountID, network, bridge, user }) => ({
        accountID,
        network: network ?? bridge.type,
        user,
      })),
  );

  addV0(
    api,
    "search",
    { summary: "Search (v0)", query: SearchQuery, response: V0SearchResult },
    async ({ rc, query }) => {
      const { results } = await unifiedSearch(rc.app, query.query);
      return {
        results: {
          chats: results.chats.map(toV0Chat),
          in_groups: results.in_groups.map(toV0Chat),
          messages: toV0MessageSearch(results.messages),
        },
      };
    },
  );

  addV0(
    api,
    "search-users",
    { summary: "Search contacts (v0)", query: SearchUsersQuery, response: v.strictObject({ items: v.array(User) }) },
    ({ rc, query }) => searchContacts(rc.app, query.accountID, query.query),
  );

  addV0(
    api,
    "get-chat",
    {
      summary: "Retrieve a chat (v0)",
      query: GetChatQuery,
      response: V0Chat,
      notes: `\`maxParticipantCount\` defaults to ${V0_PARTICIPANTS} (/v1: all).`,
    },
    ({ rc, query }) => toV0Chat(getChat(rc.app, query.chatID, query.maxParticipantCount ?? V0_PARTICIPANTS)),
  );

  addV0(
    api,
    "search-chats",
    {
      summary: "Search chats (v0)",
      query: SearchChatsQuery,
      response: V0ChatPage,
      notes: "Cursors are those of /v1 chat search: a page can be continued on either.",
    },
    ({ rc, query }) => toV0ChatPage(fromJsonText<Page<Chat>>(searchChats(rc.app, withoutNulls(query)))),
  );

  addV0(
    api,
    "search-messages",
    {
      summary: "Search messages (v0)",
      query: SearchMessagesQuery,
      response: V0MessageSearchPage,
      notes: "`limit` takes 1 to 500 (default 20), yet a page holds at most 20 messages, as on /v1.",
    },
    async ({ rc, query }) => toV0MessageSearch(await searchMessages(rc.app, withoutNulls(query))),
  );
}

/** Chat search answers with JSON already serialised (its cached list form); v0 reshapes it. */
