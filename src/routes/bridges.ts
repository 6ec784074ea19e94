import * as v from "valibot";
import { bounded, id, LIMITS } from "../http/limits.ts";
import type { ApiRouter } from "../http/route-kit.ts";
import { pathParam, validateBody } from "../http/validate.ts";
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
export function bridgeRoutes(router: ApiRouter) {
  const bridgeID = (req: { params: Record<string, string> }) => pathParam(req.params, "bridgeID");
  const sessionID = (req: { params: Record<string, string> }) => pathParam(req.params, "sessionID");
  router
    .get("/v1/bridges", (_req, rc) => listBridges(rc.app))
    .get("/v1/bridges/:bridgeID", (req, rc) => getBridge(rc.app, bridgeID(req)))
    .get("/v1/bridges/:bridgeID/capabilities", (req, rc) => bridgeCapabilities(rc.app, bridgeID(req)))
    .get("/v1/bridges/:bridgeID/login-flows", (req, rc) => loginFlows(rc.app, bridgeID(req)))
    .post("/v1/bridges/:bridgeID/login-sessions", async (req, rc) => startLoginSession(rc.app, bridgeID(req), await validateBody(req, SessionBody)))
    .get("/v1/bridges/:bridgeID/login-sessions/:sessionID", (req, rc) => presentSession(rc.app, rc.app.sessions.get(bridgeID(req), sessionID(req))))
    .delete("/v1/bridges/:bridgeID/login-sessions/:sessionID", (req, rc) => {
      const session = rc.app.sessions.cancel(bridgeID(req), sessionID(req));
      return { bridgeID: session.bridgeID, loginSessionID: session.id, status: session.status };
    })
    .post("/v1/bridges/:bridgeID/login-sessions/:sessionID/steps/:stepID", async (req, rc) => {
      const body = await validateBody(req, StepBody);
      const session = await rc.app.sessions.submit(bridgeID(req), sessionID(req), pathParam(req.params, "stepID"), body.type, {
        fields: body.fields,
        lastURL: body.lastURL,
      });
      return presentSession(rc.app, session);
    })
    .get("/v1/bridges/:bridgeID/logins", (req, rc) => listLogins(rc.app, bridgeID(req)))
    .get("/v1/bridges/:bridgeID/logins/:loginID", (req, rc) => getLogin(rc.app, bridgeID(req), pathParam(req.params, "loginID")))
    .post("/v1/bridges/:bridgeID/logins/:loginID/remove", async (req, rc) =>
      removeLogin(rc.app, bridgeID(req), pathParam(req.params, "loginID"), (await validateBody(req, RemoveBody)).scope),
    );
}
