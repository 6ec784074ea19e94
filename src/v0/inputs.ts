/**
 * What each /v0 endpoint accepts: the spec's /v0 table, built from the /v1 operations' own schemas. GET endpoints
 * take their parameters in the query, POST endpoints in a JSON body; where the spec names no body fields, they are
 * those of the /v1 successor plus the `chatID` /v1 takes in its path (amendment "Issue 9 (/v0): request bodies").
 */
import * as v from "valibot";
import { id } from "../schema/limits.ts";
import { ContactsQuery } from "../schema/requests/accounts.ts";
import { FocusBody, SearchQuery as UnifiedSearchQuery } from "../schema/requests/app.ts";
import { UrlBody } from "../schema/requests/assets.ts";
import {
  ArchiveBody,
  CreateBody,
  GetQuery,
  ReminderBody,
  SearchQuery as ChatSearchQuery,
} from "../schema/requests/chats.ts";
import { SearchQuery as MessageSearchQuery, SendBody } from "../schema/requests/messages.ts";
import { SEARCH_PAGE } from "../services/message-search.ts";

/**
 * A filter v0 documents as nullable. On the wire a null is `key=`, which the query parser drops, so null and absent
 * both mean "the default"; the schema says so for the document.
 */
const nullable = <S extends v.GenericSchema>(field: v.OptionalSchema<S, undefined>) =>
  v.optional(v.nullable(field.wrapped));

const chatID = v.pipe(id, v.description("The chat's ID, or its localChatID."));
const accountID = v.pipe(id, v.description("The account to search on."));

/** v0 answers 20 participants unless asked otherwise (/v1: all of them); the get-chat handler fills it in. */
export const V0_PARTICIPANTS = 20;

export const GetChatQuery = v.object({
  chatID,
  maxParticipantCount: v.optional(
    v.pipe(
      v.nullable(GetQuery.entries.maxParticipantCount.wrapped),
      v.description(`-1 for all, else 0 to 500; default ${V0_PARTICIPANTS}.`),
    ),
  ),
});

export const SearchChatsQuery = v.object({
  ...ChatSearchQuery.entries,
  includeMuted: nullable(ChatSearchQuery.entries.includeMuted),
  unreadOnly: nullable(ChatSearchQuery.entries.unreadOnly),
});

export const SearchMessagesQuery = v.object({
  ...MessageSearchQuery.entries,
  // v0 took 1 to 500, default 20; a page holds at most 20 either way: the search service's own cap and default.
  limit: v.optional(
    v.pipe(
      MessageSearchQuery.entries.limit.wrapped,
      v.description(`1 to 500, default ${SEARCH_PAGE}; a page holds at most ${SEARCH_PAGE} whatever the limit.`),
    ),
  ),
  sender: v.optional(v.pipe(MessageSearchQuery.entries.sender.wrapped, v.description("`me`, `others`, or a user ID."))),
  excludeLowPriority: nullable(MessageSearchQuery.entries.excludeLowPriority),
  includeMuted: nullable(MessageSearchQuery.entries.includeMuted),
});

export const SearchQuery = UnifiedSearchQuery;
export const SearchUsersQuery = v.object({ accountID, ...ContactsQuery.entries });

export const OpenAppBody = FocusBody;
export const DownloadAssetBody = UrlBody;
export const CreateChatBody = CreateBody;
export const ArchiveChatBody = v.object({ chatID, ...ArchiveBody.entries });
export const SetChatReminderBody = v.object({ chatID, ...ReminderBody.entries });
export const ClearChatReminderBody = v.object({ chatID });
export const SendMessageBody = v.object({ chatID, ...SendBody.entries });

/** The filters as the services take them: a null (v0's "unset") is the same as leaving the filter out. */
export function withoutNulls<T extends object>(input: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== null)) as {
    [K in keyof T]: Exclude<T[K], null>;
  };
}
