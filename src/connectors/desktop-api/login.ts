import type BeeperDesktop from "@beeper/desktop-api";
import { NetworkError } from "../../bridges/connector.ts";
import type { LoginFlow, LoginProcess, LoginResult, LoginStep, StepSubmission } from "../../bridges/login.ts";
import type { AccountRecord } from "../../store/records.ts";
import { upstreamAccounts } from "./accounts.ts";
import { beginAuthorization, finishAuthorization, REDIRECT_URI, type PendingAuthorization } from "./oauth.ts";
import { readState, type DesktopApiState, type UpstreamAuth } from "./state.ts";
import { networkErrorOf, upstreamSDK } from "./upstream.ts";

export const desktopApiFlows: LoginFlow[] = [
  {
    id: "oauth",
    name: "Sign in on the server",
    description: "Approve inboxd on the other server's consent page (OAuth with PKCE, as the vendor's CLI signs in).",
  },
  {
    id: "token",
    name: "Access token",
    description: "Paste an access token of the other server (`inboxd token create`, or one the desktop app shows).",
  },
];

const URL_STEP = "desktop-api.server";
const TOKEN_STEP = "desktop-api.token";
const CONSENT_STEP = "desktop-api.oauth.consent";

/**
 * The login: the server's address (and, for the token flow, a token), then for OAuth a `cookies` step whose URL is
 * the consent page: a client with a web view submits the address it lands on (`lastURL`); a person copies it from
 * the browser's address bar into `fields.callbackURL`. Failures carry a code saying which: invalid_server,
 * unreachable, not_a_desktop_api, invalid_token, oauth_unavailable, consent_denied, invalid_callback, loop,
 * no_accounts.
 */
export function createDesktopApiLogin(
  flowID: string,
  self: () => string,
  reauth?: AccountRecord[],
  now: () => number = Date.now,
): LoginProcess {
  if (flowID !== "oauth" && flowID !== "token")
    throw new NetworkError("not_found", `the desktop-api bridge has no login flow ${flowID}`);
  const previous = reauth?.[0]?.state
    ? (() => {
        try {
          return readState(reauth[0].state);
        } catch {
          return undefined;
        }
      })()
    : undefined;
  const serverField = {
    id: "baseURL",
    label: "Server address",
    type: "text" as const,
    placeholder: "http://127.0.0.1:23373",
    ...(previous ? { initialValue: previous.baseURL } : {}),
  };
  let pending: { baseURL: string; authorization: PendingAuthorization } | undefined;
  return {
    async start(): Promise<LoginStep> {
      if (flowID === "token")
        return {
          type: "user_input",
          stepID: TOKEN_STEP,
          instructions: "Connect another Desktop API server with one of its access tokens.",
          fields: [serverField, { id: "accessToken", label: "Access token", type: "password" }],
        };
      return {
        type: "user_input",
        stepID: URL_STEP,
        instructions: "The address of the other Desktop API server (the desktop app, or another inboxd).",
        fields: [serverField],
      };
    },
    async submit(step: LoginStep, submission: StepSubmission): Promise<LoginStep> {
      if (step.stepID === CONSENT_STEP) {
        const landedOn = submission.lastURL ?? submission.fields?.callbackURL;
        if (!pending || !landedOn)
          throw new NetworkError(
            "rejected",
            `submit the address the browser landed on after approving (lastURL, or fields.callbackURL): it starts with ${REDIRECT_URI}`,
            "invalid_callback",
          );
        return complete(pending.baseURL, await finishAuthorization(pending.authorization, landedOn, now()), self());
      }
      const baseURL = await checkServer(submission.fields?.baseURL);
      if (flowID === "token") {
        const token = (submission.fields?.accessToken ?? "").trim();
        if (!token) throw new NetworkError("rejected", "an access token is required", "invalid_token");
        return complete(baseURL, { accessToken: token }, self());
      }
      pending = { baseURL, authorization: await beginAuthorization(baseURL) };
      return {
        type: "cookies",
        stepID: CONSENT_STEP,
        instructions: `Approve inboxd on the other server's consent page. It sends the browser on to ${REDIRECT_URI}?…, where nothing answers: that address completes the sign-in.`,
        url: pending.authorization.url,
        fields: [],
        expectedFinalURLRegex: `^${REDIRECT_URI.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}\\?`,
      };
    },
    cancel() {
      pending = undefined;
    },
  };
}

