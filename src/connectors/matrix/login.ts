import { NetworkError } from "../../bridges/connector.ts";
import type { LoginFlow, LoginProcess, LoginStep, StepSubmission } from "../../bridges/login.ts";
import type { User } from "../../schema/wire.ts";
import type { AccountRecord } from "../../store/records.ts";
import type { LoadCrypto, MatrixCrypto } from "./crypto/machine.ts";
import { MatrixError, MatrixHttp } from "./http.ts";
import { readState, USER_ID, type MatrixState } from "./state.ts";
import { type LoginDevice, LoginVerification, liveDevice, openNewDevice } from "./verify.ts";

export const matrixFlows: LoginFlow[] = [
  {
    id: "password",
    name: "Homeserver and password",
    description:
      "Sign in with your Matrix user ID (or user name) and password. The password is sent to your homeserver once and not kept.",
  },
  {
    id: "token",
    name: "Access token",
    description: "Use an access token of an existing Matrix session (Element: Settings → Help & About → Access Token).",
  },
];

const PASSWORD_STEP = "matrix.password.credentials";
const TOKEN_STEP = "matrix.token.credentials";
const DEVICE_NAME = "inboxd";

/** What a login needs of the connector for the verification steps (verify.ts). */
export interface LoginCrypto {
  loadCrypto?: LoadCrypto;
  /** The running account's crypto for this device, when a reconnect signs in as the same device again. */
  liveCrypto?: (deviceID: string) => MatrixCrypto | undefined;
}

/**
 * The login: one user_input step per flow, then, for a device inboxd made whose user has a cross-signing identity,
 * the verification steps of verify.ts. The homeserver is a URL or a server name (found through
 * /.well-known/matrix/client, as Element does); left empty, it is the server part of the user ID. Failures carry a
 * code saying which: not_a_homeserver, unreachable, invalid_credentials, invalid_token, rate_limited.
 */
