/**
 * /v1/tokens and /v1/authorized-apps against the real app on a memory storage driver: CLI tokens made with
 * createToken, OAuth tokens from a real code exchange and refresh (the code is the consent page's outcome, saved
 * in the store the way POST /oauth/authorize does; src/oauth/oauth.test.ts and test/oauth drive the page itself).
 * The app's clock is injected, to step past the token verifier's one-second memory.
 */
import { createStorage } from "unstorage";
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type App } from "../app.ts";
import { s256 } from "../oauth/form.ts";
import { OAuthStore } from "../oauth/store.ts";
import { createToken, hashToken } from "../services/tokens.ts";
import { AppInfo, TokenInfo } from "./tokens.ts";

const base = "http://127.0.0.1:23373";
const redirectURI = "http://127.0.0.1:9/cb";
/** The token verifier remembers an answer for a second (src/services/tokens.ts). */
const PAST_CACHE_MS = 1001;

const apps: App[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

interface Answer {
  status: number;
  text: string;
  json: any;
}

async function harness() {
  let now = Date.now();
  const storage = createStorage();
  const app = await createApp({ storage, rateLimit: false, now: () => now });
  apps.push(app);
  const owner = await createToken(storage, { name: "owner" });
  const call = async (method: string, path: string, token?: string, form?: Record<string, string>): Promise<Answer> => {
    const headers: Record<string, string> = {
      host: "127.0.0.1:23373",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    };
    if (form) headers["content-type"] = "application/x-www-form-urlencoded";
    const res = await app.fetch(
      new Request(base + path, { method, headers, body: form && new URLSearchParams(form).toString() }),
    );
    const text = await res.text();
    return {
      status: res.status,
      text,
      json: text && res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : undefined,
    };
  };
  const store = new OAuthStore(storage, () => now);
  /** Registers an app (or takes a registered one), has the owner approve it, and exchanges the code. */
  const authorize = async (clientID?: string, name = "Mail Helper") => {
    clientID ??= (
      await app
        .fetch(
          new Request(`${base}/oauth/register`, {
            method: "POST",
            headers: { host: "127.0.0.1:23373", "content-type": "application/json" },
            body: JSON.stringify({ client_name: name, redirect_uris: [redirectURI] }),
          }),
        )
        .then((r) => r.json())
    ).client_id as string;
    const [code, verifier] = [crypto.randomUUID(), `${crypto.randomUUID()}${crypto.randomUUID()}`];
    await store.saveCode(code, {
      clientID,
      redirectURI,
      scopes: ["read", "write"],
      challenge: await s256(verifier),
      expiresAt: now + 60_000,
    });
    const answer = await call("POST", "/oauth/token", undefined, {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientID,
      redirect_uri: redirectURI,
    });
    expect(answer.status, answer.text).toBe(200);
    return {
      clientID,
      access: answer.json.access_token as string,
      refresh: answer.json.refresh_token as string,
      at: now,
    };
  };
  const refresh = (token: string) =>
    call("POST", "/oauth/token", undefined, { grant_type: "refresh_token", refresh_token: token });
  return { storage, owner, call, authorize, refresh, advance: (ms: number) => (now += ms) };
}

const TokenList = v.strictObject({ items: v.array(TokenInfo) });
const AppList = v.strictObject({ items: v.array(AppInfo) });

describe("GET /v1/tokens", () => {
  it("lists CLI-made and OAuth-issued tokens that work, oldest first, marking the caller's, without any secret", async () => {
    const h = await harness();
    // A millisecond apart at least, so that creation times order them.
    const tick = () => new Promise((resolve) => setTimeout(resolve, 2));
    await tick();
    const reader = await createToken(h.storage, { name: "reader", scopes: ["read"] });
    await createToken(h.storage, { name: "expired", expiresAt: 1 });
    await tick();
    const grant = await h.authorize();

    const list = await h.call("GET", "/v1/tokens", h.owner.token);
    expect(list.status).toBe(200);
    const { items } = v.parse(TokenList, list.json);
    expect(items.map((t) => t.name)).toEqual(["owner", "reader", "Mail Helper"]);
    expect(items.map((t) => t.createdAt)).toEqual(items.map((t) => t.createdAt).sort());
    expect(items[0]).toEqual({
      id: h.owner.id,
      name: "owner",
      scopes: ["read", "write"],
      createdAt: h.owner.record.createdAt,
      hint: h.owner.token.slice(0, 9),
      current: true,
    });
    expect(items[1]).toMatchObject({ id: reader.id, scopes: ["read"], current: false });
    expect(items[2]).toEqual({
      id: await hashToken(grant.access),
      name: "Mail Helper",
      scopes: ["read", "write"],
      createdAt: expect.any(String),
      hint: grant.access.slice(0, 9),
      expiresAt: new Date(grant.at + 3_600_000).toISOString(),
      clientID: grant.clientID,
      clientName: "Mail Helper",
      current: false,
    });
    expect(items[2].hint).toMatch(/^inbx_.{4}$/);
    for (const secret of [h.owner.token, reader.token, grant.access, grant.refresh])
      expect(list.text).not.toContain(secret.slice(9));

    // The app's own token sees itself as the current one.
    const asApp = v.parse(TokenList, (await h.call("GET", "/v1/tokens", grant.access)).json).items;
    expect(asApp.filter((t) => t.current).map((t) => t.clientID)).toEqual([grant.clientID]);
  });

  it("is the owner's: a read-only token gets 403 on every operation, no token 401", async () => {
    const h = await harness();
    const reader = await createToken(h.storage, { name: "reader", scopes: ["read"] });
    const { clientID } = await h.authorize();
    for (const [method, path] of [
      ["GET", "/v1/tokens"],
      ["DELETE", `/v1/tokens/${h.owner.id}`],
      ["GET", "/v1/authorized-apps"],
      ["DELETE", `/v1/authorized-apps/${clientID}`],
    ]) {
      const refused = await h.call(method, path, reader.token);
      expect([refused.status, refused.json.code], `${method} ${path}`).toEqual([403, "FORBIDDEN"]);
      expect((await h.call(method, path)).status, `${method} ${path}`).toBe(401);
    }
    // Nothing was revoked.
    expect((await h.call("GET", "/v1/tokens", h.owner.token)).json.items).toHaveLength(3);
    expect((await h.call("GET", "/v1/authorized-apps", h.owner.token)).json.items).toHaveLength(1);
  });
});

describe("DELETE /v1/tokens/{tokenID}", () => {
  it("revokes a token by its full id: it gets 401 from then on, the others keep working", async () => {
    const h = await harness();
    const other = await createToken(h.storage, { name: "script" });
    expect((await h.call("GET", "/v1/accounts", other.token)).status).toBe(200);
    const revoked = await h.call("DELETE", `/v1/tokens/${other.id}`, h.owner.token);
    expect([revoked.status, revoked.json]).toEqual([200, { success: true }]);
    h.advance(PAST_CACHE_MS);
    expect((await h.call("GET", "/v1/accounts", other.token)).status).toBe(401);
    expect((await h.call("GET", "/v1/accounts", h.owner.token)).status).toBe(200);
    expect((await h.call("GET", "/v1/tokens", h.owner.token)).json.items.map((t: { id: string }) => t.id)).toEqual([
      h.owner.id,
    ]);
  });

  it("revokes the token the request is made with (the next request is refused) and an app's access token", async () => {
    const h = await harness();
    const grant = await h.authorize();
    expect((await h.call("DELETE", `/v1/tokens/${await hashToken(grant.access)}`, h.owner.token)).status).toBe(200);
    expect((await h.call("DELETE", `/v1/tokens/${h.owner.id.toUpperCase()}`, h.owner.token)).json).toEqual({
      success: true,
    });
    h.advance(PAST_CACHE_MS);
    expect((await h.call("GET", "/v1/tokens", h.owner.token)).status).toBe(401);
    expect((await h.call("GET", "/v1/accounts", grant.access)).status).toBe(401);
  });

  it("answers 404 for an unknown id and 400 naming the parameter for anything but a whole id", async () => {
    const h = await harness();
    const unknown = await h.call("DELETE", `/v1/tokens/${"0".repeat(64)}`, h.owner.token);
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ code: "NOT_FOUND", message: `token ${"0".repeat(64)} not found` });
    for (const bad of [h.owner.id.slice(0, 12), "owner", `${h.owner.id}0`, "z".repeat(64)]) {
      const malformed = await h.call("DELETE", `/v1/tokens/${bad}`, h.owner.token);
      expect(malformed.status, bad).toBe(400);
      expect(malformed.json.message).toMatch(/tokenID/);
      expect(malformed.json.details.issues[0].path).toEqual(["path", "tokenID"]);
    }
    expect((await h.call("GET", "/v1/accounts", h.owner.token)).status).toBe(200);
  });
});