/** The address as a base URL that answers /v1/info the way a Desktop API server does (no token needed for that). */
async function checkServer(input: string | undefined): Promise<string> {
  const raw = (input ?? "").trim();
  let url: URL;
  try {
    url = new URL(/^https?:\/\//i.test(raw) ? raw : `http://${raw}`);
  } catch {
    throw new NetworkError(
      "rejected",
      `${raw || "an empty address"} is not a server address (http://host:port)`,
      "invalid_server",
    );
  }
  if (!raw || (url.protocol !== "http:" && url.protocol !== "https:"))
    throw new NetworkError("rejected", "give the server's address, like http://127.0.0.1:23373", "invalid_server");
  const baseURL = url.origin + url.pathname.replace(/\/+$/, "");
  let response: Response;
  try {
    response = await fetch(`${baseURL}/v1/info`, {
      headers: { accept: "application/json" },
      signal: AbortSignal.timeout(15_000),
    });
  } catch (error) {
    throw new NetworkError(
      "rejected",
      `cannot reach ${baseURL}: ${error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : error}`,
      "unreachable",
    );
  }
  const info = (await response.json().catch(() => undefined)) as
    | { app?: { name?: unknown }; server?: { status?: unknown } }
    | undefined;
  if (!response.ok || typeof info?.app?.name !== "string" || info.server?.status !== "running")
    throw new NetworkError(
      "rejected",
      `${baseURL} is not a Desktop API server (its /v1/info answered ${response.status} without the app and server status)`,
      "not_a_desktop_api",
    );
  return baseURL;
}

/** Signs in with the token: whose server it is (refusing a loop), and the accounts it holds. */
async function complete(baseURL: string, auth: UpstreamAuth, self: string): Promise<LoginStep> {
  const sdk = upstreamSDK(baseURL, () => auth);
  const instanceID = await upstreamInstance(sdk);
  if (instanceID === self)
    throw new NetworkError(
      "rejected",
      `${baseURL} is this inboxd itself: connecting it would loop every message back`,
      "loop",
    );
  const found = await upstreamAccounts(sdk, baseURL, auth, instanceID, self);
  if (found.looped.length && !found.accounts.length)
    throw new NetworkError(
      "rejected",
      `${baseURL} already gets its accounts from this inboxd (${found.looped.join(", ")}): connecting it back would loop every message`,
      "loop",
    );
  if (found.looped.length)
    throw new NetworkError(
      "rejected",
      `${baseURL} serves accounts of this inboxd (${found.looped.join(", ")}): connecting it would loop their messages back here; remove that connection there first`,
      "loop",
    );
  if (!found.accounts.length)
    throw new NetworkError("rejected", `${baseURL} has no accounts to connect`, "no_accounts");
  const first = found.accounts[0];
  const result: LoginResult = {
    remoteID: instanceID ?? baseURL,
    user: { ...first.user, isSelf: true },
    accounts: found.accounts,
  };
  return {
    type: "complete",
    stepID: "desktop-api.complete",
    instructions: `Connected ${found.accounts.length} account(s) of ${baseURL}.`,
    result,
  };
}

/** The upstream's instance ID from its /v1/info (inboxd has one; the desktop app does not): also checks the token. */
async function upstreamInstance(sdk: BeeperDesktop): Promise<string | undefined> {
  try {
    const info = (await sdk.info.retrieve()) as { server?: { instance_id?: unknown } };
    await sdk.accounts.list();
    return typeof info.server?.instance_id === "string" ? info.server.instance_id : undefined;
  } catch (error) {
    const failure = networkErrorOf(error);
    if (failure.code === "invalid_token")
      throw new NetworkError("rejected", "the server does not accept this access token", "invalid_token");
    throw new NetworkError("rejected", failure.message, failure.code ?? "login_failed");
  }
}

export type { DesktopApiState };
