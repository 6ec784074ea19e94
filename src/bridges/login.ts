import type { User } from "../schema/wire.ts";
import type { AccountOrigin, AccountRecord } from "../store/records.ts";

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

/** HTTP headers with every value kept (a header may repeat), as bridgev2 carries them (Go's http.Header). */
export type HTTPHeaders = Record<string, string[]>;

/**
 * A request the client must make for the login, from its own device (bridgev2's `client_http` step, added in 2026):
 * a network that only lets the user's own browser or app reach its login endpoints. `body` is base64. bridgev2's
 * `request_id` is the step's `stepID` here (bridgev2 uses the request ID as the step ID, too).
 */
export interface ClientHTTPRequest {
  method: string;
  url: string;
  headers?: HTTPHeaders;
  body?: string;
}

/** What the client got for a `client_http` request: the response (`statusCode` 100–599), or `error` when it failed. */
export interface ClientHTTPResponse {
  statusCode?: number;
  /** The URL after redirects. */
  finalURL?: string;
  headers?: HTTPHeaders;
  /** base64 */
  body?: string;
  /** A safe message (no secrets) for a request the client could not complete. */
  error?: string;
}

/** What a finished login yields: one network identity holding one or more accounts. */
export interface LoginResult {
  /** The network's stable ID of the identity (reconnects must produce the same one). */
  remoteID: string;
  user: User;
  accounts: {
    remoteID: string;
    user: User;
    networkName?: string;
    state: Record<string, unknown>;
    origin?: AccountOrigin;
    /**
     * Records (ConnectorHost.records parts) the login made for the account, stored with it in place of any it had:
     * Matrix's crypto store, made during the login to verify the device before the account existed.
     */
    records?: Map<number, unknown>;
  }[];
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
  | { type: "client_http"; stepID: string; instructions?: string; request: ClientHTTPRequest }
  /**
   * A passkey (bridgev2's `webauthn` step, added in 2026): the client calls `navigator.credentials.get({publicKey})`
   * at `url` (the origin the credential belongs to) and submits the credential's JSON (`PublicKeyCredential.toJSON()`).
   * `publicKey` is the PublicKeyCredentialRequestOptions JSON as the network gives it.
   */
  | { type: "webauthn"; stepID: string; instructions?: string; url?: string; publicKey?: Record<string, unknown> }
  | { type: "complete"; stepID: string; instructions?: string; result: LoginResult };

/** What a client submits for a step: `fields` for user_input and cookies, `credential` for webauthn, `response` for client_http. */
export interface StepSubmission {
  fields: Record<string, string>;
  lastURL?: string;
  /** The WebAuthn credential as JSON (webauthn steps). */
  credential?: Record<string, unknown>;
  /** The outcome of the request a client_http step asked for. */
  response?: ClientHTTPResponse;
}

/**
 * One login attempt. `start` returns the first step; `submit` answers the current user_input, cookies, webauthn or
 * client_http step (a client_http step is answered with what the request got, and may be followed by another);
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

/** What the client driving a login said it can do (bridgev2 asks the same when a login starts). */
export interface LoginClient {
  /** The client can make `client_http` requests; a process must not return such a step otherwise. */
  clientHTTP: boolean;
}

/** Optional connector half for logins; a connector without it cannot be connected through the API. */
export interface LoginCapable {
  readonly bridge: BridgeFacts;
  loginFlows(): LoginFlow[];
  /**
   * `reauth` is the existing login's accounts when reconnecting; `signedIn` is every account of this network on the
   * device, so that a new login that turns out to be one of them can take up what it holds (Matrix: its device).
   * No IO until `start()`.
   */
  createLogin(flowID: string, reauth?: AccountRecord[], client?: LoginClient, signedIn?: AccountRecord[]): LoginProcess;
}
