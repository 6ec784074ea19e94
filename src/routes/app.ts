import * as v from "valibot";
import { bounded, id, LIMITS } from "../http/limits.ts";
import type { Api } from "../http/route-kit.ts";
import { Success, UnifiedSearchResult } from "../schema/wire.ts";
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
export function appRoutes(api: Api) {
  const tag = "App";
  api
    .add({ method: "GET", path: "/v1/search", operationId: "search", summary: "Search", tag, query: SearchQuery, response: UnifiedSearchResult,
      description: "Chats, groups by participant and the first page of messages matching `query`, in one answer." },
      ({ rc, query }) => unifiedSearch(rc.app, query.query))
    .add({ method: "POST", path: "/v1/focus", operationId: "focusApp", summary: "Focus the app", tag, body: FocusBody, response: Success,
      description: "There is no window here: the IDs are checked (404 otherwise) and a `focus` event goes to connected WebSocket clients, so a UI can follow it." },
      ({ rc, body }) => focus(rc.app, body));
}
