import * as v from "valibot";
import type { Api } from "../http/route-kit.ts";
import { Success, UnifiedSearchResult } from "../schema/wire.ts";
import { focus } from "../services/focus.ts";
import { unifiedSearch } from "../services/search.ts";
import { SearchQuery, FocusBody } from "../schema/requests/app.ts";

const flag = v.boolean();
/** The shape the newer official clients read (their SDK's SetupRetrieveResponse); `matrix` and `verification` never apply here. */
export const AppSetup = v.strictObject({
  state: v.pipe(
    v.literal("ready"),
    v.description(
      "inboxd is ready once it answers: it has no account of its own to sign in to. The vendor's app also reports " +
        "needs-login, initializing, needs-cross-signing-setup, needs-verification, needs-secrets and needs-first-sync " +
        "(signing in to its Matrix account and setting up its encryption); none of them applies here.",
    ),
  ),
  e2ee: v.pipe(
    v.strictObject({
      crossSigning: flag,
      firstSyncDone: flag,
      hasBackedUpRecoveryKey: flag,
      initialized: flag,
      keyBackup: flag,
      secrets: v.strictObject({
        masterKey: flag,
        megolmBackupKey: flag,
        recoveryKey: flag,
        selfSigningKey: flag,
        userSigningKey: flag,
      }),
      secretStorage: flag,
      verified: flag,
    }),
    v.description(
      "The vendor app's Matrix encryption setup. inboxd has no such layer (each network's encryption is its connector's): every flag is false.",
    ),
  ),
});

const notApplicable = false;
const setup: v.InferOutput<typeof AppSetup> = {
  state: "ready",
  e2ee: {
    crossSigning: notApplicable,
    firstSyncDone: notApplicable,
    hasBackedUpRecoveryKey: notApplicable,
    initialized: notApplicable,
    keyBackup: notApplicable,
    secrets: {
      masterKey: notApplicable,
      megolmBackupKey: notApplicable,
      recoveryKey: notApplicable,
      selfSigningKey: notApplicable,
      userSigningKey: notApplicable,
    },
    secretStorage: notApplicable,
    verified: notApplicable,
  },
};

/**
 * The app-level routes: GET /v1/search (chats, groups by participant and the first page of messages in one answer,
 * services/search.ts), POST /v1/focus (services/focus.ts) and GET /v1/app/setup, which the vendor's CLI asks right
 * after /v1/info (its `status` and `doctor` report a server without it as unreachable).
 */
export function appRoutes(api: Api) {
  const tag = "App";
  api
    .add(
      {
        method: "GET",
        path: "/v1/search",
        operationId: "search",
        summary: "Search",
        tag,
        query: SearchQuery,
        response: UnifiedSearchResult,
        description: "Chats, groups by participant and the first page of messages matching `query`, in one answer.",
      },
      ({ rc, query }) => unifiedSearch(rc.app, query.query),
    )
    .add(
      {
        method: "POST",
        path: "/v1/focus",
        operationId: "focusApp",
        summary: "Focus the app",
        tag,
        body: FocusBody,
        response: Success,
        description:
          "There is no window here: the IDs are checked (404 otherwise) and a `focus` event is logged (WebSocket clients, GET /v1/events, webhooks), so a UI can follow it.",
      },
      ({ rc, body }) => focus(rc.app, body),
    )
    .add(
      {
        method: "GET",
        path: "/v1/app/setup",
        operationId: "getAppSetup",
        extension: true,
        scope: "public",
        summary: "App setup state",
        tag,
        response: AppSetup,
        description:
          'Public, so that an app can learn before it has a token whether the server is ready: inboxd always is (`state: "ready"`).',
      },
      () => setup,
    );
}
