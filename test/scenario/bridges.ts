/**
 * Bridges and login sessions over raw HTTP (the official SDKs have no bridge methods): listing bridges, their
 * capabilities and login flows; walking the sandbox's password, QR and cookies flows to connected accounts; the
 * session rules (current step only, right type, nothing after the end, cancel, idle expiry); the single-account
 * limit; reconnecting an account in place; removing a login with everything it brought; secrets never echoed; scopes.
 *
 * These scenarios connect and remove accounts, which the rest of the suite must not see, so they run against a
 * server of their own, started with a short session TTL and a sandbox QR delay far longer than any test: there a
 * QR login completes only when the client confirms it. The QR code being scanned on its own after a short delay is
 * seen on one more server, started for that test.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, UNAUTHORIZED_MESSAGE } from "./assert.ts";
import type { Account, Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, ECHO_ID, enc, randomToken, sleep, waitFor, type Start, type StartOptions } from "../kit/common.ts";
import type { Answer } from "../kit/http.ts";
import { makeClients, qs, raw, type Env, type RawInit } from "./kit.ts";

/** Idle login sessions expire after this long on the server these scenarios start. */
const TTL_MS = 1500;
/** On that server, a sandbox QR login would complete on its own this long after the session started: never in a test. */
const QR_NEVER_MS = 10 * 60_000;
/** On the server of the test where the QR code is scanned on its own, this long after the session started. */
const QR_DELAY_MS = 1000;

const MULTI = "local-sandbox";
const SOLO = "local-sandbox-solo";
const PASSWORD = "sandbox";
const CODE = "123456";
const ACCOUNT_ID = /^local-sandbox_ba_[A-Za-z0-9_-]+$/;
const SOLO_ACCOUNT_ID = /^local-sandbox-solo_ba_[A-Za-z0-9_-]+$/;

const _ACCOUNT_STATUSES = [
  "connected",
  "connecting",
  "backfilling",
  "connection_required",
  "reconnect_required",
  "attention_required",
  "disconnected",
  "disabled",
];
const BRIDGE_STATUSES = ["available", "connected", "limit_reached", "temporarily_unavailable", "disabled"];
const LOGIN_STATUSES = ["connected", "connecting", "needs_login", "logged_out", "unknown"];
const SESSION_STATUSES = [
  "waiting_for_input",
  "waiting_for_cookies",
  "waiting_for_display",
  "complete",
  "cancelled",
  "failed",
];
const STEP_OF_STATUS: Record<string, string> = {
  waiting_for_input: "user_input",
  waiting_for_cookies: "cookies",
  waiting_for_display: "display_and_wait",
};

interface Bridge {
  id: string;
  type: string;
  provider: string;
  displayName: string;
  network?: string;
  status: string;
  statusText?: string;
  supportsMultipleAccounts: boolean;
  activeAccountCount: number;
  accounts: Account[];
}
interface Login {
  bridgeID: string;
  loginID: string;
  status: string;
  statusText?: string;
  removeScopes: string[];
  accountIDs?: string[];
  user?: { id: string; username?: string };
}
interface Step {
  type: string;
  stepID: string;
  instructions?: string;
  fields?: { id: string; label?: string; type?: string; name?: string; placeholder?: string }[];
  display?: { type: string; data?: string };
  url?: string;
  expectedFinalURLRegex?: string;
}
interface Session {
  bridgeID: string;
  loginSessionID: string;
  status: string;
  currentStep?: Step;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  loginID?: string;
  accountID?: string;
  account?: Account;
  login?: Login;
}

const uniq = (prefix: string) => `${prefix}${randomBytes(4).toString("hex")}`;
const bridgePath = (bridgeID: string) => `/v1/bridges/${enc(bridgeID)}`;
const sessionsPath = (bridgeID: string) => `${bridgePath(bridgeID)}/login-sessions`;
const sessionPath = (bridgeID: string, sessionID: string) => `${sessionsPath(bridgeID)}/${enc(sessionID)}`;
const stepPath = (bridgeID: string, sessionID: string, stepID: string) =>
  `${sessionPath(bridgeID, sessionID)}/steps/${enc(stepID)}`;
const loginPath = (bridgeID: string, loginID: string) => `${bridgePath(bridgeID)}/logins/${enc(loginID)}`;
const accountPath = (accountID: string) => `/v1/accounts/${enc(accountID)}`;

