import { describe, expect, it, vi } from "vitest";
import { ApiError } from "../errors.ts";
import { NetworkError } from "./connector.ts";
import type { LoginProcess, LoginResult, LoginStep, StepSubmission } from "./login.ts";
import { LoginSessions, type LoginSession } from "./login-sessions.ts";

const BRIDGE = "local-test";
const TTL = 60_000;

const result: LoginResult = {
  remoteID: "alice",
  user: { id: "@alice:test.invalid", username: "alice" },
  accounts: [{ remoteID: "alice", user: { id: "@alice:test.invalid", username: "alice" }, state: {} }],
};

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * A small but real LoginProcess: credentials (user_input) → scan (display_and_wait) → complete. The password "pw"
 * is right; "unavailable" makes the network unavailable, "boom" throws a plain Error. The scan completes when the
 * client confirms it, when the test calls `scanned()`, or returns the same step when the host's wait is aborted.
 */
class TestLogin implements LoginProcess {
  cancelled = 0;
  submits = 0;
  /** Holds `submit` until released (for serialisation tests). */
  gate?: Promise<void>;
  private scan = deferred<LoginStep>();
  private waitStarted = deferred<void>();
  /** Resolves once the host is inside `wait`. */
  readonly waiting = this.waitStarted.promise;
  readonly credentials: LoginStep = {
    type: "user_input",
    stepID: "test.credentials",
    fields: [
      { id: "username", type: "username" },
      { id: "password", type: "password" },
    ],
  };
  readonly display: LoginStep = {
    type: "display_and_wait",
    stepID: "test.scan",
    display: { type: "qr", data: "test://scan" },
  };

  constructor(private readonly first: () => Promise<LoginStep> = async () => this.credentials) {}

  start() {
    return this.first();
  }

  async submit(step: LoginStep, submission: StepSubmission): Promise<LoginStep> {
    this.submits++;
    if (this.gate) await this.gate;
    if (step.stepID !== "test.credentials") throw new NetworkError("rejected", "no such step");
    const password = submission.fields.password;
    if (password === "boom") throw new Error("internal detail that must not reach a client");
    if (password === "unavailable") throw new NetworkError("unavailable", "the test network is down");
    if (password !== "pw") throw new NetworkError("rejected", "wrong password");
    return this.display;
  }

  async wait(step: LoginStep, submission: StepSubmission, signal: AbortSignal): Promise<LoginStep> {
    this.waitStarted.resolve();
    if (submission.fields.confirm === "true") return { type: "complete", stepID: "test.complete", result };
    const aborted = new Promise<LoginStep>((resolve) => signal.addEventListener("abort", () => resolve(step)));
    return Promise.race([this.scan.promise, aborted]);
  }

  scanned() {
    this.scan.resolve({ type: "complete", stepID: "test.complete", result });
  }

  cancel() {
    this.cancelled++;
  }
}

function setup(
  options: {
    complete?: (session: LoginSession, result: LoginResult) => Promise<{ loginID: string; accountIDs: string[] }>;
    waitMs?: number;
  } = {},
) {
  const clock = { t: 1_700_000_000_000 };
  const complete = vi.fn(options.complete ?? (async () => ({ loginID: "login-1", accountIDs: ["acct-1"] })));
  const sessions = new LoginSessions({ ttlMs: TTL, waitMs: options.waitMs, now: () => clock.t, complete });
  return { sessions, clock, complete };
}

function caught(work: () => unknown): ApiError {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error("expected an ApiError");
}

