import * as v from "valibot";
import type { Storage } from "unstorage";
import type { Api } from "../http/route-kit.ts";
import {
  consentDecision,
  consentPage,
  cookie,
  readAuthorizeRequest,
  redirectURIAllowed,
  safeNext,
  sameOrigin,
  SESSION_COOKIE,
  signIn,
  signInPage,
  type ClientLookup,
} from "./authorize.ts";
import { oauthError, readForm } from "./form.ts";
import { exchangeCode, introspect, OWNER, refreshGrant, revoke, type GrantOptions } from "./grants.ts";
import { escapeHtml, page } from "./pages.ts";
import { OAuthStore, selfContainedClientID } from "./store.ts";
import type { Tenancy } from "../tenancy.ts";
import {
  CLIENT_METADATA_TTL_MS,
  ClientMetadataError,
  clientFromMetadata,
  isClientMetadataURL,
  type FetchClientMetadata,
} from "./client-metadata.ts";

export { OAuthError, oauthErrorResponse } from "./form.ts";
export { OAuthStore } from "./store.ts";

/** Default lifetime of an access token; `serve --token-ttl` / INBOXD_TOKEN_TTL change it. */
export const ACCESS_TOKEN_TTL_MS = 3_600_000;
/** How long a sign-in code printed by `inboxd open` / `serve` works. */
export const SIGN_IN_TTL_MS = 10 * 60_000;

export interface OAuthOptions {
  storage: Storage;
  now: () => number;
  accessTokenTtlMs?: number;
  /** How a client's metadata URL is fetched; by default fetch, without following redirects. */
  fetchClientMetadata?: FetchClientMetadata;
  /** Where a deployment holds many inboxes (AppOptions.tenancy). */
  tenancy?: Tenancy;
}

const fetchWithoutRedirects: FetchClientMetadata = (url, init) =>
  fetch(url, { ...init, redirect: "manual", headers: { accept: "application/json" } });

const tag = "OAuth";
const form = { "application/x-www-form-urlencoded": null };
const Json = v.record(v.string(), v.unknown());

/**
 * The OAuth 2.0 authorization server (the spec's /.well-known and /oauth endpoints): discovery (RFC 8414, RFC 9728),
 * dynamic registration of public clients (RFC 7591), the authorization code flow with S256 PKCE and a consent page
 * for the owner, tokens with refresh rotation, introspection (RFC 7662), revocation (RFC 7009) and userinfo. What it
 * issues are entries of the API's one token store.
 */