export function bridgeScenarios(parent: Env, start: Start) {
  describe("bridges and login sessions", () => {
    const env = { name: parent.name, options: parent.options } as Env;
    let stop: (() => Promise<void>) | undefined;

    /** Every answer these scenarios received (for the secrets check). */
    const seen: { what: string; res: Answer }[] = [];
    /** Values submitted as secrets that are unique to this run: none may ever come back, or reach the log. */
    const secrets = new Set<string>();
    /** The Node daemon's debug log, captured from this process's stderr (the Worker's log is not reachable). */
    const logLines: string[] = [];
    let restoreStderr: (() => void) | undefined;

    beforeAll(async () => {
      env.rw = randomToken("rw");
      env.ro = randomToken("ro");
      if (env.name === "node") {
        const original = process.stderr.write;
        process.stderr.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
          const text =
            typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("utf8") : String(chunk);
          if (/ debug /.test(text)) {
            logLines.push(text);
            const done = rest.find((r) => typeof r === "function") as (() => void) | undefined;
            done?.();
            return true;
          }
          return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
        } as typeof process.stderr.write;
        restoreStderr = () => (process.stderr.write = original);
      }
      // `verbose` and `tuning` are understood by both harnesses (the Worker has no debug log and ignores verbose).
      const options = {
        seed: { chats: 6, messages: 40, accounts: 1, seed: 11 },
        tokens: [
          { token: env.rw, scopes: ["read", "write"] },
          { token: env.ro, scopes: ["read"] },
        ],
        verbose: true,
        tuning: { loginSessionTtlMs: TTL_MS, sandboxQrDelayMs: QR_NEVER_MS },
      } as StartOptions;
      const server = await start(options);
      stop = () => server.stop();
      env.rw = server.tokens?.[env.rw] ?? env.rw;
      env.ro = server.tokens?.[env.ro] ?? env.ro;
      env.url = server.url.replace(/\/$/, "");
      env.spec = parent.spec; // answers are checked against the same document (matched by path, not host)
      makeClients(env);
      env.accounts = await must("/v1/accounts");
    });

    afterAll(async () => {
      await stop?.();
      restoreStderr?.();
    });

    // -------------------------------------------------------------------------------------------------------------
    // Helpers: every request goes through `call`, which keeps the answer for the secrets check.

    async function call<T = any>(path: string, init: RawInit = {}): Promise<Answer<T>> {
      const res = await raw<T>(env, path, init);
      seen.push({ what: `${init.method ?? "GET"} ${path}`, res });
      return res;
    }

    async function must<T = any>(path: string, init: RawInit = {}, status = 200): Promise<T> {
      const res = await call<T>(path, init);
      if (res.status !== status)
        throw new Error(`${init.method ?? "GET"} ${path} → ${res.status} (wanted ${status}): ${res.text}`);
      return res.body;
    }
    const get = <T = any>(path: string) => must<T>(path);

    async function startSession(bridgeID: string, body: Record<string, unknown>): Promise<Session> {
      const res = await call<Session>(sessionsPath(bridgeID), { method: "POST", json: body });
      expect(res.status, `POST ${sessionsPath(bridgeID)} ${JSON.stringify(body)}: ${res.text}`).toBe(200);
      expectSession(res.body, bridgeID);
      return res.body;
    }

    function submit(
      session: Session,
      type: string,
      fields: Record<string, string>,
      extra: Record<string, unknown> = {},
      stepID = session.currentStep!.stepID,
    ) {
      return call<Session>(stepPath(session.bridgeID, session.loginSessionID, stepID), {
        method: "POST",
        json: { type, fields, ...extra },
      });
    }

    async function submitOk(
      session: Session,
      type: string,
      fields: Record<string, string>,
      extra: Record<string, unknown> = {},
    ): Promise<Session> {
      const res = await submit(session, type, fields, extra);
      expect(res.status, res.text).toBe(200);
      expectSession(res.body, session.bridgeID);
      expect(res.body.loginSessionID).toBe(session.loginSessionID);
      return res.body;
    }

    const getSession = (session: Session) => get<Session>(sessionPath(session.bridgeID, session.loginSessionID));

    /** The LoginSession wire rules that hold in every state. */
    function expectSession(s: Session, bridgeID: string) {
      expect(s.bridgeID).toBe(bridgeID);
      expect(typeof s.loginSessionID).toBe("string");
      expect(s.loginSessionID.length).toBeGreaterThan(0);
      expect(SESSION_STATUSES).toContain(s.status);
      if (s.status in STEP_OF_STATUS) {
        expect(s.currentStep, JSON.stringify(s)).toBeTruthy();
        expect(s.currentStep!.type).toBe(STEP_OF_STATUS[s.status]);
        expect(typeof s.currentStep!.stepID).toBe("string");
      } else {
        // The spec: currentStep is absent once the session is complete, cancelled or failed.
        expect("currentStep" in s, JSON.stringify(s)).toBe(false);
      }
      if (s.status === "failed") {
        expect(typeof s.error?.code, JSON.stringify(s)).toBe("string");
        expect(s.error!.code.length).toBeGreaterThan(0);
        expect(typeof s.error!.message).toBe("string");
      }
    }

    /** Username and password, then the code: a complete session. */
    async function passwordLogin(
      bridgeID: string,
      username: string,
      reconnect: Record<string, string> = {},
    ): Promise<Session> {
      let s = await startSession(bridgeID, { flowID: "password", ...reconnect });
      expect(s.currentStep?.stepID).toBe("sandbox.password.credentials");
      s = await submitOk(s, "user_input", { username, password: PASSWORD });
      expect(s.currentStep?.stepID).toBe("sandbox.password.code");
      s = await submitOk(s, "user_input", { code: CODE });
      return s;
    }

    /** Polls the account until it is connected; returns every status it was seen in on the way. */
    async function untilConnected(accountID: string): Promise<string[]> {
      const statuses: string[] = [];
      await waitFor(
        `${accountID} to be connected`,
        async () => {
          const a = await get<Account>(accountPath(accountID));
          if (statuses[statuses.length - 1] !== a.status) statuses.push(a.status!);
          return a.status === "connected";
        },
        15_000,
      );
      return statuses;
    }

    async function untilStatus(accountID: string, status: string): Promise<Account> {
      return waitFor(
        `${accountID} to become ${status}`,
        async () => {
          const a = await get<Account>(accountPath(accountID));
          return a.status === status ? a : undefined;
        },
        15_000,
      );
    }

    async function walkAll<T>(path: string, params: Record<string, any> = {}): Promise<T[]> {
      const items: T[] = [];
      let cursor: string | undefined;
      for (let n = 0; n < 200; n++) {
        const page = await get<Page<T>>(path + qs({ ...params, ...(cursor ? { cursor } : {}) }));
        items.push(...page.items);
        if (!page.hasMore || !page.items.length || !page.oldestCursor) return items;
        cursor = page.oldestCursor;
      }
      throw new Error(`walk of ${path} did not end`);
    }

    const chatsOf = (accountID: string) => walkAll<Chat>("/v1/chats", { accountIDs: accountID });
    const messagesOf = (chatID: string) => walkAll<Message>(`${chatPath(chatID)}/messages`);
    const isEcho = (c: Chat) => c.type === "single" && c.participants.items.some((p) => p.id === ECHO_ID);

    async function echoChatOf(accountID: string): Promise<Chat> {
      const page = await get<Page<Chat>>(
        `/v1/chats/search${qs({ query: "echo", accountIDs: accountID, type: "single", limit: 200 })}`,
      );
      const chat = page.items.find(isEcho);
      if (!chat) throw new Error(`no Echo chat for ${accountID}`);
      return chat;
    }

    async function send(chatID: string, text: string): Promise<Message> {
      const sent = await must<{ pendingMessageID: string }>(`${chatPath(chatID)}/messages`, {
        method: "POST",
        json: { text },
      });
      return waitFor(
        `message ${sent.pendingMessageID} to settle`,
        async () => {
          const m = await get<Message>(`${chatPath(chatID)}/messages/${enc(sent.pendingMessageID)}`);
          return m.sendStatus?.status === "PENDING" ? undefined : m;
        },
        3000,
      );
    }

    async function echoOf(chatID: string, messageID: string): Promise<Message> {
      return waitFor(
        `Echo reply to ${messageID}`,
        async () => {
          const page = await get<Page<Message>>(`${chatPath(chatID)}/messages`);
          return page.items.find((m) => m.linkedMessageID === messageID && m.senderID === ECHO_ID);
        },
        3000,
      );
    }

    const bridge = (bridgeID: string) => get<Bridge>(bridgePath(bridgeID));
    const accounts = () => get<Account[]>("/v1/accounts");

    /** Chat IDs with their message counts, for "history kept" and "history gone" checks. */
    async function history(accountID: string): Promise<Record<string, number>> {
      const out: Record<string, number> = {};
      for (const chat of await chatsOf(accountID)) out[chat.id] = (await messagesOf(chat.id)).length;
      return out;
    }

    // -------------------------------------------------------------------------------------------------------------

    describe("bridges: list, retrieve, capabilities, login flows", () => {
      it("lists the local sandbox bridges with every Bridge field, and retrieves each one by ID", async () => {
        const list = await get<{ items: Bridge[] }>("/v1/bridges");
        expect(Array.isArray(list.items)).toBe(true);
        const ids = list.items.map((b) => b.id);
        expect(ids).toContain(MULTI);
        expect(ids).toContain(SOLO);
        expect(new Set(ids).size).toBe(ids.length);
        const all = await accounts();
        for (const b of list.items) {
          expect(typeof b.type).toBe("string");
          expect(b.provider).toBe("local");
          expect(typeof b.displayName).toBe("string");
          expect(typeof b.network).toBe("string");
          expect(BRIDGE_STATUSES).toContain(b.status);
          expect(typeof b.statusText).toBe("string");
          expect(typeof b.supportsMultipleAccounts).toBe("boolean");
          expect(Array.isArray(b.accounts)).toBe(true);
          expect(b.activeAccountCount).toBe(b.accounts.filter((a) => a.status !== "disabled").length);
          // The accounts a bridge lists are the Account objects of /v1/accounts.
          for (const a of b.accounts) {
            expect(a.bridge?.id).toBe(b.id);
            expect(a).toEqual(all.find((x) => x.accountID === a.accountID));
          }
          expect(await bridge(b.id)).toEqual(b);
        }
        // Every account belongs to exactly one bridge.
        const listed = list.items.flatMap((b) => b.accounts.map((a) => a.accountID)).sort();
        expect(listed).toEqual(all.map((a) => a.accountID).sort());

        const multi = list.items.find((b) => b.id === MULTI)!;
        expect(multi.type).toBe("sandbox");
        expect(multi.supportsMultipleAccounts).toBe(true);
        // The seeded account is there, so the bridge is connected (and well below its limit of 10).
        expect(multi.accounts.map((a) => a.accountID)).toContain(env.accounts[0].accountID);
        expect(multi.status).toBe("connected");

        const solo = list.items.find((b) => b.id === SOLO)!;
        expect(solo.type).toBe("sandbox-solo");
        expect(solo.supportsMultipleAccounts).toBe(false);
        expect(solo.activeAccountCount).toBe(0);
        expect(solo.accounts).toEqual([]);
        expect(solo.status).toBe("available");
      });

      it("answers 404 for an unknown bridge on every bridge route", async () => {
        const b = "local-nothing";
        for (const [method, path, json] of [
          ["GET", bridgePath(b)],
          ["GET", `${bridgePath(b)}/capabilities`],
          ["GET", `${bridgePath(b)}/login-flows`],
          ["GET", `${bridgePath(b)}/logins`],
          ["GET", loginPath(b, "local-nothing_login_x")],
          ["POST", sessionsPath(b), { flowID: "password" }],
          ["GET", sessionPath(b, "ls_missing")],
          ["DELETE", sessionPath(b, "ls_missing")],
          ["POST", stepPath(b, "ls_missing", "sandbox.password.credentials"), { type: "user_input", fields: {} }],
          ["POST", `${loginPath(b, "local-nothing_login_x")}/remove`, { scope: "current-device" }],
        ] as [string, string, unknown?][]) {
          const res = await call(path, { method, json });
          expectError(res, 404);
          expect(res.body.code, `${method} ${path}`).toBe("NOT_FOUND");
        }
      });

      it("describes what group creation accepts (ProvisioningCapabilities)", async () => {
        const fieldKeys = ["avatar", "disappear", "name", "parent", "participants", "topic", "username"];
        for (const id of [MULTI, SOLO]) {
          const caps = await get<Record<string, any>>(`${bridgePath(id)}/capabilities`);
          expect(typeof caps.group_creation).toBe("object");
          expect(Object.keys(caps.group_creation).length).toBeGreaterThan(0);
          for (const [type, group] of Object.entries<Record<string, any>>(caps.group_creation)) {
            expect(typeof group.type_description, type).toBe("string");
            for (const key of Object.keys(group).filter((k) => k !== "type_description")) {
              expect(fieldKeys, `${type}.${key}`).toContain(key);
              const field = group[key];
              expect(typeof field.allowed, `${type}.${key}`).toBe("boolean");
              for (const n of ["max_length", "min_length"]) if (n in field) expect(typeof field[n]).toBe("number");
              if ("required" in field) expect(typeof field.required).toBe("boolean");
            }
          }
          const group = caps.group_creation.group;
          expect(group.name.allowed).toBe(true);
          expect(group.participants.allowed).toBe(true);
          expect(group.participants.required).toBe(true);
          expect(typeof caps.resolve_identifier).toBe("object");
          expect(typeof caps.image_pack_import).toBe("object");
        }
      });

      it("lists the login flows: password, QR code and browser cookies", async () => {
        for (const id of [MULTI, SOLO]) {
          const flows = await get<{ items: { id: string; name?: string; description?: string }[] }>(
            `${bridgePath(id)}/login-flows`,
          );
          expect(flows.items.map((f) => f.id).sort()).toEqual(["cookies", "password", "qr"]);
          for (const f of flows.items) {
            expect(typeof f.name).toBe("string");
            expect(typeof f.description).toBe("string");
          }
        }
      });
    });

    describe("login sessions: the password flow", () => {
      it("walks credentials → code → complete, and the account connects with its chats, which can be messaged", async () => {
        const before = await bridge(MULTI);
        const username = uniq("pw");

        let s = await startSession(MULTI, { flowID: "password" });
        expect(s.status).toBe("waiting_for_input");
        expect(s.currentStep!.type).toBe("user_input");
        expect(s.currentStep!.stepID).toBe("sandbox.password.credentials");
        expect(s.currentStep!.fields!.map((f) => f.id)).toEqual(["username", "password"]);
        expect(s.currentStep!.fields!.find((f) => f.id === "password")!.type).toBe("password");
        expect("accountID" in s || "loginID" in s || "account" in s || "error" in s).toBe(false);
        expect(await getSession(s)).toEqual(s);

        s = await submitOk(s, "user_input", { username, password: PASSWORD }, { source: "api" });
        expect(s.status).toBe("waiting_for_input");
        expect(s.currentStep!.stepID).toBe("sandbox.password.code");
        expect(s.currentStep!.fields!.map((f) => f.id)).toEqual(["code"]);
        expect(await getSession(s)).toEqual(s);

        s = await submitOk(s, "user_input", { code: CODE });
        expect(s.status).toBe("complete");
        expect(s.accountID).toMatch(ACCOUNT_ID);
        expect(typeof s.loginID).toBe("string");
        expect(s.account!.accountID).toBe(s.accountID);
        expect(s.account!.bridge).toEqual({ id: MULTI, provider: "local", type: "sandbox" });
        expect(s.account!.loginID).toBe(s.loginID);
        expect(s.account!.user.username).toBe(username);
        expect(s.account!.user.isSelf).toBe(true);
        expect(["connecting", "backfilling", "connected"]).toContain(s.account!.status);
        expect(s.login!.loginID).toBe(s.loginID);
        expect(s.login!.bridgeID).toBe(MULTI);
        expect(s.login!.accountIDs).toEqual([s.accountID]);
        expect([...s.login!.removeScopes].sort()).toEqual(["all-devices", "current-device"]);
        expect(LOGIN_STATUSES).toContain(s.login!.status);
        const again = await getSession(s);
        expect(again.status).toBe("complete");
        expect(again.accountID).toBe(s.accountID);
        expect(again.loginID).toBe(s.loginID);
        const accountID = s.accountID!;

        // The account appears at once, and goes connecting/backfilling → connected.
        const listed = (await accounts()).find((a) => a.accountID === accountID);
        expect(listed, "the new account is in GET /v1/accounts").toBeTruthy();
        const statuses = await untilConnected(accountID);
        for (const st of statuses) expect(["connecting", "backfilling", "connected"]).toContain(st);
        const account = await get<Account>(accountPath(accountID));
        expect(account.bridge).toEqual({ id: MULTI, provider: "local", type: "sandbox" });
        expect(account.loginID).toBe(s.loginID);
        expect(account.status).toBe("connected");
        expect((await accounts()).find((a) => a.accountID === accountID)).toEqual(account);

        const after = await bridge(MULTI);
        expect(after.activeAccountCount).toBe(before.activeAccountCount + 1);
        expect(after.accounts.find((a) => a.accountID === accountID)).toEqual(account);
        const login = await get<Login>(loginPath(MULTI, s.loginID!));
        expect(login.status).toBe("connected");
        expect(login.accountIDs).toEqual([accountID]);
        expect(login.user?.username).toBe(username);
        const logins = await get<{ items: Login[] }>(`${bridgePath(MULTI)}/logins`);
        expect(logins.items.find((l) => l.loginID === s.loginID)).toEqual(login);

        // Its first chats: Echo, a few other direct chats and two groups, each with some history.
        const chats = await chatsOf(accountID);
        for (const c of chats) expect(c.accountID).toBe(accountID);
        expect(chats.filter(isEcho).length).toBe(1);
        expect(chats.filter((c) => c.type === "single" && !isEcho(c)).length).toBeGreaterThanOrEqual(2);
        expect(chats.filter((c) => c.type === "group").length).toBe(2);
        for (const c of chats) expect((await messagesOf(c.id)).length, c.title).toBeGreaterThan(0);

        const echo = await echoChatOf(accountID);
        const mine = await send(echo.id, "hello from a freshly connected account");
        expect(mine.accountID).toBe(accountID);
        const reply = await echoOf(echo.id, mine.id);
        expect(reply.text).toBe("Echo: hello from a freshly connected account");
      });

      it("fails the session cleanly on a wrong password or a wrong code", async () => {
        const wrongPassword = uniq("wrong-password-");
        secrets.add(wrongPassword);
        let s = await startSession(MULTI, { flowID: "password" });
        s = await submitOk(s, "user_input", { username: uniq("pwfail"), password: wrongPassword });
        expect(s.status).toBe("failed");
        expect(s.error!.code).toMatch(/\S/);
        expect((await getSession(s)).status).toBe("failed");

        const wrongCode = uniq("code-");
        secrets.add(wrongCode);
        s = await startSession(MULTI, { flowID: "password" });
        s = await submitOk(s, "user_input", { username: uniq("pwfail"), password: PASSWORD });
        s = await submitOk(s, "user_input", { code: wrongCode });
        expect(s.status).toBe("failed");
        expect(s.error!.code).toMatch(/\S/);
        // Neither attempt connected anything.
        expect((await accounts()).map((a) => a.user.username).filter((u) => u?.startsWith("pwfail"))).toEqual([]);
      });

      it("refuses a step that is not current (409) or of the wrong type (422), leaving the session as it was", async () => {
        const s = await startSession(MULTI, { flowID: "password" });
        const mismatch = await submit(s, "user_input", { code: CODE }, {}, "sandbox.password.code");
        expectError(mismatch, 409);
        expect((mismatch.body as unknown as { code: string }).code).toBe("STEP_MISMATCH");
        expect(mismatch.headers.get("x-should-retry")).toBe("false");
        expect(await getSession(s)).toEqual(s);

        const unknownStep = await submit(s, "user_input", { username: "x", password: PASSWORD }, {}, "no.such.step");
        expectError(unknownStep, 409);
        expect(await getSession(s)).toEqual(s);

        const wrongType = await submit(s, "cookies", { username: "x", password: PASSWORD });
        expectError(wrongType, 422);
        expect(await getSession(s)).toEqual(s);

        const waitType = await submit(s, "display_and_wait", {});
        expectError(waitType, 422);
        expect(await getSession(s)).toEqual(s);

        // Not a step type at all: a validation error.
        const bogus = await submit(s, "password", { username: "x", password: PASSWORD });
        expectError(bogus, 400, ["body", "type"]);
        expect(await getSession(s)).toEqual(s);

        // Still usable afterwards.
        const next = await submitOk(s, "user_input", { username: uniq("pwstep"), password: PASSWORD });
        expect(next.currentStep!.stepID).toBe("sandbox.password.code");
        expect(await (await call(sessionPath(MULTI, s.loginSessionID), { method: "DELETE" })).status).toBe(200);
      });

      it("refuses anything submitted to a finished session (409)", async () => {
        let s = await startSession(MULTI, { flowID: "password" });
        const step = s.currentStep!.stepID;
        const nope = uniq("nope-");
        secrets.add(nope);
        s = await submitOk(s, "user_input", { username: uniq("pwdone"), password: nope });
        expect(s.status).toBe("failed");
        const res = await submit(s, "user_input", { username: "x", password: PASSWORD }, {}, step);
        expectError(res, 409);
        expect(res.headers.get("x-should-retry"), "SDKs retry a 409 unless told not to").toBe("false");
        const after = await getSession(s);
        expect(after.status).toBe("failed");
        expect(after.error).toEqual(s.error);
      });

      it("starts the first flow when none is named (an empty body)", async () => {
        const res = await call(sessionsPath(MULTI), { method: "POST" });
        expect(res.status, res.text).toBe(200);
        expectSession(res.body, MULTI);
        expect(res.body.currentStep.stepID).toBe("sandbox.password.credentials");
        await call(sessionPath(MULTI, res.body.loginSessionID), { method: "DELETE" });
      });

      it("answers 400 to an unknown flow and 404 to an unknown session", async () => {
        const res = await call(sessionsPath(MULTI), { method: "POST", json: { flowID: "carrier-pigeon" } });
        expectError(res, 400, ["body", "flowID"]);
        for (const [method, path, json] of [
          ["GET", sessionPath(MULTI, "ls_00000000-0000-0000-0000-000000000000")],
          ["DELETE", sessionPath(MULTI, "ls_00000000-0000-0000-0000-000000000000")],
          [
            "POST",
            stepPath(MULTI, "ls_00000000-0000-0000-0000-000000000000", "sandbox.password.credentials"),
            { type: "user_input", fields: {} },
          ],
        ] as [string, string, unknown?][])
          expectError(await call(path, { method, json }), 404);
        // A session is found only under its own bridge.
        const s = await startSession(MULTI, { flowID: "password" });
        expectError(await call(sessionPath(SOLO, s.loginSessionID)), 404);
        expectError(
          await call(stepPath(SOLO, s.loginSessionID, s.currentStep!.stepID), {
            method: "POST",
            json: { type: "user_input", fields: {} },
          }),
          404,
        );
        expectError(await call(sessionPath(SOLO, s.loginSessionID), { method: "DELETE" }), 404);
        expect(await getSession(s)).toEqual(s);
      });
    });

    describe("login sessions: QR and cookies flows", () => {
      it("shows a QR code and completes when the client confirms it (this server's QR code is never scanned on its own)", async () => {
        const s = await startSession(MULTI, { flowID: "qr" });
        expect(s.status).toBe("waiting_for_display");
        expect(s.currentStep!.type).toBe("display_and_wait");
        expect(s.currentStep!.display!.type).toBe("qr");
        expect(s.currentStep!.display!.data).toMatch(/\S/);
        // A QR step is waited on, not answered.
        expectError(await submit(s, "user_input", { confirm: "true" }), 422);
        // Had the confirmation been taken for a plain wait, the answer would be the unchanged session once the
        // server's long-poll ran out (25 s).
        const done = await submitOk(s, "display_and_wait", { confirm: "true" });
        expect(done.status).toBe("complete");
        expect(done.accountID).toMatch(ACCOUNT_ID);
        expect(done.account!.bridge).toEqual({ id: MULTI, provider: "local", type: "sandbox" });
        await untilConnected(done.accountID!);
      });

      it("long-polls a display_and_wait step until the QR code is scanned (on a server whose QR code is scanned after 1 s)", async () => {
        // A server of this test's own: on the one above, QR codes are never scanned on their own.
        const scanning = { ...env, rw: randomToken("rw") } as Env;
        const server = await start({
          seed: { chats: 2, messages: 4, accounts: 1, seed: 12 },
          tokens: [{ token: scanning.rw, scopes: ["read", "write"] }],
          tuning: { sandboxQrDelayMs: QR_DELAY_MS },
        } as StartOptions);
        try {
          scanning.rw = server.tokens?.[scanning.rw] ?? scanning.rw;
          scanning.url = server.url.replace(/\/$/, "");
          const at = (path: string, init: RawInit = {}) => raw<Session>(scanning, path, init);
          const started = Date.now();
          const created = await at(sessionsPath(MULTI), { method: "POST", json: { flowID: "qr" } });
          expect(created.status, created.text).toBe(200);
          const s = created.body;
          expectSession(s, MULTI);
          const answer = await at(stepPath(MULTI, s.loginSessionID, s.currentStep!.stepID), {
            method: "POST",
            json: { type: "display_and_wait", fields: {} },
          });
          // A lower bound only: however slow the machine, the sandbox's timer cannot fire sooner.
          const waited = Date.now() - started;
          expect(answer.status, answer.text).toBe(200);
          const done = answer.body;
          expectSession(done, MULTI);
          expect(done.status).toBe("complete");
          expect(waited, "the answer came when the scan did").toBeGreaterThanOrEqual(QR_DELAY_MS - 100);
          expect(done.accountID).toMatch(ACCOUNT_ID);
          expect(done.login!.accountIDs).toEqual([done.accountID]);
          expect((await at(sessionPath(MULTI, s.loginSessionID))).body.status).toBe("complete");
        } finally {
          await server.stop();
        }
      }, 60_000);

      it("takes browser cookies and connects two accounts under one login", async () => {
        const name = uniq("ck");
        const cookie = `sbx_${name}`;
        const csrf = uniq("csrf-");
        secrets.add(cookie);
        secrets.add(csrf);
        const s = await startSession(MULTI, { flowID: "cookies" });
        expect(s.status).toBe("waiting_for_cookies");
        const step = s.currentStep!;
        expect(step.type).toBe("cookies");
        expect(typeof step.url).toBe("string");
        expect(() => new URL(step.url!)).not.toThrow();
        expect(step.fields!.length).toBeGreaterThan(0);
        for (const f of step.fields!) {
          expect(typeof f.id).toBe("string");
          expect(typeof f.name).toBe("string");
          expect(["cookie", "header", "local_storage"]).toContain(f.type);
        }
        expect(step.fields!.some((f) => f.id === "session" && f.type === "cookie")).toBe(true);
        expect(typeof step.expectedFinalURLRegex).toBe("string");
        const finalURL = new URL("/app", step.url).toString();
        expect(new RegExp(step.expectedFinalURLRegex!).test(finalURL)).toBe(true);
        expectError(await submit(s, "user_input", { session: cookie }), 422);

        const done = await submitOk(s, "cookies", { session: cookie, csrf }, { lastURL: finalURL, source: "webview" });
        expect(done.status).toBe("complete");
        expect(done.accountID).toMatch(ACCOUNT_ID);
        const login = await get<Login>(loginPath(MULTI, done.loginID!));
        expect(login.accountIDs!.length).toBe(2);
        expect(new Set(login.accountIDs).size).toBe(2);
        expect(login.accountIDs).toContain(done.accountID);
        expect(login.user?.username).toBe(name);
        const all = await accounts();
        for (const id of login.accountIDs!) {
          expect(id).toMatch(ACCOUNT_ID);
          const a = all.find((x) => x.accountID === id);
          expect(a, id).toBeTruthy();
          expect(a!.loginID).toBe(done.loginID);
          expect(a!.bridge?.id).toBe(MULTI);
          await untilConnected(id);
        }
        expect((await get<Login>(loginPath(MULTI, done.loginID!))).status).toBe("connected");
      });

      it("fails the session on a cookie that is not a sandbox session", async () => {
        const bad = uniq("not-a-session-");
        secrets.add(bad);
        const s = await startSession(MULTI, { flowID: "cookies" });
        const done = await submitOk(s, "cookies", { session: bad });
        expect(done.status).toBe("failed");
        expect(done.error!.code).toMatch(/\S/);
      });
    });

    describe("login sessions: cancel and expiry", () => {
      it("cancels a running session; a finished one cannot be cancelled (409)", async () => {
        const s = await startSession(MULTI, { flowID: "password" });
        const res = await call(sessionPath(MULTI, s.loginSessionID), { method: "DELETE" });
        expect(res.status, res.text).toBe(200);
        expect(res.body).toEqual({ bridgeID: MULTI, loginSessionID: s.loginSessionID, status: "cancelled" });
        const after = await getSession(s);
        expect(after.status).toBe("cancelled");
        expect("currentStep" in after).toBe(false);
        expectError(await submit(s, "user_input", { username: "x", password: PASSWORD }), 409);
        expect((await getSession(s)).status).toBe("cancelled");

        // A QR session cancelled while nobody waits on it.
        const qr = await startSession(MULTI, { flowID: "qr" });
        expect((await call(sessionPath(MULTI, qr.loginSessionID), { method: "DELETE" })).status).toBe(200);
        expectError(await submit(qr, "display_and_wait", {}), 409);

        // Complete: DELETE is refused and the session stays complete.
        const done = await passwordLogin(MULTI, uniq("cancel"));
        expect(done.status).toBe("complete");
        const refused = await call(sessionPath(MULTI, done.loginSessionID), { method: "DELETE" });
        expectError(refused, 409);
        expect(refused.headers.get("x-should-retry")).toBe("false");
        expect((await getSession(done)).status).toBe("complete");
        await untilConnected(done.accountID!);
      });

      it("cancels a QR session while a client long-polls it: the poll ends cancelled and nothing connects", async () => {
        const before = (await accounts()).length;
        // The poll must be under way at the server when the session is cancelled, which a client cannot see: a poll
        // that reached the server only after the cancel is refused (409, the session is finished), and then the
        // whole thing is done again, waiting longer before the cancel.
        for (let head = 100; ; head *= 2) {
          const s = await startSession(MULTI, { flowID: "qr" });
          const polling = submit(s, "display_and_wait", {});
          await sleep(head);
          const res = await call(sessionPath(MULTI, s.loginSessionID), { method: "DELETE" });
          expect(res.status, res.text).toBe(200);
          expect(res.body.status).toBe("cancelled");
          const polled = await polling;
          if (
            polled.status === 409 &&
            (polled.body as unknown as { code?: string })?.code === "SESSION_FINISHED" &&
            head < 10_000
          )
            continue;
          expect(polled.status, polled.text).toBe(200);
          expectSession(polled.body, MULTI);
          expect(polled.body.status).toBe("cancelled");
          expect((await getSession(s)).status).toBe("cancelled");
          break;
        }
        await sleep(200);
        expect((await accounts()).length).toBe(before);
      });

      it("fails a session left idle longer than its TTL with error code expired, and forgets it later", async () => {
        const s = await startSession(MULTI, { flowID: "password" });
        await sleep(TTL_MS + 300);
        const expired = await getSession(s);
        expectSession(expired, MULTI);
        expect(expired.status).toBe("failed");
        expect(expired.error?.code).toBe("expired");
        expectError(await submit(s, "user_input", { username: "x", password: PASSWORD }), 409);
        await sleep(TTL_MS + 300);
        expectError(await call(sessionPath(MULTI, s.loginSessionID)), 404);
      });

      it("keeps a session that is in use alive past the TTL", async () => {
        // How much time has passed at the server is read off other sessions that stay idle, not off the test's clock:
        // `later`, started just after `s`, having expired while `s` is still there shows `s` outlived the TTL it had
        // from its start. `s` must then have been kept alive by its use, which came after `beforeUse` started: `s`
        // expiring while `beforeUse` has not is the failure. Both expired means the machine stalled for longer than
        // the gap between the two (`s` was used too late, or looked at too late): inconclusive, so done again.
        const expired = (x: Session) => x.status === "failed" && x.error?.code === "expired";
        const attempt = async (): Promise<"shown" | "inconclusive"> => {
          let s = await startSession(MULTI, { flowID: "password" });
          const later = await startSession(MULTI, { flowID: "password" });
          await sleep(TTL_MS / 3); // the gap: any part of the TTL, for the checks below to fall in
          const beforeUse = await startSession(MULTI, { flowID: "password" });
          const used = await submit(s, "user_input", { username: uniq("alive"), password: PASSWORD });
          if (used.status === 409) return "inconclusive"; // `s` had expired before its use: a TTL passed since its start
          expect(used.status, used.text).toBe(200);
          s = used.body;
          for (;;) {
            const laterNow = await getSession(later);
            const now = await getSession(s);
            if (expired(now)) {
              expect(
                expired(await getSession(beforeUse)),
                "the session used after another started expired before that one",
              ).toBe(true);
              return "inconclusive";
            }
            expect(now.status).toBe("waiting_for_input");
            expect(now.currentStep!.stepID).toBe("sandbox.password.code");
            if (expired(laterNow)) {
              await call(sessionPath(MULTI, s.loginSessionID), { method: "DELETE" });
              return "shown";
            }
            await sleep(25);
          }
        };
        for (let n = 1; (await attempt()) !== "shown"; n++)
          if (n === 5)
            throw new Error(
              "5 attempts were inconclusive: the machine stalled each time for longer than a third of the TTL",
            );
      });
    });

    describe("the single-account bridge", () => {
      it("connects one account, then reports limit_reached and refuses a second login (409 LIMIT_REACHED)", async () => {
        // Cookies yield two accounts, one more than the bridge allows: the session fails, nothing is stored.
        const cookie = `sbx_${uniq("solo")}`;
        secrets.add(cookie);
        let s = await startSession(SOLO, { flowID: "cookies" });
        s = await submitOk(s, "cookies", { session: cookie });
        expect(s.status).toBe("failed");
        expect(s.error!.code).toBe("limit_reached");
        let b = await bridge(SOLO);
        expect(b.activeAccountCount).toBe(0);
        expect(b.status).toBe("available");
        expect((await get<{ items: Login[] }>(`${bridgePath(SOLO)}/logins`)).items).toEqual([]);

        const done = await passwordLogin(SOLO, uniq("solo"));
        expect(done.status).toBe("complete");
        expect(done.accountID).toMatch(SOLO_ACCOUNT_ID);
        expect(done.account!.bridge).toEqual({ id: SOLO, provider: "local", type: "sandbox-solo" });
        await untilConnected(done.accountID!);
        b = await bridge(SOLO);
        expect(b.status).toBe("limit_reached");
        expect(b.activeAccountCount).toBe(1);
        expect(b.supportsMultipleAccounts).toBe(false);
        expect(b.accounts.map((a) => a.accountID)).toEqual([done.accountID]);
        expect(typeof b.statusText).toBe("string");

        for (const flowID of ["password", "qr", "cookies"]) {
          const res = await call(sessionsPath(SOLO), { method: "POST", json: { flowID } });
          expectError(res, 409);
          expect(res.body.code).toBe("LIMIT_REACHED");
          expect(res.headers.get("x-should-retry")).toBe("false");
        }
        // Reconnecting the account that is there is not a new account: allowed.
        const re = await startSession(SOLO, { flowID: "password", accountID: done.accountID! });
        expect(re.accountID).toBe(done.accountID);
        await call(sessionPath(SOLO, re.loginSessionID), { method: "DELETE" });

        // Removing it frees the bridge again.
        const removed = await must(`${loginPath(SOLO, done.loginID!)}/remove`, {
          method: "POST",
          json: { scope: "current-device" },
        });
        expect(removed.success).toBe(true);
        b = await bridge(SOLO);
        expect(b.status).toBe("available");
        expect(b.activeAccountCount).toBe(0);

        // Two logins started while the bridge was free: the first to finish gets the one place, the other fails.
        let a = await startSession(SOLO, { flowID: "password" });
        let c = await startSession(SOLO, { flowID: "password" });
        a = await submitOk(a, "user_input", { username: uniq("soloa"), password: PASSWORD });
        c = await submitOk(c, "user_input", { username: uniq("soloc"), password: PASSWORD });
        a = await submitOk(a, "user_input", { code: CODE });
        c = await submitOk(c, "user_input", { code: CODE });
        expect(a.status).toBe("complete");
        expect(c.status).toBe("failed");
        expect(c.error!.code).toBe("limit_reached");
        b = await bridge(SOLO);
        expect(b.activeAccountCount).toBe(1);
        expect(b.accounts.map((x) => x.accountID)).toEqual([a.accountID]);
        await untilConnected(a.accountID!);
        await must(`${loginPath(SOLO, a.loginID!)}/remove`, { method: "POST", json: { scope: "current-device" } });
        expect((await bridge(SOLO)).activeAccountCount).toBe(0);
      });
      it("does not let a reconnect add accounts beyond the bridge's limit", async () => {
        const name = uniq("solore");
        const cookie = `sbx_${name}`;
        secrets.add(cookie);
        const first = await passwordLogin(SOLO, name);
        expect(first.status).toBe("complete");
        await untilConnected(first.accountID!);
        try {
          // A reconnect of the one account, through the cookies flow as the same identity, which yields two
          // workspaces: the bridge allows one account, so this must not leave it with more.
          let s = await startSession(SOLO, { flowID: "cookies", accountID: first.accountID! });
          expect(s.accountID).toBe(first.accountID);
          s = await submitOk(s, "cookies", { session: cookie });
          const b = await bridge(SOLO);
          expect(
            b.activeAccountCount,
            `solo bridge accounts after the reconnect: ${JSON.stringify(b.accounts.map((a) => a.accountID))}`,
          ).toBeLessThanOrEqual(1);
          expect(b.accounts.map((a) => a.accountID)).toEqual([first.accountID]);
          expect(s.status, JSON.stringify(s)).toBe("failed");
        } finally {
          await call(`${loginPath(SOLO, first.loginID!)}/remove`, {
            method: "POST",
            json: { scope: "current-device" },
          });
        }
        expect((await bridge(SOLO)).activeAccountCount).toBe(0);
      });
    });

    describe("reconnecting an account", () => {
      it("reports reconnect_required, refuses a different identity, and reconnects in place keeping history", async () => {
        const username = uniq("re");
        const first = await passwordLogin(MULTI, username);
        const accountID = first.accountID!;
        const loginID = first.loginID!;
        await untilConnected(accountID);
        const echo = await echoChatOf(accountID);

        await send(echo.id, "!status reconnect_required Password changed");
        const broken = await untilStatus(accountID, "reconnect_required");
        expect(broken.statusText).toBe("Password changed");
        const login = await get<Login>(loginPath(MULTI, loginID));
        expect(login.status).toBe("needs_login");
        expect(login.statusText).toBe("Password changed");
        expect((await bridge(MULTI)).accounts.find((a) => a.accountID === accountID)?.status).toBe(
          "reconnect_required",
        );
        const kept = await history(accountID);
        expect(Object.keys(kept).length).toBeGreaterThan(0);
        const countBefore = (await accounts()).length;
        const loginsBefore = (await get<{ items: Login[] }>(`${bridgePath(MULTI)}/logins`)).items.length;

        // Reconnect requests that do not fit.
        expectError(
          await call(sessionsPath(MULTI), {
            method: "POST",
            json: { flowID: "password", accountID: "local-sandbox_ba_nobody" },
          }),
          404,
        );
        expectError(await call(sessionsPath(SOLO), { method: "POST", json: { flowID: "password", accountID } }), 404);
        expectError(
          await call(sessionsPath(MULTI), {
            method: "POST",
            json: { flowID: "password", accountID, loginID: "local-sandbox_login_seed0" },
          }),
          400,
        );

        // Signing in as someone else does not take the account over.
        const wrong = await passwordLogin(MULTI, uniq("other"), { accountID });
        expect(wrong.status).toBe("failed");
        expect(wrong.error!.code).toBe("wrong_account");
        expect(await get<Account>(accountPath(accountID))).toEqual(broken);
        expect((await accounts()).length).toBe(countBefore);
        expect((await get<{ items: Login[] }>(`${bridgePath(MULTI)}/logins`)).items.length).toBe(loginsBefore);

        // By loginID too.
        const byLogin = await startSession(MULTI, { flowID: "password", loginID });
        expect(byLogin.loginID).toBe(loginID);
        await call(sessionPath(MULTI, byLogin.loginSessionID), { method: "DELETE" });

        // The same identity: same account, connected again, history kept.
        let s = await startSession(MULTI, { flowID: "password", accountID });
        expect(s.accountID).toBe(accountID);
        expect(s.loginID).toBe(loginID);
        s = await submitOk(s, "user_input", { username, password: PASSWORD });
        expect(s.accountID).toBe(accountID);
        s = await submitOk(s, "user_input", { code: CODE });
        expect(s.status).toBe("complete");
        expect(s.accountID).toBe(accountID);
        expect(s.loginID).toBe(loginID);
        const statuses = await untilConnected(accountID);
        expect(statuses).not.toContain("reconnect_required");
        const fixed = await get<Account>(accountPath(accountID));
        expect(fixed.statusText).toBeUndefined();
        expect((await get<Login>(loginPath(MULTI, loginID))).status).toBe("connected");
        expect((await accounts()).length).toBe(countBefore);
        expect(await history(accountID)).toEqual(kept);

        // And it works: Echo answers again.
        const m = await send(echo.id, "back again");
        expect((await echoOf(echo.id, m.id)).text).toBe("Echo: back again");

        // Reconnecting through the QR flow signs in as the account being reconnected.
        const qr = await startSession(MULTI, { flowID: "qr", accountID });
        expect(qr.accountID).toBe(accountID);
        const qrDone = await submitOk(qr, "display_and_wait", { confirm: "true" });
        expect(qrDone.status).toBe("complete");
        expect(qrDone.accountID).toBe(accountID);
        expect(qrDone.loginID).toBe(loginID);
        await untilConnected(accountID);
        expect((await accounts()).length).toBe(countBefore);
        // History still kept: the same chats, with the two messages just exchanged with Echo added.
        expect(await history(accountID)).toEqual({ ...kept, [echo.id]: kept[echo.id] + 2 });

        // A login is found only under its own bridge.
        expectError(await call(loginPath(SOLO, loginID)), 404);
        expectError(
          await call(`${loginPath(SOLO, loginID)}/remove`, { method: "POST", json: { scope: "current-device" } }),
          404,
        );
        expect((await get<Login>(loginPath(MULTI, loginID))).accountIDs).toEqual([accountID]);
      });

      it("does not turn a reconnect of a login removed meanwhile into a new account", async () => {
        const username = uniq("stale");
        const first = await passwordLogin(MULTI, username);
        await untilConnected(first.accountID!);
        let s = await startSession(MULTI, { flowID: "password", accountID: first.accountID! });
        s = await submitOk(s, "user_input", { username, password: PASSWORD });
        await must(`${loginPath(MULTI, first.loginID!)}/remove`, { method: "POST", json: { scope: "current-device" } });
        const before = (await accounts()).map((a) => a.accountID).sort();
        const loginsBefore = (await get<{ items: Login[] }>(`${bridgePath(MULTI)}/logins`)).items
          .map((l) => l.loginID)
          .sort();

        s = await submitOk(s, "user_input", { code: CODE });
        const after = (await accounts()).map((a) => a.accountID).sort();
        const loginsAfter = (await get<{ items: Login[] }>(`${bridgePath(MULTI)}/logins`)).items
          .map((l) => l.loginID)
          .sort();
        // Clean up whatever the completion created before asserting, so later scenarios keep their account budget.
        for (const l of loginsAfter.filter((id) => !loginsBefore.includes(id)))
          await call(`${loginPath(MULTI, l)}/remove`, { method: "POST", json: { scope: "current-device" } });
        // The session was a reconnect of an account that no longer exists: it must not complete as a different one.
        expect(s.status, `session ended ${JSON.stringify(s)}`).toBe("failed");
        expect(after, "no account was created by the stale reconnect").toEqual(before);
        expect(loginsAfter, "no login was created by the stale reconnect").toEqual(loginsBefore);
      });
    });

    describe("removing a login", () => {
      it("removes the accounts with their chats and messages from every list and search", async () => {
        const before = await bridge(MULTI);
        const s = await passwordLogin(MULTI, uniq("gone"));
        const accountID = s.accountID!;
        const loginID = s.loginID!;
        await untilConnected(accountID);
        const echo = await echoChatOf(accountID);
        const word = uniq("zqremoval");
        const m = await send(echo.id, `remember ${word}`);
        await echoOf(echo.id, m.id);
        const found = await get<Page<Message>>(`/v1/messages/search${qs({ query: word })}`);
        expect(found.items.length, "the marker word is searchable before removal").toBe(2);
        const chatIDs = (await chatsOf(accountID)).map((c) => c.id);
        expect(chatIDs.length).toBeGreaterThan(0);

        const invalid = await call(`${loginPath(MULTI, loginID)}/remove`, {
          method: "POST",
          json: { scope: "this-galaxy" },
        });
        expectError(invalid, 400, ["body", "scope"]);
        expect((await get<Login>(loginPath(MULTI, loginID))).accountIDs).toEqual([accountID]);

        const removed = await must(`${loginPath(MULTI, loginID)}/remove`, {
          method: "POST",
          json: { scope: "current-device" },
        });
        expect(removed.success).toBe(true);

        expect((await accounts()).map((a) => a.accountID)).not.toContain(accountID);
        expectError(await call(accountPath(accountID)), 404);
        const after = await bridge(MULTI);
        expect(after.accounts.map((a) => a.accountID)).not.toContain(accountID);
        expect(after.activeAccountCount).toBe(before.activeAccountCount);
        expectError(await call(loginPath(MULTI, loginID)), 404);
        expect(
          (await get<{ items: Login[] }>(`${bridgePath(MULTI)}/logins`)).items.map((l) => l.loginID),
        ).not.toContain(loginID);

        const everyChat = await walkAll<Chat>("/v1/chats");
        expect(everyChat.filter((c) => c.accountID === accountID || chatIDs.includes(c.id))).toEqual([]);
        const echoSearch = await walkAll<Chat>("/v1/chats/search", { query: "echo", limit: 200 });
        expect(echoSearch.filter((c) => c.accountID === accountID)).toEqual([]);
        const everySearch = await walkAll<Chat>("/v1/chats/search", { limit: 200 });
        expect(everySearch.filter((c) => c.accountID === accountID)).toEqual([]);
        const gone = await get<Page<Message>>(`/v1/messages/search${qs({ query: word })}`);
        expect(gone.items).toEqual([]);
        const anyOfIt = await walkAll<Message>("/v1/messages/search", { query: "remember", limit: 200 });
        expect(anyOfIt.filter((x) => x.accountID === accountID || chatIDs.includes(x.chatID))).toEqual([]);
        for (const id of chatIDs) {
          expectError(await call(chatPath(id)), 404);
          expectError(await call(`${chatPath(id)}/messages`), 404);
        }
        // The account can no longer be used to start a reconnect, and the login cannot be removed twice.
        expectError(await call(sessionsPath(MULTI), { method: "POST", json: { flowID: "password", accountID } }), 404);
        expectError(
          await call(`${loginPath(MULTI, loginID)}/remove`, { method: "POST", json: { scope: "current-device" } }),
          404,
        );
      });

      it("accepts scope all-devices and removes every account of a multi-account login", async () => {
        const cookie = `sbx_${uniq("everywhere")}`;
        secrets.add(cookie);
        let s = await startSession(MULTI, { flowID: "cookies" });
        s = await submitOk(s, "cookies", { session: cookie });
        expect(s.status).toBe("complete");
        const ids = (await get<Login>(loginPath(MULTI, s.loginID!))).accountIDs!;
        expect(ids.length).toBe(2);
        for (const id of ids) await untilConnected(id);
        const removed = await must(`${loginPath(MULTI, s.loginID!)}/remove`, {
          method: "POST",
          json: { scope: "all-devices" },
        });
        expect(removed.success).toBe(true);
        const left = (await accounts()).map((a) => a.accountID);
        for (const id of ids) expect(left).not.toContain(id);
        const everyChat = await walkAll<Chat>("/v1/chats");
        expect(everyChat.filter((c) => ids.includes(c.accountID))).toEqual([]);
        expectError(await call(loginPath(MULTI, s.loginID!)), 404);
      });
    });

    describe("bridge routes: authentication and scopes", () => {
      it("needs a token on every bridge route (401), and a read-only token may read but not log in or remove (403)", async () => {
        const live = await startSession(MULTI, { flowID: "password" });
        const seedLogin = env.accounts[0] as Account;
        const loginID = seedLogin.loginID!;
        const reads: [string, string][] = [
          ["GET", "/v1/bridges"],
          ["GET", bridgePath(MULTI)],
          ["GET", `${bridgePath(MULTI)}/capabilities`],
          ["GET", `${bridgePath(MULTI)}/login-flows`],
          ["GET", sessionPath(MULTI, live.loginSessionID)],
          ["GET", `${bridgePath(MULTI)}/logins`],
          ["GET", loginPath(MULTI, loginID)],
        ];
        const writes: [string, string, unknown?][] = [
          ["POST", sessionsPath(MULTI), { flowID: "password" }],
          [
            "POST",
            stepPath(MULTI, live.loginSessionID, live.currentStep!.stepID),
            { type: "user_input", fields: { username: "ro", password: PASSWORD } },
          ],
          ["DELETE", sessionPath(MULTI, live.loginSessionID)],
          ["POST", `${loginPath(MULTI, loginID)}/remove`, { scope: "current-device" }],
        ];
        for (const [method, path, json] of [...reads, ...writes]) {
          const res = await call(path, { method, json, token: null });
          expectError(res, 401);
          expect(res.body.message, `${method} ${path}`).toBe(UNAUTHORIZED_MESSAGE);
          expectError(await call(path, { method, json, token: `${env.rw}x` }), 401);
        }
        for (const [method, path] of reads) {
          const res = await call(path, { method, token: env.ro });
          expect(res.status, `${method} ${path}: ${res.text}`).toBe(200);
        }
        for (const [method, path, json] of writes) {
          const res = await call(path, { method, json, token: env.ro });
          expectError(res, 403);
          expect(res.body.message, `${method} ${path}`).toMatch(
            /^access token does not have the required scope: this needs write, and the token has read /,
          );
        }
        // Nothing moved.
        expect(await getSession(live)).toEqual(live);
        const login = await get<Login>(loginPath(MULTI, loginID));
        expect(login.accountIDs).toEqual([seedLogin.accountID]);
        expect((await accounts()).map((a) => a.accountID)).toContain(seedLogin.accountID);
        await call(sessionPath(MULTI, live.loginSessionID), { method: "DELETE" });
      });
    });

    describe("secrets", () => {
      it("never returns (or, on Node, logs) a submitted password, code or cookie", async () => {
        // A flow of its own, so that this holds even when run alone; the check covers every answer of this module.
        const wrongPassword = uniq("hunter2-");
        const wrongCode = uniq("code-");
        const cookie = `sbx_${uniq("secret")}`;
        for (const x of [wrongPassword, wrongCode, cookie]) secrets.add(x);
        let s = await startSession(MULTI, { flowID: "password" });
        await submitOk(s, "user_input", { username: uniq("sec"), password: wrongPassword });
        s = await startSession(MULTI, { flowID: "password" });
        s = await submitOk(s, "user_input", { username: uniq("sec"), password: PASSWORD });
        await submitOk(s, "user_input", { code: wrongCode });
        s = await startSession(MULTI, { flowID: "cookies" });
        await submit(s, "user_input", { session: cookie });
        await submitOk(s, "cookies", { session: `${cookie}!` });
        s = await startSession(MULTI, { flowID: "password" });
        s = await submitOk(s, "user_input", { username: uniq("sec"), password: PASSWORD });
        s = await submitOk(s, "user_input", { code: CODE });
        expect(s.status).toBe("complete");

        expect(seen.length).toBeGreaterThan(0);
        for (const { what, res } of seen) {
          for (const secret of secrets)
            expect(res.text.includes(secret), `${what} returned a submitted secret: ${res.text}`).toBe(false);
          // The correct code: the code step's placeholder shows it (a sandbox hint) and so does the flow description;
          // no other login-session answer may carry it. (The correct password, "sandbox", is the network's own name
          // and cannot be checked this way.)
          const session = res.body as Session | undefined;
          if (/\/login-sessions/.test(what) && session?.currentStep?.stepID !== "sandbox.password.code")
            expect(res.text.includes(CODE), `${what} returned the code: ${res.text}`).toBe(false);
        }
        if (env.name === "node") {
          expect(logLines.join("").length, "the daemon's debug log was captured").toBeGreaterThan(0);
          expect(logLines.some((l) => l.includes("/login-sessions"))).toBe(true);
          for (const line of logLines) {
            for (const secret of [...secrets, CODE])
              expect(line.includes(secret), `the log carries a secret: ${line}`).toBe(false);
          }
        }
      });
    });
  });
}