export function createMatrixLogin(
  flowID: string,
  reauth?: AccountRecord[],
  signedIn: AccountRecord[] = [],
  options: LoginCrypto = {},
): LoginProcess {
  if (flowID !== "password" && flowID !== "token")
    throw new NetworkError("not_found", `Matrix has no login flow ${flowID}`);
  // A login's bridged networks have accounts of their own (bridged.ts): the Matrix account is the one with a session.
  const bridged = (reauth ?? []).filter((a) => a.state?.bridgedNetwork);
  const matrix = (reauth ?? []).find((a) => a.state && !a.state.bridgedNetwork);
  const previous = matrix?.state ? readState(matrix.state) : undefined;
  // Every session this device holds, the reconnected one first: signing in again as one of those users takes up
  // its device instead of adding another (one inboxd device per Matrix user).
  const known = [...(matrix ? [matrix] : []), ...signedIn]
    .flatMap((a) => (a.state && !a.state.bridgedNetwork ? [readState(a.state)] : []))
    .filter((s) => s.userID && s.deviceID);
  const homeserverField = {
    id: "homeserver",
    label: "Homeserver",
    type: "text" as const,
    placeholder: "matrix.org or https://matrix.example.org",
    optional: true,
    ...(previous?.homeserver ? { initialValue: previous.homeserver } : {}),
  };
  let device: LoginDevice | undefined;
  let verification: LoginVerification | undefined;
  let made: MatrixState | undefined;
  return {
    async start(): Promise<LoginStep> {
      if (flowID === "token")
        return {
          type: "user_input",
          stepID: TOKEN_STEP,
          instructions: "Connect an existing Matrix session with its access token.",
          fields: [
            { ...homeserverField, optional: false },
            { id: "accessToken", label: "Access token", type: "password" },
          ],
        };
      return {
        type: "user_input",
        stepID: PASSWORD_STEP,
        instructions: "Sign in to your Matrix account. Leave the homeserver empty to use the server of your user ID.",
        fields: [
          {
            id: "username",
            label: "User ID",
            type: "username",
            placeholder: "@alice:matrix.org",
            ...(previous?.userID ? { initialValue: previous.userID } : {}),
          },
          { id: "password", label: "Password", type: "password" },
          homeserverField,
        ],
      };
    },
    async submit(step: LoginStep, submission: StepSubmission): Promise<LoginStep> {
      if (verification) return verification.submit(step, submission).catch(abandon);
      const f = submission.fields;
      const state = flowID === "token" ? await tokenLogin(f, previous) : await passwordLogin(f, known);
      const replaced = known.find((s) => s.userID === state.userID);
      // A device this login made: signed out again if the login is abandoned (no account will ever hold it).
      made = state.ownDevice && state.deviceID !== replaced?.deviceID ? state : undefined;
      const user = await profileOf(new MatrixHttp(state.homeserver, state.accessToken), state.userID).catch(abandon);
      const finish = async (said: string): Promise<LoginStep> => {
        const records = device?.records;
        await device?.close();
        device = undefined;
        made = undefined;
        // Only now is the device it replaces let go: a login that fails before this keeps the old one working.
        await releaseReplacedDevice(replaced, state);
        return completeStep(state, user, said, records);
      };
      device = await openDevice(state, replaced).catch(abandon);
      if (device) {
        verification = new LoginVerification(device, finish);
        if (await verification.needed().catch(abandon)) return verification.firstStep(state.userID);
      }
      return finish(`Signed in as ${state.userID}.`);
    },
    async wait(step: LoginStep, _submission: StepSubmission, signal: AbortSignal): Promise<LoginStep> {
      if (!verification) throw new NetworkError("rejected", `nothing to wait for at ${step.stepID}`);
      return verification.wait(step, signal).catch(abandon);
    },
    cancel() {
      void abandon(undefined).catch(() => undefined);
    },
  };

  /**
   * The device's crypto for the verification: a new device's store, made here; the running account's, when a
   * reconnect signs in as the same device; none for a token's device (not inboxd's keys) or without crypto.
   */
  async function openDevice(state: MatrixState, replaced: MatrixState | undefined): Promise<LoginDevice | undefined> {
    if (!options.loadCrypto || !state.ownDevice) return undefined;
    if (replaced?.deviceID === state.deviceID) {
      const live = options.liveCrypto?.(state.deviceID);
      return live ? liveDevice(live) : undefined;
    }
    return openNewDevice(await options.loadCrypto(), state);
  }

  /**
   * Ends the steps: the other session is told, the store let go, and a device this login made signed out (else
   * every abandoned attempt would leave a device with keys nobody holds in the user's session list). Rethrows.
   */
  async function abandon(error: unknown): Promise<never> {
    await verification?.cancel().catch(() => undefined);
    await device?.discard().catch(() => undefined);
    if (made)
      await new MatrixHttp(made.homeserver, made.accessToken)
        .request("POST", "/_matrix/client/v3/logout", { body: {}, timeoutMs: 10_000, patienceMs: 0 })
        .catch(() => undefined);
    device = undefined;
    verification = undefined;
    made = undefined;
    throw error;
  }

  function completeStep(
    state: MatrixState,
    user: User,
    said: string,
    records: Map<number, unknown> | undefined,
  ): LoginStep {
    return {
      type: "complete",
      stepID: "matrix.complete",
      instructions: said,
      result: {
        remoteID: state.userID,
        user,
        accounts: [
          {
            remoteID: state.userID,
            user,
            networkName: "Matrix",
            state: state as unknown as Record<string, unknown>,
            ...(records ? { records } : {}),
          },
          // Reconnecting keeps the bridged networks' accounts with the login (the same user signed in again).
          ...(previous?.userID === state.userID
            ? bridged.map((a) => ({
                remoteID: a.remoteID!,
                user,
                networkName: a.networkName,
                state: a.state!,
                ...(a.origin ? { origin: a.origin } : {}),
              }))
            : []),
        ],
      },
    };
  }
}

