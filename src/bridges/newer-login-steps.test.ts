/**
 * The login-step types bridgev2 added in 2026, `client_http` and `webauthn`, which no built-in network uses yet: a
 * passkey login (an in-process fake, as no real network here has one) driven through the session host, then
 * through the HTTP API of a real app, whose answers are checked against the document it serves.
 */
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ResponseChecker } from "../../test/scenario/openapi-check.ts";
import { createApp, type App } from "../app.ts";
import { ApiError } from "../errors.ts";
import { createToken } from "../services/tokens.ts";
import type { AccountRecord } from "../store/records.ts";
import { NetworkError, type NetworkClient, type NetworkConnector } from "./connector.ts";
import type { LoginCapable, LoginClient, LoginProcess, LoginResult, LoginStep, StepSubmission } from "./login.ts";
import { LoginSessions } from "./login-sessions.ts";

const ORIGIN = "https://passkey.invalid";
const CHALLENGE_URL = `${ORIGIN}/login/challenge`;
const user = { id: "@pat:passkey.invalid", username: "pat" };
const result: LoginResult = { remoteID: "pat", user, accounts: [{ remoteID: "pat", user, state: {} }] };
const b64 = (value: unknown) => btoa(JSON.stringify(value));

/**
 * A network that signs in with a passkey. With a client that can make requests (clientHTTP), the challenge is
 * fetched by the client from the network's own site (a client_http step), as networks that only answer the user's
 * device require; otherwise the process makes one itself. Then a webauthn step asks for the passkey; a credential
 * whose client data carries the challenge completes the login.
 */
class PasskeyLogin implements LoginProcess {
  challenge?: string;
  submits = 0;
  cancelled = 0;

  constructor(private readonly client: LoginClient = { clientHTTP: false }) {}

  async start(): Promise<LoginStep> {
    if (this.client.clientHTTP)
      return {
        type: "client_http",
        stepID: "passkey.challenge.1",
        instructions: "Fetching the sign-in challenge",
        request: { method: "GET", url: CHALLENGE_URL, headers: { accept: ["application/json"] } },
      };
    this.challenge = "made-by-the-process";
    return this.passkeyStep();
  }

  private passkeyStep(): LoginStep {
    return {
      type: "webauthn",
      stepID: "passkey.sign",
      instructions: "Use your passkey",
      url: ORIGIN,
      publicKey: { challenge: this.challenge, rpId: "passkey.invalid", userVerification: "preferred" },
    };
  }

  async submit(step: LoginStep, submission: StepSubmission): Promise<LoginStep> {
    this.submits++;
    if (step.type === "client_http") {
      const answer = submission.response!;
      if (answer.error) throw new NetworkError("rejected", `the challenge could not be fetched: ${answer.error}`);
      if (answer.statusCode !== 200)
        throw new NetworkError("rejected", `the challenge request answered ${answer.statusCode}`);
      this.challenge = JSON.parse(atob(answer.body ?? "")).challenge;
      return this.passkeyStep();
    }
    if (step.type === "webauthn") {
      const signed = (submission.credential?.response as { clientDataJSON?: string } | undefined)?.clientDataJSON;
      if (signed !== b64({ challenge: this.challenge }))
        throw new NetworkError("rejected", "the passkey did not sign this login's challenge");
      return { type: "complete", stepID: "passkey.complete", result };
    }
    throw new NetworkError("rejected", `no step ${step.stepID} here`);
  }

  cancel() {
    this.cancelled++;
  }
}

/** What a browser's `PublicKeyCredential.toJSON()` gives, signing `challenge`. */
const credential = (challenge: string | undefined) => ({
  id: "cred-1",
  rawId: "cred-1",
  type: "public-key",
  response: { clientDataJSON: b64({ challenge }), authenticatorData: "AAAA", signature: "AAAA" },
  clientExtensionResults: {},
});

/** What a refused submission throws: an ApiError with this status and, for a 400, the one place it names. */
const refusal = (status: number, path?: string[]) =>
  expect.objectContaining({ status, ...(path ? { details: { issues: [expect.objectContaining({ path })] } } : {}) });