export function oauthRoutes(api: Api, options: OAuthOptions) {
  const store = new OAuthStore(options.storage, options.now, options.tenancy?.inbox, options.tenancy !== undefined);
  const grants: GrantOptions = {
    storage: options.storage,
    store,
    now: options.now,
    accessTokenTtlMs: options.accessTokenTtlMs ?? ACCESS_TOKEN_TTL_MS,
  };
  const json = (body: unknown, status = 200) =>
    Response.json(body, { status, headers: { "cache-control": "no-store" } });
  const fetchMetadata = options.fetchClientMetadata ?? fetchWithoutRedirects;
  /** A registered client, or one whose client_id is its metadata URL: read again once its copy is an hour old. */
  const clientOf: ClientLookup = async (clientID) => {
    const stored = await store.client(clientID);
    if (!isClientMetadataURL(clientID)) return stored;
    if (stored?.metadataFetchedAt !== undefined && options.now() - stored.metadataFetchedAt < CLIENT_METADATA_TTL_MS)
      return stored;
    try {
      const client = await clientFromMetadata(clientID, fetchMetadata, options.now);
      await store.saveClient(client);
      return client;
    } catch (error) {
      if (error instanceof ClientMetadataError) return { refused: error.message };
      throw error;
    }
  };

  api
    .add(
      {
        method: "GET",
        path: "/.well-known/oauth-authorization-server",
        operationId: "oauthMetadata",
        summary: "Authorization server metadata (RFC 8414)",
        tag,
        scope: "public",
        response: Json,
        extension: true,
      },
      ({ rc }) => authorizationServerMetadata(rc.url.origin),
    )
    .add(
      {
        method: "GET",
        path: "/.well-known/oauth-protected-resource",
        operationId: "oauthProtectedResource",
        summary: "Protected resource metadata (RFC 9728)",
        tag,
        scope: "public",
        response: Json,
        extension: true,
      },
      ({ rc }) => protectedResourceMetadata(rc.url.origin),
    )
    .add(
      {
        method: "POST",
        path: "/oauth/register",
        operationId: "oauthRegister",
        summary: "Register a client (RFC 7591)",
        description:
          "Public clients only (`token_endpoint_auth_method: none`); redirect URIs must be loopback http (any port when used) or https.",
        tag,
        scope: "public",
        body: v.object({
          client_name: v.optional(v.pipe(v.string(), v.maxLength(100))),
          redirect_uris: v.pipe(v.array(v.pipe(v.string(), v.maxLength(2000))), v.minLength(1), v.maxLength(10)),
          grant_types: v.optional(v.array(v.string())),
          response_types: v.optional(v.array(v.string())),
          token_endpoint_auth_method: v.optional(v.string()),
          scope: v.optional(v.string()),
        }),
        responses: { 201: { description: "The registered client", content: { "application/json": Json } } },
        extension: true,
      },
      async ({ body }) => {
        const bad = body.redirect_uris.find((uri) => !redirectURIAllowed(uri));
        if (bad)
          return json(
            {
              error: "invalid_redirect_uri",
              error_description: `${bad}: redirect URIs must be http://127.0.0.1, http://[::1] or http://localhost (any port), or https`,
            },
            400,
          );
        if ((body.token_endpoint_auth_method ?? "none") !== "none")
          return json(
            {
              error: "invalid_client_metadata",
              error_description: "only public clients (token_endpoint_auth_method none, with PKCE) are supported",
            },
            400,
          );
        const described = {
          client_name: body.client_name?.trim() || "Unnamed app",
          redirect_uris: body.redirect_uris,
          createdAt: new Date(options.now()).toISOString(),
        };
        const client = { client_id: `client_${crypto.randomUUID()}`, ...described };
        if (!options.tenancy) await store.saveClient(client);
        else client.client_id = selfContainedClientID(described);
        return json(
          {
            ...client,
            client_id_issued_at: Math.floor(options.now() / 1000),
            grant_types: ["authorization_code", "refresh_token"],
            response_types: ["code"],
            token_endpoint_auth_method: "none",
            scope: "read write",
          },
          201,
        );
      },
    )
    .add(
      {
        method: "GET",
        path: "/oauth/authorize",
        operationId: "oauthAuthorize",
        summary: "Ask the owner to approve an app",
        description: "Authorization code flow with S256 PKCE: shows the consent page (or the sign-in page first).",
        tag,
        scope: "public",
        responses: {
          200: { description: "An HTML page", content: { "text/html": null } },
          303: { description: "Back to the app" },
        },
        extension: true,
      },
      async ({ rc, req }) => {
        const read = await readAuthorizeRequest(clientOf, rc.url.searchParams);
        if (!("ok" in read)) return "page" in read ? read.page : read.redirect;
        const session = await store.session(cookie(req as unknown as Request, SESSION_COOKIE));
        if (!session) return signInPage(rc.url.pathname + rc.url.search);
        return consentPage(read.ok, session.csrf, store.inbox);
      },
    )
    .add(
      {
        method: "POST",
        path: "/oauth/authorize",
        operationId: "oauthDecide",
        summary: "The owner's decision on the consent page",
        tag,
        scope: "public",
        requestBody: { description: "The consent form", content: form },
        responses: { 303: { description: "Back to the app, with a code or an error" } },
        extension: true,
      },
      ({ req }) => consentDecision(store, clientOf, req as unknown as Request, options.now),
    )
    .add(
      {
        method: "GET",
        path: "/oauth/login",
        operationId: "oauthSignInLink",
        summary: "Sign the owner in with a one-time link",
        description: "`inboxd open` and `serve` print the link (`?code=…`).",
        tag,
        scope: "public",
        responses: {
          200: { description: "The sign-in page", content: { "text/html": null } },
          303: { description: "Signed in" },
        },
        extension: true,
      },
      ({ rc, req }) => {
        const code = rc.url.searchParams.get("code");
        const next = safeNext(rc.url.searchParams.get("next"));
        return code
          ? signIn(store, options.storage, req as unknown as Request, rc.url, code, next, "link")
          : signInPage(next);
      },
    )
    .add(
      {
        method: "POST",
        path: "/oauth/login",
        operationId: "oauthSignIn",
        summary: "Sign the owner in with a code or the admin token",
        tag,
        scope: "public",
        requestBody: { description: "`code` and `next`", content: form },
        responses: { 303: { description: "Signed in" } },
        extension: true,
      },
      async ({ rc, req }) => {
        const foreign = sameOrigin(req as unknown as Request);
        if (foreign) return foreign;
        const fields = await readForm(req as unknown as Request);
        return signIn(
          store,
          options.storage,
          req as unknown as Request,
          rc.url,
          fields.get("code") ?? "",
          safeNext(fields.get("next")),
          "form",
        );
      },
    )
    .add(
      {
        method: "GET",
        path: "/oauth/signed-in",
        operationId: "oauthSignedIn",
        summary: "Shown after signing in",
        tag,
        scope: "public",
        responses: { 200: { description: "An HTML page", content: { "text/html": null } } },
        extension: true,
      },
      () =>
        page(
          "Signed in",
          `<p>You are signed in to ${options.tenancy?.inbox ? `the inbox <strong>${escapeHtml(options.tenancy.inbox)}</strong>` : "inboxd"} in this browser. Apps that ask for access will show you a page to approve them.</p>`,
        ),
    )
    .add(
      {
        method: "POST",
        path: "/oauth/token",
        operationId: "oauthToken",
        summary: "Exchange a code or refresh token (RFC 6749)",
        tag,
        scope: "public",
        requestBody: {
          description: "grant_type authorization_code (code, code_verifier, redirect_uri, client_id) or refresh_token",
          content: form,
          required: true,
        },
        response: Json,
        extension: true,
      },
      async ({ req }) => {
        const fields = await readForm(req as unknown as Request);
        const grant = fields.get("grant_type");
        // invalid_client is what makes an MCP client drop its stored registration and register again: a client
        // whose registration is gone (a new data directory, a removed app) would otherwise retry the same ID forever.
        const clientID = fields.get("client_id");
        if (clientID !== null && !(await store.client(clientID)))
          throw oauthError(
            401,
            "invalid_client",
            "this client_id is not registered here (the registration may have been removed): register again at /oauth/register",
          );
        if (grant === "authorization_code") return json(await exchangeCode(grants, fields));
        if (grant === "refresh_token") return json(await refreshGrant(grants, fields));
        throw oauthError(400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
      },
    )
    .add(
      {
        method: "POST",
        path: "/oauth/introspect",
        operationId: "oauthIntrospect",
        summary: "Describe a token (RFC 7662)",
        tag,
        scope: "public",
        requestBody: { description: "`token` (and `token_type_hint`)", content: form, required: true },
        response: Json,
        extension: true,
      },
      async ({ req }) => json(await introspect(grants, (await readForm(req as unknown as Request)).get("token") ?? "")),
    )
    .add(
      {
        method: "POST",
        path: "/oauth/revoke",
        operationId: "oauthRevoke",
        summary: "Revoke a token (RFC 7009)",
        tag,
        scope: "public",
        requestBody: { description: "`token` (and `token_type_hint`)", content: form, required: true },
        responses: { 200: { description: "Revoked, or unknown (the same answer)" } },
        extension: true,
      },
      async ({ req }) => {
        await revoke(grants, (await readForm(req as unknown as Request)).get("token") ?? "");
        return new Response(null, { status: 200, headers: { "cache-control": "no-store" } });
      },
    )
    .add(
      {
        method: "GET",
        path: "/oauth/userinfo",
        operationId: "oauthUserinfo",
        summary: "Who the token speaks for",
        tag,
        response: Json,
        extension: true,
      },
      ({ rc }) => {
        const p = rc.principal!;
        return {
          sub: OWNER,
          scope: p.scopes.join(" "),
          token_use: "access",
          ...(p.clientID ? { client_id: p.clientID } : {}),
          ...(p.expiresAt ? { exp: Math.floor(p.expiresAt / 1000) } : {}),
          ...(p.createdAt ? { iat: Math.floor(Date.parse(p.createdAt) / 1000) } : {}),
          aud: rc.url.origin,
        };
      },
    );
  return store;
}

/** The endpoints, as RFC 8414 names them (also listed by GET /v1/info under `endpoints.oauth`). */
export function oauthEndpoints(base: string) {
  return {
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    introspection_endpoint: `${base}/oauth/introspect`,
    userinfo_endpoint: `${base}/oauth/userinfo`,
    revocation_endpoint: `${base}/oauth/revoke`,
    registration_endpoint: `${base}/oauth/register`,
  };
}

export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    ...oauthEndpoints(issuer),
    scopes_supported: ["read", "write"],
    response_types_supported: ["code"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    introspection_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
  };
}

export function protectedResourceMetadata(origin: string) {
  return {
    resource: origin,
    authorization_servers: [origin],
    scopes_supported: ["read", "write"],
    bearer_methods_supported: ["header"],
    resource_name: "inboxd",
  };
}

/** RFC 9728 §5.1: a 401 tells the client where to read how to get a token (MCP clients start the flow from it). */
export function challenge(origin: string): string {
  return `Bearer realm="inboxd", resource_metadata="${origin}/.well-known/oauth-protected-resource"`;
}
