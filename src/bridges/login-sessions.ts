import { ApiError, badRequest, notFound } from "../errors.ts";
import { NetworkError } from "./connector.ts";
import type { LoginProcess, LoginResult, LoginStep, StepSubmission } from "./login.ts";

export type SessionStatus =
  | "waiting_for_input"
  | "waiting_for_cookies"
  | "waiting_for_display"
  | "complete"
  | "cancelled"
  | "failed";

export interface LoginSession {
  id: string;
  bridgeID: string;
  status: SessionStatus;
  step?: LoginStep;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  /** Set for reconnects. */
  reauth?: { accountID?: string; loginID: string };
  /** Filled on completion by the host. */
  outcome?: { loginID: string; accountIDs: string[] };
  expiresAt: number;
}

interface Live {
  session: LoginSession;
  process: LoginProcess;
  /** Serialises submissions: one step at a time per session. */
  busy: Promise<unknown>;
  /** Aborts a display_and_wait long-poll in progress (cancel). */
  waiting?: AbortController;
}

/** The newer step types keep to the statuses clients know: each waits for the client to submit something. */
const statusOf: Record<Exclude<LoginStep["type"], "complete">, SessionStatus> = {
  user_input: "waiting_for_input",
  cookies: "waiting_for_cookies",
  display_and_wait: "waiting_for_display",
  client_http: "waiting_for_input",
  webauthn: "waiting_for_input",
};

/** The part of a submission each step type cannot go without (its body field, for the error's path). */
const needs: Partial<Record<LoginStep["type"], "credential" | "response">> = {
  webauthn: "credential",
  client_http: "response",
};

export interface LoginSessionOptions {
  /** An idle session expires after this long (default 10 minutes). */
  ttlMs?: number;
  /** The longest a display_and_wait submission waits for the next state (default 25 s). */
  waitMs?: number;
  now?: () => number;
  /** Stores what a completed login yields; returns the login and account IDs. */
  complete: (session: LoginSession, result: LoginResult) => Promise<{ loginID: string; accountIDs: string[] }>;
}

/**
 * The login-session state machine: waiting_for_input | waiting_for_cookies | waiting_for_display → complete |
 * cancelled | failed. A submission must name the current step and its type, or it is refused with the session
 * unchanged. Sessions live in memory (they hold a connector's in-flight process, which cannot be persisted) and
 * expire when left idle; a terminal session stays readable until it expires too.
 */
export class LoginSessions {
  private readonly live = new Map<string, Live>();
  private readonly ttlMs: number;
  private readonly waitMs: number;
  private readonly now: () => number;

  constructor(private readonly options: LoginSessionOptions) {
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
    this.waitMs = options.waitMs ?? 25_000;
    this.now = options.now ?? Date.now;
  }

  async start(bridgeID: string, process: LoginProcess, reauth?: LoginSession["reauth"]): Promise<LoginSession> {
    this.sweep();
    const session: LoginSession = {
      id: `ls_${crypto.randomUUID()}`,
      bridgeID,
      status: "waiting_for_input",
      reauth,
      expiresAt: this.now() + this.ttlMs,
    };
    const live: Live = { session, process, busy: Promise.resolve() };
    this.live.set(session.id, live);
    await this.advance(live, () => process.start());
    return session;
  }

  get(bridgeID: string, id: string): LoginSession {
    this.sweep();
    const live = this.live.get(id);
    if (!live || live.session.bridgeID !== bridgeID) throw notFound(`login session ${id}`);
    return live.session;
  }

  cancel(bridgeID: string, id: string): LoginSession {
    const session = this.get(bridgeID, id);
    const live = this.live.get(id)!;
    if (session.status === "complete" || session.status === "failed")
      throw new ApiError(409, "SESSION_FINISHED", `login session ${id} is already ${session.status}`, undefined, {
        "x-should-retry": "false",
      });
    live.process.cancel();
    this.finish(session, "cancelled");
    live.waiting?.abort();
    return session;
  }

