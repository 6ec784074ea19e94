import * as v from "valibot";
import { bounded, id, LIMITS } from "../schema/limits.ts";
import type { Api } from "../http/route-kit.ts";
import {
  Bridge,
  BridgeCapabilities,
  BridgeConnection,
  CancelledSession,
  Login,
  LoginFlow,
  LoginSession,
  RemovedLogin,
} from "../schema/bridges.ts";
import {
  bridgeCapabilities,
  getBridge,
  getLogin,
  listBridges,
  listLogins,
  loginFlows,
  presentSession,
  removeLogin,
  startLoginSession,
} from "../services/bridges.ts";

export const SessionBody = v.object({
  flowID: v.optional(id),
  accountID: v.optional(id),
  loginID: v.optional(id),
  clientHTTP: v.optional(
    v.pipe(
      v.boolean(),
      v.description(
        "The client can make client_http requests (bridgev2's `client_http=1`); without it no such step is sent.",
      ),
    ),
  ),
});

const stepCommon = {
  fields: v.optional(
    v.record(v.string(), v.pipe(v.union([v.string(), v.number(), v.boolean()]), v.transform(String))),
    {},
  ),
  lastURL: v.optional(bounded(LIMITS.urlBytes)),
  source: v.optional(v.picklist(["api", "webview", "browser_extension"])),
};
const httpHeaders = v.record(v.string(), v.array(v.string()));
/** bridgev2's LoginClientHTTPResponse: the response (a status 100–599), or `error` for a request that failed. */
const ClientHTTPResponse = v.pipe(
  v.strictObject({
    statusCode: v.optional(v.pipe(v.number(), v.integer("expected an integer"), v.minValue(100), v.maxValue(599))),
    finalURL: v.optional(bounded(LIMITS.urlBytes)),
    headers: v.optional(httpHeaders),
    body: v.optional(v.pipe(v.string(), v.base64("expected base64"))),
    error: v.optional(v.string()),
  }),
  v.check(
    (r) => r.statusCode !== undefined || r.error !== undefined,
    "needs statusCode (the request's answer) or error (why there was none)",
  ),
);
export const StepBody = v.variant(
  "type",
  [
    v.object({ type: v.picklist(["user_input", "cookies", "display_and_wait"]), ...stepCommon }),
    v.object({
      type: v.literal("webauthn"),
      credential: v.pipe(
        v.record(v.string(), v.unknown()),
        v.description("PublicKeyCredential.toJSON() of the passkey"),
      ),
      ...stepCommon,
    }),
    v.object({ type: v.literal("client_http"), response: ClientHTTPResponse, ...stepCommon }),
  ],
  "expected user_input, cookies, display_and_wait, webauthn or client_http",
);
export const RemoveBody = v.object({
  scope: v.optional(v.picklist(["current-device", "all-devices"]), "current-device"),
});

