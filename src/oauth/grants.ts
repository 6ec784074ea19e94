import type { Storage } from "unstorage";
import { createToken, removeTokenByID, verifyToken } from "../services/tokens.ts";
import { oauthError, s256, sameSecret } from "./form.ts";
import type { OAuthStore, RefreshRecord } from "./store.ts";

/**
 * The token endpoint's grants (RFC 6749 §4.1.3 and §6) and what reads tokens back (introspection RFC 7662,
 * revocation RFC 7009, userinfo). Access tokens are ordinary entries of the one token store (so the CLI lists and
 * revokes them, and the API accepts them like any token), with an expiry and the client they were issued to.
 */
export interface GrantOptions {
  storage: Storage;
  store: OAuthStore;
  now: () => number;
  accessTokenTtlMs: number;
}

export interface TokenAnswer {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export async function exchangeCode(o: GrantOptions, form: URLSearchParams): Promise<TokenAnswer> {
  const taken = await o.store.takeCode(form.get("code") ?? "");
  if (!taken) throw oauthError(400, "invalid_grant", "the authorization code is not valid");
  const { record, replayed } = taken;
  if (replayed) {
    // A code used twice was intercepted: revoke what the first use issued (RFC 6749 §4.1.2).
    await o.store.revokeFamily(record.family!, (id) => removeTokenByID(o.storage, id));
    throw oauthError(400, "invalid_grant", "the authorization code was already used; what it issued is revoked");
  }
  if (record.expiresAt <= o.now()) throw oauthError(400, "invalid_grant", "the authorization code expired");
  if (form.get("client_id") !== record.clientID)
    throw oauthError(400, "invalid_grant", "the code was issued to another client");
  if (form.get("redirect_uri") !== null && form.get("redirect_uri") !== record.redirectURI)
    throw oauthError(400, "invalid_grant", "redirect_uri differs from the authorization request's");
  const verifier = form.get("code_verifier") ?? "";
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || !sameSecret(await s256(verifier), record.challenge))
    throw oauthError(400, "invalid_grant", "code_verifier does not match the code_challenge");
  const client = await o.store.client(record.clientID);
  return issue(o, {
    clientID: record.clientID,
    clientName: client?.client_name ?? record.clientID,
    scopes: record.scopes,
    family: record.family!,
    createdAt: o.now(),
  });
}

export async function refreshGrant(o: GrantOptions, form: URLSearchParams): Promise<TokenAnswer> {
  const found = await o.store.refresh(form.get("refresh_token") ?? "");
  if (!found) throw oauthError(400, "invalid_grant", "the refresh token is not valid");
  if (found.record.used) {
    // Rotation means a refresh token works once; a second use means it leaked: end the whole grant.
    await o.store.revokeFamily(found.record.family, (id) => removeTokenByID(o.storage, id));
    throw oauthError(400, "invalid_grant", "the refresh token was already used; the grant is revoked");
  }
  if (form.get("client_id") !== null && form.get("client_id") !== found.record.clientID)
    throw oauthError(400, "invalid_grant", "the refresh token was issued to another client");
  const asked = form.get("scope")?.split(" ").filter(Boolean);
  if (asked?.some((s) => !found.record.scopes.includes(s as "read")))
    throw oauthError(400, "invalid_scope", "a refresh cannot widen the scopes");
  await o.store.markRefreshUsed(found.id, found.record);
  return issue(o, {
    ...found.record,
    scopes: (asked as ("read" | "write")[] | undefined) ?? found.record.scopes,
    used: undefined,
    createdAt: o.now(),
  });
}

async function issue(o: GrantOptions, grant: RefreshRecord): Promise<TokenAnswer> {
  const access = await createToken(o.storage, {
    name: grant.clientName,
    scopes: grant.scopes,
    expiresAt: o.now() + o.accessTokenTtlMs,
    clientID: grant.clientID,
    clientName: grant.clientName,
    inbox: o.store.inbox,
  });
  const refresh = o.store.secret("inbr");
  const refreshID = await o.store.saveRefresh(refresh, { ...grant });
  await o.store.addToFamily(grant.family, { tokenID: access.id, refreshID });
  return {
    access_token: access.token,
    token_type: "Bearer",
    expires_in: Math.round(o.accessTokenTtlMs / 1000),
    refresh_token: refresh,
    scope: grant.scopes.join(" "),
  };
}

/** RFC 7662: what the server knows of a token, or `active: false` for anything unknown, expired or revoked. */
export async function introspect(o: GrantOptions, token: string): Promise<Record<string, unknown>> {
  const access = await verifyToken(o.storage, token, o.now());
  if (access) {
    return {
      active: true,
      scope: access.scopes.join(" "),
      client_id: access.clientID ?? "inboxd-cli",
      sub: OWNER,
      iat: Math.floor(Date.parse(access.createdAt) / 1000),
      ...(access.expiresAt !== undefined ? { exp: Math.floor(access.expiresAt / 1000) } : {}),
      token_type: "Bearer",
      ...(access.clientName ? { client_name: access.clientName } : { client_name: access.name }),
    };
  }
  const refresh = await o.store.refresh(token);
  if (refresh && !refresh.record.used)
    return {
      active: true,
      scope: refresh.record.scopes.join(" "),
      client_id: refresh.record.clientID,
      sub: OWNER,
      iat: Math.floor(refresh.record.createdAt / 1000),
      token_type: "refresh_token",
    };
  return { active: false };
}

/** RFC 7009: ends an access or refresh token (a refresh token takes its whole grant with it). Unknown tokens are fine. */
export async function revoke(o: GrantOptions, token: string): Promise<void> {
  const access = await verifyToken(o.storage, token, o.now());
  if (access) return removeTokenByID(o.storage, access.id);
  const refresh = await o.store.refresh(token);
  if (refresh) await o.store.revokeFamily(refresh.record.family, (id) => removeTokenByID(o.storage, id));
}

/** The device has one user: its owner. */
export const OWNER = "owner";