  async submit(
    bridgeID: string,
    id: string,
    stepID: string,
    type: string,
    submission: StepSubmission,
  ): Promise<LoginSession> {
    const session = this.get(bridgeID, id);
    const live = this.live.get(id)!;
    // An answer to a display step (the sandbox's `confirm`, what a phone sends) goes ahead of a client's plain wait in
    // progress, which then returns the session unchanged and waits again. Plain waits still queue behind each other.
    if (type === "display_and_wait" && Object.keys(submission.fields ?? {}).length > 0) live.waiting?.abort();
    const run = live.busy.then(async () => {
      const step = session.step;
      if (!step || session.status === "complete" || session.status === "cancelled" || session.status === "failed")
        throw new ApiError(
          409,
          "SESSION_FINISHED",
          `login session ${id} is ${session.status}; start a new one`,
          undefined,
          { "x-should-retry": "false" },
        );
      if (step.stepID !== stepID)
        throw new ApiError(409, "STEP_MISMATCH", `step ${stepID} is not the current step (${step.stepID})`, undefined, {
          "x-should-retry": "false",
        });
      if (step.type !== type)
        throw new ApiError(422, "STEP_TYPE_MISMATCH", `the current step is ${step.type}, not ${type}`, {
          issues: [{ code: "invalid_type", message: `expected ${step.type}`, path: ["body", "type"] }],
        });
      const part = needs[step.type];
      if (part && submission[part] === undefined)
        throw badRequest(`a ${step.type} step is answered with ${part}`, [
          { code: "required", message: `${part} is required`, path: ["body", part] },
        ]);
      session.expiresAt = this.now() + this.ttlMs;
      if (step.type === "display_and_wait") {
        if (!live.process.wait) return;
        const controller = new AbortController();
        live.waiting = controller;
        const timer = setTimeout(() => controller.abort(), this.waitMs);
        try {
          await this.advance(live, () => live.process.wait!(step, submission, controller.signal));
        } finally {
          clearTimeout(timer);
          live.waiting = undefined;
        }
      } else {
        await this.advance(live, () => live.process.submit(step, submission));
      }
    });
    live.busy = run.catch(() => undefined);
    await run;
    return session;
  }

  /** Runs one process call and moves the session to the state it reports. */
  private async advance(live: Live, call: () => Promise<LoginStep>): Promise<void> {
    const { session } = live;
    let step: LoginStep;
    try {
      step = await call();
    } catch (error) {
      if (session.status === "cancelled") return;
      const known = error instanceof NetworkError;
      this.finish(session, "failed", {
        code: known ? (error.code ?? error.kind) : "internal_error",
        message: known ? error.message : "the login failed unexpectedly",
      });
      return;
    }
    if (session.status === "cancelled" || session.status === "failed") return;
    if (step.type !== "complete") {
      session.step = step;
      session.status = statusOf[step.type];
      return;
    }
    try {
      session.outcome = await this.options.complete(session, step.result);
      this.finish(session, "complete");
    } catch (error) {
      const api = error instanceof ApiError ? error : undefined;
      this.finish(session, "failed", {
        code: api?.code.toLowerCase() ?? "internal_error",
        message: api?.message ?? "storing the login failed",
      });
    }
  }

  private finish(session: LoginSession, status: "complete" | "cancelled" | "failed", error?: LoginSession["error"]) {
    session.status = status;
    session.step = undefined;
    if (error) session.error = error;
    session.expiresAt = this.now() + this.ttlMs;
  }

  /** Expires idle sessions: an unfinished one fails with `expired` first, and is forgotten one TTL later. */
  private sweep() {
    const now = this.now();
    for (const [id, live] of this.live) {
      if (live.session.expiresAt > now) continue;
      const { session } = live;
      if (session.status === "complete" || session.status === "cancelled" || session.status === "failed")
        this.live.delete(id);
      else {
        live.process.cancel();
        this.finish(session, "failed", { code: "expired", message: "the login session expired after being left idle" });
      }
    }
  }
}
