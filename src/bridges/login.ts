import type { User } from "../schema/wire.ts";
import type { AccountRecord } from "../store/records.ts";

/**
 * The login half of the connector contract (after bridgev2's LoginProcess): a connector lists its flows and runs
 * one `LoginProcess` per login session. A process is a state machine of typed steps with stable step IDs; the host
 * (bridges/login-sessions.ts) owns the session, checks that a submission matches the current step, and turns the
 * final step into stored accounts. Secrets submitted in steps go to the process only and are never returned.
 */
export interface LoginFlow {
  id: string;
  name: string;
  description?: string;
}

export interface LoginInputField {
  id: string;
  label?: string;
  type?: "text" | "password" | "email" | "tel" | "2fa_code" | "username";
  placeholder?: string;
  initialValue?: string;
  optional?: boolean;
}

export interface CookieField {
  id: string;
  name: string;
  type: "cookie" | "header" | "local_storage";
}

export type LoginDisplay =
  | { type: "qr"; data: string }
  | { type: "emoji"; imageURL: string }
  | { type: "code"; data: string }
  | { type: "nothing" };

/** What a finished login yields: one network identity holding one or more accounts. */
export interface LoginResult {
  /** The network's stable ID of the identity (reconnects must produce the same one). */
  remoteID: string;
  user: User;
  accounts: { remoteID: string; user: User; networkName?: string; state: Record<string, unknown> }[];
}

export type LoginStep =
  | { type: "user_input"; stepID: string; instructions?: string; fields: LoginInputField[] }
  | {
      type: "cookies";
      stepID: string;
      instructions?: string;
      url: string;
      fields: CookieField[];
      expectedFinalURLRegex?: string;
      userAgent?: string;
      extractJS?: string;
    }
  | { type: "display_and_wait"; stepID: string; instructions?: string; display: LoginDisplay }
  | { type: "complete"; stepID: string; instructions?: string; result: LoginResult };

export interface StepSubmission {
  fields: Record<string, string>;
  lastURL?: string;
}

/**
 * One login attempt. `start` returns the first step; `submit` answers the current user_input or cookies step;
 * `wait` resolves with the step after a display_and_wait step (or the same step again when `signal` aborts first).
 * Wrong input is reported by throwing a NetworkError("rejected"); the host then fails the session cleanly.
 */
export interface LoginProcess {
  start(): Promise<LoginStep>;
  submit(step: LoginStep, submission: StepSubmission): Promise<LoginStep>;
  wait?(step: LoginStep, submission: StepSubmission, signal: AbortSignal): Promise<LoginStep>;
  cancel(): void;
}

export interface BridgeFacts {
  /** How many accounts of this bridge may be connected on the device. */
  maxAccounts: number;
  /** The ProvisioningCapabilities document of the bridge. */
  capabilities: Record<string, unknown>;
}

/** Optional connector half for logins; a connector without it cannot be connected through the API. */
export interface LoginCapable {
  readonly bridge: BridgeFacts;
  loginFlows(): LoginFlow[];
  /** `reauth` is the existing login's accounts when reconnecting. No IO until `start()`. */
  createLogin(flowID: string, reauth?: AccountRecord[]): LoginProcess;
}