async function rejected(work: Promise<unknown>): Promise<ApiError> {
  try {
    await work;
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error("expected an ApiError");
}

const snapshot = (s: LoginSession) => JSON.parse(JSON.stringify(s));
const creds = (password = "pw"): StepSubmission => ({ fields: { username: "alice", password } });

describe("LoginSessions", () => {
  it("starts a session on the process's first step and finds it only under its bridge", async () => {
    const { sessions, clock } = setup();
    const s = await sessions.start(BRIDGE, new TestLogin());
    expect(s.id).toMatch(/^ls_/);
    expect(s.bridgeID).toBe(BRIDGE);
    expect(s.status).toBe("waiting_for_input");
    expect(s.step?.stepID).toBe("test.credentials");
    expect(s.expiresAt).toBe(clock.t + TTL);
    expect(sessions.get(BRIDGE, s.id)).toBe(s);
    expect(caught(() => sessions.get("local-other", s.id)).status).toBe(404);
    expect(caught(() => sessions.get(BRIDGE, "ls_missing")).status).toBe(404);
    expect(
      (await rejected(sessions.submit(BRIDGE, "ls_missing", "test.credentials", "user_input", creds()))).status,
    ).toBe(404);
    expect(caught(() => sessions.cancel(BRIDGE, "ls_missing")).status).toBe(404);
  });

  it("maps each step type to its waiting status", async () => {
    const { sessions } = setup();
    const cookies: LoginStep = {
      type: "cookies",
      stepID: "test.cookies",
      url: "https://test.invalid/login",
      fields: [{ id: "s", name: "s", type: "cookie" }],
    };
    expect((await sessions.start(BRIDGE, new TestLogin(async () => cookies))).status).toBe("waiting_for_cookies");
    const login = new TestLogin();
    expect((await sessions.start(BRIDGE, new TestLogin(async () => login.display))).status).toBe("waiting_for_display");
  });

  it("refuses a submission for another step (409) or of another type (422), leaving the session unchanged", async () => {
    const { sessions } = setup();
    const login = new TestLogin();
    const s = await sessions.start(BRIDGE, login);
    const before = snapshot(s);

    const mismatch = await rejected(sessions.submit(BRIDGE, s.id, "test.scan", "user_input", creds()));
    expect(mismatch.status).toBe(409);
    expect(mismatch.code).toBe("STEP_MISMATCH");
    expect(mismatch.headers?.["x-should-retry"]).toBe("false");
    expect(snapshot(sessions.get(BRIDGE, s.id))).toEqual(before);

    const wrongType = await rejected(sessions.submit(BRIDGE, s.id, "test.credentials", "cookies", creds()));
    expect(wrongType.status).toBe(422);
    expect(wrongType.code).toBe("STEP_TYPE_MISMATCH");
    expect((wrongType.details as { issues: { path: unknown[] }[] }).issues[0].path).toEqual(["body", "type"]);
    expect(snapshot(sessions.get(BRIDGE, s.id))).toEqual(before);
    expect(login.submits, "refused submissions never reach the process").toBe(0);

    const next = await sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds());
    expect(next.status).toBe("waiting_for_display");
    expect(next.step?.stepID).toBe("test.scan");
    expect(login.submits).toBe(1);
  });

  it("fails the session with the NetworkError's kind and message, and hides unexpected errors", async () => {
    const { sessions } = setup();
    const wrong = await sessions.start(BRIDGE, new TestLogin());
    await sessions.submit(BRIDGE, wrong.id, "test.credentials", "user_input", creds("nope"));
    expect(wrong.status).toBe("failed");
    expect(wrong.step).toBeUndefined();
    expect(wrong.error).toEqual({ code: "rejected", message: "wrong password" });

    const down = await sessions.start(BRIDGE, new TestLogin());
    await sessions.submit(BRIDGE, down.id, "test.credentials", "user_input", creds("unavailable"));
    expect(down.error).toEqual({ code: "unavailable", message: "the test network is down" });

    const boom = await sessions.start(BRIDGE, new TestLogin());
    await sessions.submit(BRIDGE, boom.id, "test.credentials", "user_input", creds("boom"));
    expect(boom.status).toBe("failed");
    expect(boom.error?.code).toBe("internal_error");
    expect(boom.error?.message).not.toContain("internal detail");

    // A process that fails at once gives a failed session, not an exception.
    const early = await sessions.start(
      BRIDGE,
      new TestLogin(async () => Promise.reject(new NetworkError("unavailable", "offline"))),
    );
    expect(early.status).toBe("failed");
    expect(early.error).toEqual({ code: "unavailable", message: "offline" });

    // Nothing more is accepted once failed; a failed session cannot be cancelled either.
    const finished = await rejected(sessions.submit(BRIDGE, wrong.id, "test.credentials", "user_input", creds()));
    expect(finished.status).toBe(409);
    expect(finished.code).toBe("SESSION_FINISHED");
    expect(caught(() => sessions.cancel(BRIDGE, wrong.id)).status).toBe(409);
    expect(wrong.status).toBe("failed");
  });

  it("completes through the host's callback and records its outcome", async () => {
    const { sessions, complete } = setup();
    const s = await sessions.start(BRIDGE, new TestLogin(), { accountID: "acct-1", loginID: "login-1" });
    await sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds());
    await sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: { confirm: "true" } });
    expect(s.status).toBe("complete");
    expect(s.step).toBeUndefined();
    expect(s.error).toBeUndefined();
    expect(s.outcome).toEqual({ loginID: "login-1", accountIDs: ["acct-1"] });
    expect(complete).toHaveBeenCalledTimes(1);
    expect(complete.mock.calls[0][0]).toBe(s);
    expect(complete.mock.calls[0][1]).toEqual(result);
    expect(s.reauth).toEqual({ accountID: "acct-1", loginID: "login-1" });

    const cancel = caught(() => sessions.cancel(BRIDGE, s.id));
    expect(cancel.status).toBe(409);
    expect(cancel.code).toBe("SESSION_FINISHED");
    expect(
      (await rejected(sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: {} }))).status,
    ).toBe(409);
    expect(s.status).toBe("complete");
  });

  it("completes on the first step when the process needs no input", async () => {
    const { sessions, complete } = setup();
    const s = await sessions.start(
      BRIDGE,
      new TestLogin(async () => ({ type: "complete", stepID: "test.complete", result })),
    );
    expect(s.status).toBe("complete");
    expect(complete).toHaveBeenCalledTimes(1);
  });

  it("fails the session when storing the login fails: an ApiError's code, lower-cased, or internal_error", async () => {
    const limited = setup({
      complete: async () => {
        throw new ApiError(409, "LIMIT_REACHED", "one account only");
      },
    });
    const s = await limited.sessions.start(BRIDGE, new TestLogin());
    await limited.sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds());
    await limited.sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: { confirm: "true" } });
    expect(s.status).toBe("failed");
    expect(s.step).toBeUndefined();
    expect(s.outcome).toBeUndefined();
    expect(s.error).toEqual({ code: "limit_reached", message: "one account only" });

    const broken = setup({
      complete: async () => {
        throw new Error("disk full at /var/secret/path");
      },
    });
    const t = await broken.sessions.start(
      BRIDGE,
      new TestLogin(async () => ({ type: "complete", stepID: "test.complete", result })),
    );
    expect(t.status).toBe("failed");
    expect(t.error?.code).toBe("internal_error");
    expect(t.error?.message).not.toContain("/var/secret");
  });

  it("cancels a running session: the process is told, the step goes, and nothing more is accepted", async () => {
    const { sessions } = setup();
    const login = new TestLogin();
    const s = await sessions.start(BRIDGE, login);
    expect(sessions.cancel(BRIDGE, s.id)).toBe(s);
    expect(s.status).toBe("cancelled");
    expect(s.step).toBeUndefined();
    expect(login.cancelled).toBe(1);
    const refused = await rejected(sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds()));
    expect(refused.status).toBe(409);
    expect(login.submits).toBe(0);
    expect(sessions.get(BRIDGE, s.id).status).toBe("cancelled");
  });

  it("keeps a session cancelled while a wait was in flight, even when the wait then completes", async () => {
    const { sessions, complete } = setup();
    const login = new TestLogin();
    const s = await sessions.start(BRIDGE, login);
    await sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds());
    const waiting = sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: {} });
    await login.waiting;
    sessions.cancel(BRIDGE, s.id);
    login.scanned();
    expect((await waiting).status).toBe("cancelled");
    expect(s.step).toBeUndefined();
    expect(complete).not.toHaveBeenCalled();
  });

  it("returns the session unchanged when a display_and_wait submission runs out of time", async () => {
    const { sessions } = setup({ waitMs: 20 });
    const login: TestLogin = new TestLogin(async () => login.display);
    const s = await sessions.start(BRIDGE, login);
    const before = snapshot(s);
    const after = await sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: {} });
    expect(after.status).toBe("waiting_for_display");
    expect(snapshot(after)).toEqual(before);
    // And it can be waited on again.
    const again = sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: {} });
    login.scanned();
    expect((await again).status).toBe("complete");
  });

  it("lets an answer to a display step (a phone's confirmation) go ahead of a plain wait in progress", async () => {
    // A wait far longer than the test's timeout: only the answer cutting in can finish this test.
    const { sessions } = setup({ waitMs: 10 * 60_000 });
    const login: TestLogin = new TestLogin(async () => login.display);
    const s = await sessions.start(BRIDGE, login);
    const waiting = sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: {} });
    await login.waiting;
    const confirmed = await sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", {
      fields: { confirm: "true" },
    });
    expect(confirmed.status).toBe("complete");
    // The plain wait came back (unchanged when it returned; the session object has moved on since).
    expect((await waiting).id).toBe(s.id);
    // Plain waits do not cut in on each other: a second one queues behind the first.
    const other: TestLogin = new TestLogin(async () => other.display);
    const t = await sessions.start(BRIDGE, other);
    const first = sessions.submit(BRIDGE, t.id, "test.scan", "display_and_wait", { fields: {} });
    await other.waiting;
    let secondDone = false;
    const second = sessions
      .submit(BRIDGE, t.id, "test.scan", "display_and_wait", { fields: {} })
      .then((x) => ((secondDone = true), x));
    await new Promise((r) => setTimeout(r, 20));
    expect(secondDone).toBe(false);
    other.scanned();
    expect((await first).status).toBe("complete");
    expect((await rejected(second)).status).toBe(409);
  });

  it("returns a display step unchanged when the process cannot wait", async () => {
    const { sessions } = setup();
    const login = new TestLogin();
    const noWait: LoginProcess = {
      start: async () => login.display,
      submit: (step, sub) => login.submit(step, sub),
      cancel: () => login.cancel(),
    };
    const s = await sessions.start(BRIDGE, noWait);
    const before = snapshot(s);
    expect(snapshot(await sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: {} }))).toEqual(
      before,
    );
  });

  it("runs one submission at a time: a second one for the same step then finds it gone (409)", async () => {
    const { sessions } = setup();
    const login = new TestLogin();
    const gate = deferred<void>();
    login.gate = gate.promise;
    const s = await sessions.start(BRIDGE, login);
    const first = sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds());
    const second = sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds());
    gate.resolve();
    expect((await first).step?.stepID).toBe("test.scan");
    const refused = await rejected(second);
    expect(refused.code).toBe("STEP_MISMATCH");
    expect(login.submits).toBe(1);
    expect(s.status).toBe("waiting_for_display");
  });

  it("expires a session left idle for the TTL with error code expired, and forgets it one TTL later", async () => {
    const { sessions, clock } = setup();
    const login = new TestLogin();
    const s = await sessions.start(BRIDGE, login);
    clock.t += TTL - 1;
    expect(sessions.get(BRIDGE, s.id).status).toBe("waiting_for_input");
    clock.t += 1;
    const expired = sessions.get(BRIDGE, s.id);
    expect(expired.status).toBe("failed");
    expect(expired.step).toBeUndefined();
    expect(expired.error?.code).toBe("expired");
    expect(login.cancelled).toBe(1);
    const refused = await rejected(sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds()));
    expect(refused.status).toBe(409);
    expect(login.submits).toBe(0);
    clock.t += TTL - 1;
    expect(sessions.get(BRIDGE, s.id).status).toBe("failed");
    clock.t += 1;
    expect(caught(() => sessions.get(BRIDGE, s.id)).status).toBe(404);
  });

  it("counts a submission as activity, so a session in use does not expire", async () => {
    const { sessions, clock } = setup();
    const s = await sessions.start(BRIDGE, new TestLogin());
    clock.t += TTL - 1;
    await sessions.submit(BRIDGE, s.id, "test.credentials", "user_input", creds());
    expect(s.expiresAt).toBe(clock.t + TTL);
    clock.t += TTL - 1;
    expect(sessions.get(BRIDGE, s.id).status).toBe("waiting_for_display");
  });

  it("forgets finished sessions one TTL after they ended", async () => {
    const { sessions, clock } = setup();
    const done = await sessions.start(
      BRIDGE,
      new TestLogin(async () => ({ type: "complete", stepID: "test.complete", result })),
    );
    const cancelled = await sessions.start(BRIDGE, new TestLogin());
    sessions.cancel(BRIDGE, cancelled.id);
    clock.t += TTL - 1;
    expect(sessions.get(BRIDGE, done.id).status).toBe("complete");
    expect(sessions.get(BRIDGE, cancelled.id).status).toBe("cancelled");
    clock.t += 1;
    expect(caught(() => sessions.get(BRIDGE, done.id)).status).toBe(404);
    expect(caught(() => sessions.get(BRIDGE, cancelled.id)).status).toBe(404);
  });

  it("does not let an expired session complete when its wait comes back later", async () => {
    const { sessions, clock, complete } = setup();
    const login: TestLogin = new TestLogin(async () => login.display);
    const s = await sessions.start(BRIDGE, login);
    const waiting = sessions.submit(BRIDGE, s.id, "test.scan", "display_and_wait", { fields: {} });
    await login.waiting;
    clock.t += TTL;
    expect(sessions.get(BRIDGE, s.id).error?.code).toBe("expired");
    login.scanned();
    expect((await waiting).status).toBe("failed");
    expect(complete).not.toHaveBeenCalled();
  });
});
