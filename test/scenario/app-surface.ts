/**
 * The newer official surface of issue 10 beside labels: GET /v1/app/setup (public), POST /v1/chats/{chatID}/typing,
 * bridge logins under their second name (…/connections, `connection` on login sessions), and the login-step types
 * bridgev2 added in 2026 as the served document describes them. Raw HTTP, except where the vendor CLI itself goes
 * through SDK 5.0.0's generic `post` (typing): the pinned SDKs have no methods for any of these.
 *
 * The connections scenarios connect one account on the single-account sandbox bridge (a network without typing
 * notifications) and remove it again through …/connections, so later scenarios find the device as it was.
 */
import { randomBytes } from "node:crypto";
import BeeperDesktop from "@beeper/desktop-api";
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, expectSdkError } from "./assert.ts";
import type { Chat } from "../../src/schema/wire.ts";
import { chatPath, enc, waitFor } from "../kit/common.ts";
import { allChats, echoChat, ok, raw, type Env } from "./kit.ts";

const MULTI = "local-sandbox";
const SOLO = "local-sandbox-solo";
const NO_E2EE = {
  crossSigning: false,
  firstSyncDone: false,
  hasBackedUpRecoveryKey: false,
  initialized: false,
  keyBackup: false,
  secrets: {
    masterKey: false,
    megolmBackupKey: false,
    recoveryKey: false,
    selfSigningKey: false,
    userSigningKey: false,
  },
  secretStorage: false,
  verified: false,
};

interface Login {
  bridgeID: string;
  loginID: string;
  status: string;
  accountIDs: string[];
  removeScopes: string[];
  user: { id: string };
}
interface Session {
  loginSessionID: string;
  status: string;
  currentStep?: { stepID: string };
  loginID?: string;
  accountID?: string;
  login?: Login;
  connection?: Login;
}

const bridgePath = (bridgeID: string) => `/v1/bridges/${enc(bridgeID)}`;
const named = (noun: "logins" | "connections", bridgeID: string, loginID?: string) =>
  `${bridgePath(bridgeID)}/${noun}${loginID === undefined ? "" : `/${enc(loginID)}`}`;