describe("client_http and webauthn steps through the session host", () => {
  const BRIDGE = "local-passkey";
  const setup = () => {
    const complete = vi.fn(async () => ({ loginID: "login-1", accountIDs: ["acct-1"] }));
    return { sessions: new LoginSessions({ complete }), complete };
  };

  it("walks client_http → webauthn → complete; both wait for input, and each gets its own part of the submission", async () => {
    const { sessions, complete } = setup();
    const login = new PasskeyLogin({ clientHTTP: true });
    const s = await sessions.start(BRIDGE, login);
    expect(s.status).toBe("waiting_for_input");
    expect(s.step).toEqual({
      type: "client_http",
      stepID: "passkey.challenge.1",
      instructions: "Fetching the sign-in challenge",
      request: { method: "GET", url: CHALLENGE_URL, headers: { accept: ["application/json"] } },
    });

    await sessions.submit(BRIDGE, s.id, "passkey.challenge.1", "client_http", {
      fields: {},
      response: { statusCode: 200, body: b64({ challenge: "from-the-site" }) },
    });
    expect(s.status).toBe("waiting_for_input");
    expect(s.step).toMatchObject({
      type: "webauthn",
      stepID: "passkey.sign",
      url: ORIGIN,
      publicKey: { challenge: "from-the-site" },
    });

    await sessions.submit(BRIDGE, s.id, "passkey.sign", "webauthn", {
      fields: {},
      credential: credential("from-the-site"),
    });
    expect(s.status).toBe("complete");
    expect(s.step).toBeUndefined();
    expect(complete).toHaveBeenCalledWith(s, result);
    expect(login.submits).toBe(2);
  });

  it("refuses a submission without its part (400 naming it) or of another type (422), leaving the session unchanged", async () => {
    const { sessions } = setup();
    const login = new PasskeyLogin({ clientHTTP: true });
    const s = await sessions.start(BRIDGE, login);
    await expect(sessions.submit(BRIDGE, s.id, "passkey.challenge.1", "client_http", { fields: {} })).rejects.toEqual(
      refusal(400, ["body", "response"]),
    );
    const wrongType = sessions.submit(BRIDGE, s.id, "passkey.challenge.1", "webauthn", {
      fields: {},
      credential: credential("x"),
    });
    await expect(wrongType).rejects.toBeInstanceOf(ApiError);
    await expect(wrongType).rejects.toEqual(expect.objectContaining({ status: 422, code: "STEP_TYPE_MISMATCH" }));
    expect(s.step?.type).toBe("client_http");

    await sessions.submit(BRIDGE, s.id, "passkey.challenge.1", "client_http", {
      fields: {},
      response: { statusCode: 200, body: b64({ challenge: "c" }) },
    });
    await expect(
      sessions.submit(BRIDGE, s.id, "passkey.sign", "webauthn", { fields: { credential: "{}" } }),
    ).rejects.toEqual(refusal(400, ["body", "credential"]));
    expect(s.step?.type).toBe("webauthn");
    expect(login.submits, "refused submissions never reach the process").toBe(1);
  });

  it("fails the session with the process's reason when the client's request failed or the passkey is wrong", async () => {
    const { sessions, complete } = setup();
    const offline = await sessions.start(BRIDGE, new PasskeyLogin({ clientHTTP: true }));
    await sessions.submit(BRIDGE, offline.id, "passkey.challenge.1", "client_http", {
      fields: {},
      response: { error: "network unreachable" },
    });
    expect(offline.status).toBe("failed");
    expect(offline.error).toEqual({
      code: "rejected",
      message: "the challenge could not be fetched: network unreachable",
    });

    const forged = await sessions.start(BRIDGE, new PasskeyLogin());
    expect(forged.step).toMatchObject({ type: "webauthn", publicKey: { challenge: "made-by-the-process" } });
    await sessions.submit(BRIDGE, forged.id, "passkey.sign", "webauthn", {
      fields: {},
      credential: credential("another-challenge"),
    });
    expect(forged.status).toBe("failed");
    expect(forged.error?.message).toBe("the passkey did not sign this login's challenge");
    expect(complete).not.toHaveBeenCalled();
  });
});

/** The passkey network as a connector: its accounts need nothing (no chats), only to connect. */
class PasskeyConnector implements NetworkConnector, LoginCapable {
  readonly network = "passkey";
  readonly displayName = "Passkey";
  readonly bridge = { maxAccounts: 5, capabilities: {} };
  readonly logins: { client?: LoginClient }[] = [];

  loadAccount(_account: AccountRecord): NetworkClient {
    return {
      connect: async () => undefined,
      disconnect: async () => undefined,
      capabilities: () => ({
        edits: false,
        deletes: false,
        reactions: false,
        replies: false,
        attachments: false,
        multipleReactions: false,
      }),
      send: async () => Promise.reject(new NetworkError("unsupported", "nothing to send to")),
    };
  }

