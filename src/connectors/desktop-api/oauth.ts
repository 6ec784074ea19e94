import * as oauth from "oauth4webapi";
import { NetworkError } from "../../bridges/connector.ts";
import type { UpstreamAuth } from "./state.ts";

/**
 * OAuth 2.0 against the upstream server, as the vendor's CLI signs in: discovery (RFC 8414), dynamic registration
 * of a public client (RFC 7591), the authorization code with S256 PKCE, and refresh. oauth4webapi does the
 * protocol; loopback servers speak plain http, which it allows only when told.
 */
export const REDIRECT_URI = "http://127.0.0.1/inboxd/desktop-api/callback";

const insecure = (url: string) => ({ [oauth.allowInsecureRequests]: url.startsWith("http://") });

export interface PendingAuthorization {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  verifier: string;
  state: string;
  url: string;
}

/** Finds the upstream's authorization server, registers inboxd with it and builds the consent URL. */
export async function beginAuthorization(baseURL: string): Promise<PendingAuthorization> {
  const issuer = new URL(baseURL);
  const as = await oauth
    .discoveryRequest(issuer, { algorithm: "oauth2", ...insecure(baseURL) })
    .then((response) => oauth.processDiscoveryResponse(issuer, response))
    .catch((error: unknown) => {
      throw new NetworkError(
        "rejected",
        `${baseURL} offers no OAuth sign-in (${describe(error)}): use an access token`,
        "oauth_unavailable",
      );
    });
  if (!as.authorization_endpoint || !as.token_endpoint || !as.registration_endpoint)
    throw new NetworkError(
      "rejected",
      `${baseURL} does not let apps register themselves for OAuth: use an access token`,
      "oauth_unavailable",
    );
  const client = await oauth
    .dynamicClientRegistrationRequest(
      as,
      {
        client_name: "inboxd",
        redirect_uris: [REDIRECT_URI],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        scope: "read write",
      },
      insecure(baseURL),
    )
    .then((response) => oauth.processDynamicClientRegistrationResponse(response))
    .catch((error: unknown) => {
      throw new NetworkError(
        "rejected",
        `${baseURL} refused to register inboxd as an OAuth app: ${describe(error)}`,
        "oauth_unavailable",
      );
    });
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    scope: "read write",
    state,
  }).toString();
  return { as, client, verifier, state, url: url.toString() };
}

/** Exchanges the code the consent page sent back (in the URL the browser landed on) for tokens. */
export async function finishAuthorization(
  pending: PendingAuthorization,
  landedOn: string,
  now: number,
): Promise<UpstreamAuth> {
  let callback: URL;
  try {
    callback = new URL(landedOn);
  } catch {
    throw new NetworkError(
      "rejected",
      "submit the address the browser landed on after the consent page (lastURL)",
      "invalid_callback",
    );
  }
  if (callback.searchParams.get("error") === "access_denied")
    throw new NetworkError("rejected", "the consent was denied on the upstream server", "consent_denied");
  let parameters: URLSearchParams;
  try {
    parameters = oauth.validateAuthResponse(pending.as, pending.client, callback, pending.state);
  } catch (error) {
    throw new NetworkError(
      "rejected",
      `the consent page's answer is not valid here: ${describe(error)}`,
      "invalid_callback",
    );
  }
  const base = pending.as.issuer;
  const tokens = await oauth
    .authorizationCodeGrantRequest(
      pending.as,
      pending.client,
      oauth.None(),
      parameters,
      REDIRECT_URI,
      pending.verifier,
      insecure(base),
    )
    .then((response) => oauth.processAuthorizationCodeResponse(pending.as, pending.client, response))
    .catch((error: unknown) => {
      throw new NetworkError("rejected", `the upstream server refused the code: ${describe(error)}`, "invalid_grant");
    });
  return authOf(tokens, pending.as, pending.client.client_id, now);
}

/** A new access token for a refresh token; the refresh token rotates. A refusal means the user must sign in again. */
export async function refresh(auth: UpstreamAuth, now: number): Promise<UpstreamAuth> {
  if (!auth.refreshToken || !auth.clientID || !auth.tokenEndpoint || !auth.issuer)
    throw new NetworkError(
      "rejected",
      "the upstream token expired and this login has no refresh token: sign in again",
      "invalid_token",
    );
  const as: oauth.AuthorizationServer = { issuer: auth.issuer, token_endpoint: auth.tokenEndpoint };
  const client: oauth.Client = { client_id: auth.clientID, token_endpoint_auth_method: "none" };
  const tokens = await oauth
    .refreshTokenGrantRequest(as, client, oauth.None(), auth.refreshToken, insecure(auth.tokenEndpoint))
    .then((response) => oauth.processRefreshTokenResponse(as, client, response))
    .catch((error: unknown) => {
      if (error instanceof oauth.ResponseBodyError || error instanceof oauth.WWWAuthenticateChallengeError)
        throw new NetworkError(
          "rejected",
          `the upstream server no longer accepts this login's refresh token: sign in again`,
          "invalid_token",
        );
      throw new NetworkError("unavailable", `refreshing the upstream token failed: ${describe(error)}`, "unreachable");
    });
  return authOf(tokens, as, auth.clientID, now);
}

function authOf(
  tokens: oauth.TokenEndpointResponse,
  as: oauth.AuthorizationServer,
  clientID: string,
  now: number,
): UpstreamAuth {
  return {
    accessToken: tokens.access_token,
    ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
    ...(tokens.expires_in ? { expiresAt: now + tokens.expires_in * 1000 } : {}),
    clientID,
    issuer: as.issuer,
    tokenEndpoint: as.token_endpoint,
  };
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