async function passwordLogin(f: Record<string, string>, known: MatrixState[]): Promise<MatrixState> {
  const username = (f.username ?? "").trim();
  if (!username) throw new NetworkError("rejected", "a user ID is required", "invalid_user");
  if (!f.password) throw new NetworkError("rejected", "a password is required", "invalid_credentials");
  if (username.startsWith("@") && !USER_ID.test(username))
    throw new NetworkError("rejected", `${username} is not a Matrix user ID (@name:server)`, "invalid_user");
  const serverName = username.startsWith("@") ? username.slice(username.indexOf(":") + 1) : undefined;
  const homeserver = await discover((f.homeserver ?? "").trim() || serverName);
  const previous = known.find(
    (s) =>
      s.userID === username ||
      (!serverName && s.homeserver === homeserver && s.userID.slice(1, s.userID.indexOf(":")) === username),
  );
  const http = new MatrixHttp(homeserver);
  const reuse = previous && (await deviceLives(previous)) ? previous.deviceID : undefined;
  const answer = await http
    .request<{
      user_id?: unknown;
      access_token?: unknown;
      device_id?: unknown;
      well_known?: { "m.homeserver"?: { base_url?: unknown } };
    }>("POST", "/_matrix/client/v3/login", {
      body: {
        type: "m.login.password",
        identifier: { type: "m.id.user", user: username },
        password: f.password,
        initial_device_display_name: DEVICE_NAME,
        // Signing in again reuses this device: one device per account, not a new one per login.
        ...(reuse ? { device_id: reuse } : {}),
      },
      patienceMs: 0,
    })
    .catch(loginFailure);
  if (
    typeof answer.user_id !== "string" ||
    typeof answer.access_token !== "string" ||
    typeof answer.device_id !== "string"
  )
    throw new NetworkError(
      "rejected",
      "the homeserver's login answer lacks user_id, access_token or device_id",
      "not_a_homeserver",
    );
  const base = answer.well_known?.["m.homeserver"]?.base_url;
  const synced = previous?.userID === answer.user_id ? previous.synced : undefined;
  return {
    homeserver: typeof base === "string" && /^https?:\/\//.test(base) ? trimSlash(base) : homeserver,
    userID: answer.user_id,
    deviceID: answer.device_id,
    accessToken: answer.access_token,
    ownDevice: true,
    synced,
  };
}

/**
 * Whether a device inboxd made is still the session it was: only then is its ID reused. A device signed out or
 * deleted elsewhere lost its keys on the server, and one made again under the same ID would have none, while its
 * crypto store here says they were uploaded; a token login's device is another client's, never taken over.
 */
async function deviceLives(state: MatrixState): Promise<boolean> {
  if (!state.ownDevice || !state.accessToken) return false;
  return new MatrixHttp(state.homeserver, state.accessToken)
    .request<{ device_id?: unknown }>("GET", "/_matrix/client/v3/account/whoami", { timeoutMs: 10_000, patienceMs: 0 })
    .then(
      (answer) => answer.device_id === state.deviceID,
      // Only a session the server says is over is dead; one it cannot be asked about now is taken as alive.
      (error) => !(error instanceof MatrixError && (error.status === 401 || error.errcode === "M_UNKNOWN_TOKEN")),
    );
}

/**
 * A device inboxd made with a password login, now replaced by another one of the same user (the old device was
 * gone on the server, or a token of another session took its place): signed out, so the user's device list does not
 * fill up with dead inboxd sessions. A session whose token the user brought is theirs and is never signed out here.
 */
async function releaseReplacedDevice(old: MatrixState | undefined, next: MatrixState): Promise<void> {
  if (!old?.ownDevice || old.deviceID === next.deviceID || !old.accessToken || old.accessToken === next.accessToken)
    return;
  await new MatrixHttp(old.homeserver, old.accessToken)
    .request("POST", "/_matrix/client/v3/logout", { body: {}, timeoutMs: 10_000, patienceMs: 0 })
    .catch(() => undefined);
}

async function tokenLogin(f: Record<string, string>, previous: MatrixState | undefined): Promise<MatrixState> {
  const token = (f.accessToken ?? "").trim();
  if (!token) throw new NetworkError("rejected", "an access token is required", "invalid_token");
  if (!(f.homeserver ?? "").trim())
    throw new NetworkError("rejected", "the homeserver is required with an access token", "invalid_server");
  const homeserver = await discover(f.homeserver.trim());
  const whoami = await new MatrixHttp(homeserver, token)
    .request<{ user_id?: unknown; device_id?: unknown }>("GET", "/_matrix/client/v3/account/whoami", { patienceMs: 0 })
    .catch(loginFailure);
  if (typeof whoami.user_id !== "string")
    throw new NetworkError("rejected", "the homeserver did not say whose token this is", "invalid_token");
  if (typeof whoami.device_id !== "string")
    throw new NetworkError(
      "rejected",
      "this access token belongs to no device (an appservice or admin token?): use a session's token",
      "invalid_token",
    );
  return {
    homeserver,
    userID: whoami.user_id,
    deviceID: whoami.device_id,
    accessToken: token,
    // Said, not left out: a reconnect merges this over the account's state, where a password login's `true` is.
    ownDevice: false,
    synced: previous?.userID === whoami.user_id ? previous.synced : undefined,
  };
}