/** The bridge surface, with the paths the newer official clients use (wire-compat §6). */
export function bridgeRoutes(api: Api) {
  const tag = "Bridges";
  api
    .add(
      {
        method: "GET",
        path: "/v1/bridges",
        operationId: "listBridges",
        extension: true,
        summary: "List bridges",
        tag,
        response: v.strictObject({ items: v.array(Bridge) }),
        description: "The networks this device can connect, with their accounts and whether another account fits.",
      },
      ({ rc }) => listBridges(rc.app),
    )
    .add(
      {
        method: "GET",
        path: "/v1/bridges/:bridgeID",
        operationId: "getBridge",
        extension: true,
        summary: "Retrieve a bridge",
        tag,
        response: Bridge,
      },
      ({ rc, params }) => getBridge(rc.app, params.bridgeID),
    )
    .add(
      {
        method: "GET",
        path: "/v1/bridges/:bridgeID/capabilities",
        operationId: "getBridgeCapabilities",
        extension: true,
        summary: "Bridge capabilities",
        tag,
        response: BridgeCapabilities,
      },
      ({ rc, params }) => bridgeCapabilities(rc.app, params.bridgeID),
    )
    .add(
      {
        method: "GET",
        path: "/v1/bridges/:bridgeID/login-flows",
        operationId: "listLoginFlows",
        extension: true,
        summary: "List login flows",
        tag,
        response: v.strictObject({ items: v.array(LoginFlow) }),
      },
      ({ rc, params }) => loginFlows(rc.app, params.bridgeID),
    )
    .add(
      {
        method: "POST",
        path: "/v1/bridges/:bridgeID/login-sessions",
        operationId: "startLoginSession",
        extension: true,
        summary: "Start a login session",
        tag,
        body: SessionBody,
        response: LoginSession,
        description:
          "A new login (a new account), or with `accountID`/`loginID` a reconnect of an existing login that keeps its accounts and history.",
      },
      ({ rc, params, body }) => startLoginSession(rc.app, params.bridgeID, body),
    )
    .add(
      {
        method: "GET",
        path: "/v1/bridges/:bridgeID/login-sessions/:sessionID",
        operationId: "getLoginSession",
        extension: true,
        summary: "Retrieve a login session",
        tag,
        response: LoginSession,
      },
      ({ rc, params }) => presentSession(rc.app, rc.app.sessions.get(params.bridgeID, params.sessionID)),
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/bridges/:bridgeID/login-sessions/:sessionID",
        operationId: "cancelLoginSession",
        extension: true,
        summary: "Cancel a login session",
        tag,
        response: CancelledSession,
      },
      ({ rc, params }) => {
        const session = rc.app.sessions.cancel(params.bridgeID, params.sessionID);
        return { bridgeID: session.bridgeID, loginSessionID: session.id, status: session.status };
      },
    )
    .add(
      {
        method: "POST",
        path: "/v1/bridges/:bridgeID/login-sessions/:sessionID/steps/:stepID",
        operationId: "submitLoginStep",
        extension: true,
        summary: "Answer the current login step",
        tag,
        body: StepBody,
        response: LoginSession,
        description:
          "`type` must be the current step's type and `stepID` its ID; `display_and_wait` waits for the network.",
      },
      async ({ rc, params, body }) => {
        const submission = {
          fields: body.fields,
          lastURL: body.lastURL,
          credential: "credential" in body ? body.credential : undefined,
          response: "response" in body ? body.response : undefined,
        };
        return presentSession(
          rc.app,
          await rc.app.sessions.submit(params.bridgeID, params.sessionID, params.stepID, body.type, submission),
        );
      },
    );
  // Logins, also under the name the newer official clients use (connections): one implementation, two paths.
  for (const [noun, One, schema] of [
    ["logins", "Login", Login],
    ["connections", "Connection", BridgeConnection],
  ] as const) {
    const base = `/v1/bridges/:bridgeID/${noun}`;
    api
      .add(
        {
          method: "GET",
          path: base,
          operationId: `list${One}s`,
          extension: true,
          summary: `List ${noun}`,
          tag,
          response: v.strictObject({ items: v.array(schema) }),
          description:
            noun === "connections"
              ? "The bridge's logins, under the name the newer official clients use (the same as …/logins)."
              : undefined,
        },
        ({ rc, params }) => listLogins(rc.app, params.bridgeID),
      )
      .add(
        {
          method: "GET",
          path: `${base}/:loginID`,
          operationId: `get${One}`,
          extension: true,
          summary: `Retrieve a ${One.toLowerCase()}`,
          tag,
          response: schema,
        },
        ({ rc, params }) => getLogin(rc.app, params.bridgeID, params.loginID),
      )
      .add(
        {
          method: "POST",
          path: `${base}/:loginID/remove`,
          operationId: `remove${One}`,
          extension: true,
          summary: `Remove a ${One.toLowerCase()} and its accounts`,
          tag,
          body: RemoveBody,
          response: RemovedLogin,
        },
        ({ rc, params, body }) => removeLogin(rc.app, params.bridgeID, params.loginID, body.scope),
      );
  }
}