  loginFlows() {
    return [{ id: "passkey", name: "Passkey" }];
  }

  createLogin(_flowID: string, _reauth?: AccountRecord[], client?: LoginClient) {
    this.logins.push({ client });
    return new PasskeyLogin(client);
  }
}

describe("client_http and webauthn steps over HTTP", () => {
  const base = "http://127.0.0.1:23373";
  const connector = new PasskeyConnector();
  let app: App;
  let token: string;
  let spec: ResponseChecker;

  /** One request; a JSON answer must match the schema the served document gives its operation and status. */
  async function call(method: string, path: string, json?: unknown) {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (json !== undefined) headers["content-type"] = "application/json";
    const res = await app.fetch(
      new Request(base + path, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) }),
    );
    const body = await res.json();
    spec?.check(method, base + path, res.status, res.headers.get("content-type"), body);
    return { status: res.status, body };
  }
  const sessions = "/v1/bridges/local-passkey/login-sessions";
  const step = (s: { loginSessionID: string; currentStep?: { stepID: string } }) =>
    `${sessions}/${s.loginSessionID}/steps/${s.currentStep!.stepID}`;

  beforeAll(async () => {
    const storage = createStorage();
    app = await createApp({ storage, connectors: [connector] });
    token = (await createToken(storage, { scopes: ["read", "write"] })).token;
    spec = new ResponseChecker((await call("GET", "/v1/spec")).body);
  });
  afterAll(() => app.close());

  it("serves both steps as currentStep and takes their answers, to a complete session with login and connection", async () => {
    let res = await call("POST", sessions, { flowID: "passkey", clientHTTP: true });
    expect(res.status).toBe(200);
    expect(connector.logins.at(-1)?.client).toEqual({ clientHTTP: true });
    expect(res.body).toMatchObject({
      status: "waiting_for_input",
      currentStep: { type: "client_http", request: { method: "GET", url: CHALLENGE_URL } },
    });

    res = await call("POST", step(res.body), {
      type: "client_http",
      response: {
        statusCode: 200,
        finalURL: CHALLENGE_URL,
        headers: { "content-type": ["application/json"] },
        body: b64({ challenge: "c-http" }),
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: "waiting_for_input",
      currentStep: { type: "webauthn", stepID: "passkey.sign", url: ORIGIN, publicKey: { challenge: "c-http" } },
    });

    res = await call("POST", step(res.body), { type: "webauthn", credential: credential("c-http") });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("complete");
    expect(res.body.login.loginID).toBe(res.body.loginID);
    expect(res.body.connection).toEqual(res.body.login);
    expect((await call("GET", `/v1/bridges/local-passkey/connections/${res.body.loginID}`)).body).toEqual(
      res.body.login,
    );
  });

  it("tells the process whether the client makes requests: without clientHTTP the login goes straight to the passkey", async () => {
    const res = await call("POST", sessions, { flowID: "passkey" });
    expect(connector.logins.at(-1)?.client).toEqual({ clientHTTP: false });
    expect(res.body.currentStep).toMatchObject({ type: "webauthn", publicKey: { challenge: "made-by-the-process" } });
  });

  it("refuses answers without their part, or malformed, with a 400 naming the place; the session stays as it was", async () => {
    const started = (await call("POST", sessions, { flowID: "passkey", clientHTTP: true })).body;
    for (const [answer, where] of [
      [{ type: "client_http" }, ["body", "response"]],
      [{ type: "client_http", response: {} }, ["body", "response"]],
      [{ type: "client_http", response: { statusCode: 700 } }, ["body", "response", "statusCode"]],
      [{ type: "client_http", response: { statusCode: 200, body: "not base64!" } }, ["body", "response", "body"]],
      [{ type: "webauthn" }, ["body", "credential"]],
      [{ type: "passkey" }, ["body", "type"]],
    ] as const) {
      const res = await call("POST", step(started), answer);
      expect(res.status, JSON.stringify(answer)).toBe(400);
      expect(
        res.body.details.issues.map((i: { path: unknown[] }) => i.path),
        JSON.stringify(answer),
      ).toContainEqual(where);
    }
    // The right type is still needed: a credential for the client_http step is a 422.
    const wrong = await call("POST", step(started), { type: "webauthn", credential: credential("x") });
    expect(wrong.status).toBe(422);
    expect((await call("GET", `${sessions}/${started.loginSessionID}`)).body).toEqual(started);
  });
});