function loginFailure(error: unknown): never {
  if (!(error instanceof MatrixError)) throw error;
  if (error.errcode === "M_FORBIDDEN")
    throw new NetworkError("rejected", "the homeserver refused the user ID or password", "invalid_credentials");
  if (error.errcode === "M_UNKNOWN_TOKEN" || error.errcode === "M_MISSING_TOKEN")
    throw new NetworkError("rejected", "the homeserver does not know this access token", "invalid_token");
  if (error.errcode === "M_LIMIT_EXCEEDED")
    throw new NetworkError(
      "rejected",
      `the homeserver is limiting login attempts; try again in ${Math.ceil((error.retryAfterMs ?? 1000) / 1000)} s`,
      "rate_limited",
    );
  if (error.errcode === "M_USER_DEACTIVATED")
    throw new NetworkError("rejected", "this Matrix account is deactivated", "invalid_credentials");
  if (error.status === 404 || error.status === 405)
    throw new NetworkError("rejected", "this server does not answer Matrix logins", "not_a_homeserver");
  throw new NetworkError(
    "rejected",
    `the homeserver refused the login: ${error.message}`,
    error.code ?? "login_failed",
  );
}

/**
 * The client-server API base URL for what the user typed: a URL is used as given; a server name is looked up in
 * its /.well-known/matrix/client (falling back to https://name). Either way the result must answer
 * /_matrix/client/versions.
 */
export async function discover(input: string | undefined): Promise<string> {
  if (!input)
    throw new NetworkError("rejected", "give a homeserver, or a full user ID (@name:server)", "invalid_server");
  let candidates: string[];
  if (/^https?:\/\//i.test(input)) candidates = [trimSlash(input)];
  else {
    if (!/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-fA-F:.]+\](:\d{1,5})?$/.test(input))
      throw new NetworkError("rejected", `${input} is neither a URL nor a server name`, "invalid_server");
    const wellKnown = await fetchWellKnown(input);
    candidates = wellKnown ? [wellKnown] : [`https://${input}`];
  }
  let lastError: NetworkError | undefined;
  for (const base of candidates) {
    try {
      const versions = await new MatrixHttp(base).request<{ versions?: unknown }>("GET", "/_matrix/client/versions", {
        timeoutMs: 15_000,
        patienceMs: 0,
      });
      if (Array.isArray(versions.versions)) return base;
      lastError = new NetworkError(
        "rejected",
        `${base} is not a Matrix homeserver (its /_matrix/client/versions lists no versions)`,
        "not_a_homeserver",
      );
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
      lastError =
        error.code === "unreachable"
          ? new NetworkError(
              "rejected",
              `cannot reach ${base}: ${error.message.replace(/^cannot reach [^:]+: /, "")}`,
              "unreachable",
            )
          : new NetworkError("rejected", `${base} is not a Matrix homeserver (${error.message})`, "not_a_homeserver");
    }
  }
  throw lastError!;
}

async function fetchWellKnown(serverName: string): Promise<string | undefined> {
  try {
    const answer = await new MatrixHttp(`https://${serverName}`).request<{ "m.homeserver"?: { base_url?: unknown } }>(
      "GET",
      "/.well-known/matrix/client",
      { timeoutMs: 10_000, maxBytes: 64 * 1024, patienceMs: 0 },
    );
    const base = answer["m.homeserver"]?.base_url;
    return typeof base === "string" && /^https?:\/\//i.test(base) ? trimSlash(base) : undefined;
  } catch {
    return undefined;
  }
}

/** The account's own user: its display name and avatar from its profile (both optional on Matrix). */
export async function profileOf(http: MatrixHttp, userID: string): Promise<User> {
  const profile = await http
    .request<{ displayname?: unknown; avatar_url?: unknown }>(
      "GET",
      `/_matrix/client/v3/profile/${encodeURIComponent(userID)}`,
    )
    .catch(() => ({}) as { displayname?: unknown; avatar_url?: unknown });
  return {
    id: userID,
    username: userID,
    isSelf: true,
    ...(typeof profile.displayname === "string" && profile.displayname ? { fullName: profile.displayname } : {}),
    ...(typeof profile.avatar_url === "string" && profile.avatar_url.startsWith("mxc://")
      ? { imgURL: profile.avatar_url }
      : {}),
  };
}

const trimSlash = (url: string) => url.replace(/\/+$/, "");