describe("/v1/authorized-apps", () => {
  it("lists the apps holding a live grant, with their tokens, scopes and when they were authorized", async () => {
    const h = await harness();
    expect((await h.call("GET", "/v1/authorized-apps", h.owner.token)).json).toEqual({ items: [] });
    const grant = await h.authorize();
    h.advance(60_000);
    const rotated = (await h.refresh(grant.refresh)).json;

    const list = await h.call("GET", "/v1/authorized-apps", h.owner.token);
    expect(v.parse(AppList, list.json).items).toEqual([
      {
        clientID: grant.clientID,
        clientName: "Mail Helper",
        redirectURIs: [redirectURI],
        scopes: ["read", "write"],
        authorizedAt: new Date(grant.at).toISOString(),
        activeTokens: 2,
        current: false,
      },
    ]);
    for (const secret of [grant.access, grant.refresh, rotated.access_token, rotated.refresh_token])
      expect(list.text).not.toContain(secret.slice(9));
    expect((await h.call("GET", "/v1/authorized-apps", rotated.access_token)).json.items[0].current).toBe(true);

    // Access tokens expired, the refresh token still live: still authorized, with no active token.
    h.advance(3_600_000);
    expect((await h.call("GET", "/v1/authorized-apps", h.owner.token)).json.items).toMatchObject([
      { clientID: grant.clientID, activeTokens: 0 },
    ]);
  });

  it("revoking an app ends its access and refresh tokens, leaves other tokens alone, and lets it ask again", async () => {
    const h = await harness();
    const grant = await h.authorize();
    const rotated = (await h.refresh(grant.refresh)).json;
    const other = await h.authorize(undefined, "Calendar");
    expect((await h.call("GET", "/v1/accounts", rotated.access_token)).status).toBe(200);

    const revoked = await h.call("DELETE", `/v1/authorized-apps/${grant.clientID}`, h.owner.token);
    // Two access tokens (the first and the refreshed one) and the one unused refresh token.
    expect([revoked.status, revoked.json]).toEqual([200, { success: true, revokedTokens: 3 }]);
    h.advance(PAST_CACHE_MS);
    expect((await h.call("GET", "/v1/accounts", rotated.access_token)).status).toBe(401);
    expect((await h.call("GET", "/v1/accounts", grant.access)).status).toBe(401);
    for (const token of [rotated.refresh_token, grant.refresh])
      expect((await h.refresh(token)).json.error).toBe("invalid_grant");
    expect(
      (await h.call("GET", "/v1/authorized-apps", h.owner.token)).json.items.map(
        (a: { clientID: string }) => a.clientID,
      ),
    ).toEqual([other.clientID]);
    expect((await h.call("GET", "/v1/accounts", other.access)).status).toBe(200);
    expect((await h.call("GET", "/v1/tokens", h.owner.token)).json.items.map((t: { name: string }) => t.name)).toEqual([
      "owner",
      "Calendar",
    ]);
    expect((await h.call("DELETE", `/v1/authorized-apps/${grant.clientID}`, h.owner.token)).status).toBe(404);

    // Still registered: the owner may approve it again.
    const again = await h.authorize(grant.clientID);
    expect((await h.call("GET", "/v1/accounts", again.access)).status).toBe(200);
    expect(
      (await h.call("GET", "/v1/authorized-apps", h.owner.token)).json.items.map(
        (a: { clientID: string }) => a.clientID,
      ),
    ).toEqual([other.clientID, grant.clientID]);
  });

  it("lets an app revoke itself, and answers 404 for an app without a live grant", async () => {
    const h = await harness();
    const grant = await h.authorize();
    expect((await h.call("DELETE", `/v1/authorized-apps/${grant.clientID}`, grant.access)).json).toEqual({
      success: true,
      revokedTokens: 2,
    });
    h.advance(PAST_CACHE_MS);
    expect((await h.call("GET", "/v1/authorized-apps", grant.access)).status).toBe(401);
    const unknown = await h.call("DELETE", "/v1/authorized-apps/client_unknown", h.owner.token);
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ code: "NOT_FOUND", message: "authorized app client_unknown not found" });
  });
});