export function appSurfaceScenarios(env: Env) {
  describe("app setup (GET /v1/app/setup)", () => {
    it("answers ready without a token, and the same with a read-only or read-write token", async () => {
      const bare = await raw(env, "/v1/app/setup", { token: null });
      expect(bare.status, bare.text).toBe(200);
      expect(bare.headers.get("content-type")).toMatch(/^application\/json/);
      expect(bare.headers.get("x-beeper-desktop-version")).toBeTruthy();
      // Exactly this: ready, no encryption layer set up, and none of the vendor app's matrix/verification details.
      expect(bare.body).toEqual({ state: "ready", e2ee: NO_E2EE });
      for (const token of [env.ro, env.rw])
        expect((await raw(env, "/v1/app/setup", { token })).body).toEqual(bare.body);
    });

    it("refuses a token that is sent but invalid (401), like every public operation", async () => {
      expectError(await raw(env, "/v1/app/setup", { token: `${env.rw}x` }), 401);
    });

    it("has none of the vendor app's setup actions (its sign-in and encryption setup do not apply): 404", async () => {
      for (const path of ["/v1/app/setup/start", "/v1/app/setup/email", "/v1/app/setup/verifications"]) {
        const res = await raw(env, path, { method: "POST", json: {} });
        expectError(res, 404);
        expect(res.body.code, path).toBe("NOT_FOUND");
      }
    });
  });

  describe("typing (POST /v1/chats/{chatID}/typing)", () => {
    let echo: Chat;
    const typing = (chatID: string, json: unknown, token?: string | null) =>
      raw(env, `${chatPath(chatID)}/typing`, { method: "POST", json, token });

    beforeAll(async () => {
      echo = await echoChat(env, env.accounts[0].accountID);
    });

    it("answers {chatID, state} for typing and for paused", async () => {
      for (const state of ["typing", "paused"]) {
        const res = await typing(echo.id, { state });
        expect(res.status, res.text).toBe(200);
        expect(res.body).toEqual({ chatID: echo.id, state });
      }
    });

    it("answers with the chat's ID when the path names its localChatID", async () => {
      expect(echo.localChatID).toBeTruthy();
      expect((await typing(echo.localChatID!, { state: "typing" })).body).toEqual({ chatID: echo.id, state: "typing" });
    });

    it("takes the call as the vendor CLI makes it (SDK 5.0.0's generic post), and maps a refusal to the SDK's error class", async () => {
      expect(await env.sdk.post(`/v1/chats/${enc(echo.id)}/typing`, { body: { state: "paused" } })).toEqual({
        chatID: echo.id,
        state: "paused",
      });
      await expectSdkError(
        env.sdk.post(`/v1/chats/${enc(echo.id)}/typing`, { body: { state: "composing" } }),
        BeeperDesktop.BadRequestError,
        400,
      );
    });

    it("refuses a missing or unknown state with 400 naming body.state, and an unknown chat with 404", async () => {
      for (const body of [{}, { state: "composing" }, { state: true }, { state: "TYPING" }])
        expectError(await typing(echo.id, body), 400, ["body", "state"]);
      expectError(await typing("!nothing:nowhere.inboxd", { state: "typing" }), 404);
    });

    it("needs a token (401) with the write scope (403)", async () => {
      const none = await typing(echo.id, { state: "typing" }, null);
      expectError(none, 401);
      const readOnly = await typing(echo.id, { state: "typing" }, env.ro);
      expectError(readOnly, 403);
      expect(readOnly.body.message).toMatch(
        /^access token does not have the required scope: this needs write, and the token has read /,
      );
    });
  });

  describe("bridge logins as connections, on a network without typing notifications", () => {
    let solo: Session;

    /** Signs in on the single-account bridge with the password flow and waits for the account's chats. */
    beforeAll(async () => {
      const username = `conn${randomBytes(4).toString("hex")}`;
      let s = await ok<Session>(env, `${bridgePath(SOLO)}/login-sessions`, {
        method: "POST",
        json: { flowID: "password" },
      });
      const submit = (fields: Record<string, string>) =>
        ok<Session>(
          env,
          `${bridgePath(SOLO)}/login-sessions/${enc(s.loginSessionID)}/steps/${enc(s.currentStep!.stepID)}`,
          { method: "POST", json: { type: "user_input", fields } },
        );
      s = await submit({ username, password: "sandbox" });
      solo = await submit({ code: "123456" });
      await waitFor(
        "the single-account login's chats",
        async () => (await allChats(env)).filter((c) => c.accountID === solo.accountID).length >= 8,
        15_000,
      );
    });

    it("a completed login session carries the login also as `connection`, the same object", () => {
      expect(solo.status).toBe("complete");
      expect(solo.login?.loginID).toBe(solo.loginID);
      expect(solo.connection).toEqual(solo.login);
    });

    it("typing in a chat of that network answers 422 NOT_SUPPORTED, saying what is missing", async () => {
      const chat = (await allChats(env)).find((c) => c.accountID === solo.accountID)!;
      const res = await raw(env, `${chatPath(chat.id)}/typing`, { method: "POST", json: { state: "typing" } });
      expectError(res, 422);
      expect(res.body.code).toBe("NOT_SUPPORTED");
      expect(res.body.message).toBe("sending typing notifications is not supported by this network");
    });

    it("lists and retrieves the same objects under …/connections as under …/logins, on every bridge", async () => {
      for (const bridgeID of [MULTI, SOLO]) {
        const logins = await ok<{ items: Login[] }>(env, named("logins", bridgeID));
        expect(logins.items.length, bridgeID).toBeGreaterThan(0);
        expect(await ok(env, named("connections", bridgeID))).toEqual(logins);
        for (const login of logins.items)
          expect(await ok(env, named("connections", bridgeID, login.loginID))).toEqual(login);
      }
      const seeded = (await ok<{ items: Login[] }>(env, named("connections", MULTI))).items.map((l) => l.loginID);
      for (const account of env.accounts)
        expect(seeded).toContain(
          (await ok<{ loginID: string }>(env, `/v1/accounts/${enc(account.accountID)}`)).loginID,
        );
      expect((await ok<{ items: Login[] }>(env, named("connections", SOLO))).items.map((l) => l.loginID)).toEqual([
        solo.loginID,
      ]);
    });

    it("answers 404 for an unknown bridge or connection, and finds a connection only under its own bridge", async () => {
      for (const path of [
        named("connections", "local-nothing"),
        named("connections", MULTI, "local-sandbox_login_nobody"),
        named("connections", MULTI, solo.loginID!),
      ]) {
        const res = await raw(env, path);
        expectError(res, 404);
        expect(res.body.code, path).toBe("NOT_FOUND");
      }
      expectError(
        await raw(env, `${named("connections", MULTI, solo.loginID!)}/remove`, {
          method: "POST",
          json: { scope: "current-device" },
        }),
        404,
      );
    });

    it("needs a token on every connections route; a read-only token reads but cannot remove (403), and nothing moves", async () => {
      const one = named("connections", SOLO, solo.loginID!);
      for (const [method, path, json] of [
        ["GET", named("connections", SOLO)],
        ["GET", one],
        ["POST", `${one}/remove`, { scope: "current-device" }],
      ] as const) {
        expectError(await raw(env, path, { method, json, token: null }), 401);
        if (method === "GET") expect((await raw(env, path, { token: env.ro })).status).toBe(200);
        else expectError(await raw(env, path, { method, json, token: env.ro }), 403);
      }
      expectError(await raw(env, `${one}/remove`, { method: "POST", json: { scope: "everywhere" } }), 400, [
        "body",
        "scope",
      ]);
      expect((await ok<Login>(env, one)).accountIDs).toEqual([solo.accountID]);
    });

    it("removes through …/connections with the answer both client generations read; the login is gone under both names", async () => {
      const chats = (await allChats(env)).filter((c) => c.accountID === solo.accountID).map((c) => c.id);
      const removed = await ok(env, `${named("connections", SOLO, solo.loginID!)}/remove`, {
        method: "POST",
        json: { scope: "all-devices" },
      });
      expect(removed).toEqual({
        bridgeID: SOLO,
        loginID: solo.loginID,
        scope: "all-devices",
        status: "removed",
        affectedAccountIDs: [solo.accountID],
        removedAccountIDs: [solo.accountID],
        success: true,
      });
      for (const noun of ["logins", "connections"] as const) {
        expectError(await raw(env, named(noun, SOLO, solo.loginID!)), 404);
        expect((await ok<{ items: Login[] }>(env, named(noun, SOLO))).items).toEqual([]);
      }
      expectError(await raw(env, `/v1/accounts/${enc(solo.accountID!)}`), 404);
      expect((await allChats(env)).filter((c) => chats.includes(c.id))).toEqual([]);
    });
  });

  describe("in the served document", () => {
    it("lists each new operation once, marked as an extension, /v1/app/setup as public; BridgeConnection and the 2026 step types as shapes", async () => {
      const doc = await ok(env, "/v1/spec");
      const ops: [string, string, string][] = [
        ["get", "/v1/app/setup", "getAppSetup"],
        ["post", "/v1/chats/{chatID}/typing", "setTyping"],
        ["get", "/v1/bridges/{bridgeID}/connections", "listConnections"],
        ["get", "/v1/bridges/{bridgeID}/connections/{loginID}", "getConnection"],
        ["post", "/v1/bridges/{bridgeID}/connections/{loginID}/remove", "removeConnection"],
      ];
      for (const [method, path, operationId] of ops) {
        const op = doc.paths[path]?.[method];
        expect(op?.operationId, `${method} ${path}`).toBe(operationId);
        expect(op["x-inboxd-extension"], `${method} ${path}`).toBe(true);
        expect(op.security, `${method} ${path}`).toEqual(
          path === "/v1/app/setup" ? [{}, { bearerAuth: [] }] : undefined,
        );
      }
      expect(
        doc.paths["/v1/bridges/{bridgeID}/connections/{loginID}"].get.responses["200"].content["application/json"]
          .schema,
      ).toEqual({ $ref: "#/components/schemas/BridgeConnection" });
      expect(doc.components.schemas.LoginSession.properties.connection).toEqual({
        $ref: "#/components/schemas/BridgeConnection",
      });
      const { description: _d, ...connection } = doc.components.schemas.BridgeConnection;
      expect(connection).toEqual(doc.components.schemas.Login);
      const steps = (doc.components.schemas.LoginStep.oneOf ?? doc.components.schemas.LoginStep.anyOf).map(
        (s: { properties: { type: { const: string } } }) => s.properties.type.const,
      );
      expect(steps).toEqual(["user_input", "cookies", "display_and_wait", "client_http", "webauthn"]);
    });
  });
}
