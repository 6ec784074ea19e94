import * as v from "valibot";
import { bounded, id, LIMITS } from "../http/limits.ts";
import type { Api } from "../http/route-kit.ts";
import { Bridge, BridgeCapabilities, CancelledSession, Login, LoginFlow, LoginSession, RemovedLogin } from "../schema/bridges.ts";
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
});
export const StepBody = v.object({
  type: v.picklist(["user_input", "cookies", "display_and_wait"], "expected user_input, cookies or display_and_wait"),
  fields: v.optional(v.record(v.string(), v.pipe(v.union([v.string(), v.number(), v.boolean()]), v.transform(String))), {}),
  lastURL: v.optional(bounded(LIMITS.urlBytes)),
  source: v.optional(v.picklist(["api", "webview", "browser_extension"])),
});
export const RemoveBody = v.object({ scope: v.optional(v.picklist(["current-device", "all-devices"]), "current-device") });

/** The bridge surface, with the paths the newer official clients use (wire-compat §6). */
export function bridgeRoutes(api: Api) {
  const tag = "Bridges";
  api
    .add({ method: "GET", path: "/v1/bridges", operationId: "listBridges", extension: true, summary: "List bridges", tag, response: v.strictObject({ items: v.array(Bridge) }),
      description: "The networks this device can connect, with their accounts and whether another account fits." },
      ({ rc }) => listBridges(rc.app))
    .add({ method: "GET", path: "/v1/bridges/:bridgeID", operationId: "getBridge", extension: true, summary: "Retrieve a bridge", tag, response: Bridge },
      ({ rc, params }) => getBridge(rc.app, params.bridgeID))
    .add({ method: "GET", path: "/v1/bridges/:bridgeID/capabilities", operationId: "getBridgeCapabilities", extension: true, summary: "Bridge capabilities", tag, response: BridgeCapabilities },
      ({ rc, params }) => bridgeCapabilities(rc.app, params.bridgeID))
    .add({ method: "GET", path: "/v1/bridges/:bridgeID/login-flows", operationId: "listLoginFlows", extension: true, summary: "List login flows", tag, response: v.strictObject({ items: v.array(LoginFlow) }) },
      ({ rc, params }) => loginFlows(rc.app, params.bridgeID))
    .add({ method: "POST", path: "/v1/bridges/:bridgeID/login-sessions", operationId: "startLoginSession", extension: true, summary: "Start a login session", tag, body: SessionBody, response: LoginSession,
      description: "A new login (a new account), or with `accountID`/`loginID` a reconnect of an existing login that keeps its accounts and history." },
      ({ rc, params, body }) => startLoginSession(rc.app, params.bridgeID, body))
    .add({ method: "GET", path: "/v1/bridges/:bridgeID/login-sessions/:sessionID", operationId: "getLoginSession", extension: true, summary: "Retrieve a login session", tag, response: LoginSession },
      ({ rc, params }) => presentSession(rc.app, rc.app.sessions.get(params.bridgeID, params.sessionID)))
    .add({ method: "DELETE", path: "/v1/bridges/:bridgeID/login-sessions/:sessionID", operationId: "cancelLoginSession", extension: true, summary: "Cancel a login session", tag, response: CancelledSession },
      ({ rc, params }) => {
        const session = rc.app.sessions.cancel(params.bridgeID, params.sessionID);
        return { bridgeID: session.bridgeID, loginSessionID: session.id, status: session.status };
      })
    .add({ method: "POST", path: "/v1/bridges/:bridgeID/login-sessions/:sessionID/steps/:stepID", operationId: "submitLoginStep", extension: true, summary: "Answer the current login step", tag, body: StepBody, response: LoginSession,
      description: "`type` must be the current step's type and `stepID` its ID; `display_and_wait` waits for the network." },
      async ({ rc, params, body }) =>
        presentSession(rc.app, await rc.app.sessions.submit(params.bridgeID, params.sessionID, params.stepID, body.type, { fields: body.fields, lastURL: body.lastURL })))
    .add({ method: "GET", path: "/v1/bridges/:bridgeID/logins", operationId: "listLogins", extension: true, summary: "List logins", tag, response: v.strictObject({ items: v.array(Login) }) },
      ({ rc, params }) => listLogins(rc.app, params.bridgeID))
    .add({ method: "GET", path: "/v1/bridges/:bridgeID/logins/:loginID", operationId: "getLogin", extension: true, summary: "Retrieve a login", tag, response: Login },
      ({ rc, params }) => getLogin(rc.app, params.bridgeID, params.loginID))
    .add({ method: "POST", path: "/v1/bridges/:bridgeID/logins/:loginID/remove", operationId: "removeLogin", extension: true, summary: "Remove a login and its accounts", tag, body: RemoveBody, response: RemovedLogin },
      ({ rc, params, body }) => removeLogin(rc.app, params.bridgeID, params.loginID, body.scope));
}
