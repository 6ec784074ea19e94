/**
 * The OAuth 2.0 authorization server on a running runtime: discovery, registration, the code flow with PKCE and the
 * consent page, tokens (used through the official SDK), refresh rotation, introspection, revocation, and each
 * attack of issue 12 as a test of its own.
 */
import BeeperDesktop from "@beeper/desktop-api";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approve, authorizeQuery, Browser, consentFields, exchange, pkce, register, type Server } from "./kit.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Token checks are remembered for up to a second (src/services/tokens.ts): a revocation shows after that. */
const AFTER_CACHE = 1100;

export function oauthSuite(name: string, start: () => Promise<Server>) {
  describe(`OAuth on ${name}`, () => {
    let server: Server;
    let app: Browser; // the app: no cookies
    let owner: Browser; // the owner's browser: keeps the session cookie
    const redirectURI = "http://127.0.0.1:8765/callback";

    beforeAll(async () => {
      server = await start();
      app = new Browser(server.url);
      owner = new Browser(server.url);
    });
    afterAll(() => server?.stop());

    const flow = async (options: { scope?: string } = {}) => {
      const client = await register(app, [redirectURI]);
      const { verifier, challenge } = await pkce();
      const back = await approve(owner, server, {
        clientID: client.client_id,
        redirectURI,
        challenge,
        scope: options.scope,
      });
      const token = await exchange(app, {
        grant_type: "authorization_code",
        code: back.searchParams.get("code")!,
        code_verifier: verifier,
        client_id: client.client_id,
        redirect_uri: redirectURI,
      });
      if (token.status !== 200) throw new Error(`token → ${token.status}: ${token.text}`);
      return {
        client,
        tokens: token.json as {
          access_token: string;
          refresh_token: string;
          expires_in: number;
          scope: string;
          token_type: string;
        },
      };
    };

    it("publishes its metadata without a token, and a 401 points to it (RFC 8414, RFC 9728)", async () => {
      const as = await app.request("/.well-known/oauth-authorization-server");
      expect(as.status).toBe(200);
      expect(as.json).toMatchObject({
        issuer: server.url,
        authorization_endpoint: `${server.url}/oauth/authorize`,
        token_endpoint: `${server.url}/oauth/token`,
        registration_endpoint: `${server.url}/oauth/register`,
        code_challenge_methods_supported: ["S256"],
      });
      const pr = await app.request("/.well-known/oauth-protected-resource");
      expect(pr.json).toMatchObject({ resource: server.url, authorization_servers: [server.url] });
      for (const path of ["/v1/chats", "/v0/mcp"]) {
        const refused = await app.request(path, {
          method: path === "/v0/mcp" ? "POST" : "GET",
          json: path === "/v0/mcp" ? { jsonrpc: "2.0", id: 1, method: "initialize", params: {} } : undefined,
        });
        expect(refused.status).toBe(401);
        expect(refused.headers.get("www-authenticate")).toBe(
          `Bearer realm="inboxd", resource_metadata="${server.url}/.well-known/oauth-protected-resource"`,
        );
      }
    });

    it("registers public clients with loopback or https redirect URIs only", async () => {
      for (const ok of [
        ["http://127.0.0.1/cb"],
        ["http://[::1]:9/cb"],
        ["http://localhost/cb"],
        ["https://app.example/cb"],
      ])
        expect((await app.request("/oauth/register", { json: { client_name: "ok", redirect_uris: ok } })).status).toBe(
          201,
        );
      for (const bad of [
        ["http://evil.example/cb"],
        ["javascript:alert(1)"],
        ["https://app.example/cb#frag"],
        ["http://127.0.0.1.evil.example/cb"],
      ]) {
        const r = await app.request("/oauth/register", { json: { client_name: "bad", redirect_uris: bad } });
        expect(r.status, bad[0]).toBe(400);
        expect(r.json.error).toBe("invalid_redirect_uri");
      }
      const confidential = await app.request("/oauth/register", {
        json: { redirect_uris: ["https://app.example/cb"], token_endpoint_auth_method: "client_secret_basic" },
      });
      expect(confidential.status).toBe(400);
    });

    it("runs the code flow: sign-in, a consent page naming the app, a code for its verifier, tokens the SDK can use", async () => {
      const client = await register(app, [redirectURI], "Calendar Sync");
      const { verifier, challenge } = await pkce();
      const query = authorizeQuery({
        response_type: "code",
        client_id: client.client_id,
        redirect_uri: redirectURI,
        code_challenge: challenge,
        code_challenge_method: "S256",
        scope: "read",
        state: "opaque-state",
      });
      const fresh = new Browser(server.url);
      const signIn = await fresh.request(query);
      expect(signIn.status).toBe(200);
      expect(signIn.text).toContain("Sign in to inboxd");
      const wrong = await fresh.request("/oauth/login", { form: { code: "not-a-code", next: query } });
      expect(wrong.status).toBe(401);
      const signedIn = await fresh.request("/oauth/login", { form: { code: server.admin, next: query } });
      expect(signedIn.status).toBe(303);
      expect(signedIn.headers.get("set-cookie")).toMatch(/HttpOnly; SameSite=Strict/);
      const consent = await fresh.request(signedIn.headers.get("location")!);
      expect(consent.status).toBe(200);
      expect(consent.text).toContain("Calendar Sync");
      expect(consent.text).toContain("127.0.0.1:8765");
      expect(consent.text).toContain("read your chats");
      expect(consent.text).not.toContain("send, edit and delete");
      // Clickjacking and third-party resources.
      expect(consent.headers.get("content-security-policy")).toMatch(/frame-ancestors 'none'/);
      expect(consent.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
      expect(consent.headers.get("x-frame-options")).toBe("DENY");
      expect(consent.text).not.toMatch(/<script|src="http|href="http/);
      const back = await fresh.request("/oauth/authorize", {
        form: { ...consentFields(consent.text), decision: "approve" },
      });
      const location = new URL(back.headers.get("location")!);
      expect(location.origin + location.pathname).toBe(redirectURI);
      expect(location.searchParams.get("state")).toBe("opaque-state");
      const token = await exchange(app, {
        grant_type: "authorization_code",
        code: location.searchParams.get("code")!,
        code_verifier: verifier,
        client_id: client.client_id,
        redirect_uri: redirectURI,
      });
      expect(token.status).toBe(200);
      expect(token.json).toMatchObject({
        token_type: "Bearer",
        scope: "read",
        expires_in: expect.any(Number),
        refresh_token: expect.any(String),
      });
      const sdk = new BeeperDesktop({
        baseURL: server.url,
        accessToken: token.json.access_token,
        maxRetries: 0,
        logLevel: "off",
      });
      expect(Array.isArray((await sdk.accounts.list()) as unknown[])).toBe(true);
      // A read-only grant cannot write.
      await expect(sdk.chats.create({ accountID: "x", type: "single", participantIDs: ["y"] })).rejects.toMatchObject({
        status: 403,
      });
      const introspected = await app.request("/oauth/introspect", { form: { token: token.json.access_token } });
      expect(introspected.json).toMatchObject({
        active: true,
        scope: "read",
        client_id: client.client_id,
        sub: "owner",
        token_type: "Bearer",
        exp: expect.any(Number),
        iat: expect.any(Number),
      });
      const userinfo = await app.request("/oauth/userinfo", { token: token.json.access_token });
      expect(userinfo.json).toMatchObject({
        sub: "owner",
        scope: "read",
        client_id: client.client_id,
        token_use: "access",
      });
    });

    it("rotates refresh tokens; a reused one revokes the whole grant", async () => {
      const { client, tokens } = await flow();
      const refreshed = await exchange(app, {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: client.client_id,
      });
      expect(refreshed.status).toBe(200);
      expect(refreshed.json.refresh_token).not.toBe(tokens.refresh_token);
      expect((await app.request("/v1/accounts", { token: refreshed.json.access_token })).status).toBe(200);
      const reused = await exchange(app, {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: client.client_id,
      });
      expect(reused.status).toBe(400);
      expect(reused.json.error).toBe("invalid_grant");
      await sleep(AFTER_CACHE);
      for (const t of [tokens.access_token, refreshed.json.access_token])
        expect((await app.request("/v1/accounts", { token: t })).status).toBe(401);
      expect(
        (await exchange(app, { grant_type: "refresh_token", refresh_token: refreshed.json.refresh_token })).status,
      ).toBe(400);
    });

    it("answers an unknown client_id with invalid_client, the error after which an MCP client registers again", async () => {
      const { tokens } = await flow();
      const attempts: Record<string, string>[] = [
        { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: "client-that-was-removed" },
        {
          grant_type: "authorization_code",
          code: "x",
          code_verifier: "y".repeat(43),
          client_id: "client-that-was-removed",
        },
      ];
      for (const fields of attempts) {
        const answer = await exchange(app, fields);
        expect(answer.status, fields.grant_type).toBe(401);
        expect(answer.json.error, fields.grant_type).toBe("invalid_client");
        expect(answer.json.error_description).toMatch(/register again at \/oauth\/register/);
      }
      const page = await app.request(
        `/oauth/authorize?response_type=code&client_id=client-that-was-removed&code_challenge=${"a".repeat(43)}&code_challenge_method=S256`,
      );
      expect(page.text).toMatch(/not registered with inboxd, or its registration was removed/);
    });

    describe("Client ID Metadata Documents", () => {
      // The app's metadata, served from a loopback http server (https is required anywhere else).
      const documents = new Map<string, (url: string) => { status: number; body: string; headers?: object }>();
      const docServer = createServer((req, res) => {
        const url = `http://127.0.0.1:${(docServer.address() as AddressInfo).port}${req.url}`;
        const answer = documents.get(req.url ?? "")?.(url) ?? { status: 404, body: "" };
        res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers }).end(answer.body);
      });
      let base = "";
      beforeAll(async () => {
        await new Promise<void>((resolve) => docServer.listen(0, "127.0.0.1", resolve));
        base = `http://127.0.0.1:${(docServer.address() as AddressInfo).port}`;
      });
      afterAll(() => new Promise((resolve) => docServer.close(resolve)));
      const metadataFor = (url: string, extra: object = {}) => ({
        status: 200,
        body: JSON.stringify({ client_id: url, client_name: "Metadata App", redirect_uris: [redirectURI], ...extra }),
      });

      it("advertises the support, and runs the code flow for a client_id that is its metadata URL", async () => {
        const meta = await app.request("/.well-known/oauth-authorization-server");
        expect(meta.json.client_id_metadata_document_supported).toBe(true);
        documents.set("/app/client.json", (url) => metadataFor(url));
        const clientID = `${base}/app/client.json`;
        const { verifier, challenge } = await pkce();
        const back = await approve(owner, server, { clientID, redirectURI, challenge });
        expect(back.searchParams.get("iss")).toBe(server.url);
        const token = await exchange(app, {
          grant_type: "authorization_code",
          code: back.searchParams.get("code")!,
          code_verifier: verifier,
          client_id: clientID,
          redirect_uri: redirectURI,
        });
        expect(token.status, token.text).toBe(200);
        expect((await app.request("/v1/accounts", { token: token.json.access_token })).status).toBe(200);
      });

      it("refuses a document that redirects, is too big, names another client, or a URL on a private address", async () => {
        documents.set("/redirects.json", () => ({
          status: 302,
          body: "",
          headers: { location: "http://169.254.169.254/latest/meta-data" },
        }));
        documents.set("/big.json", (url) =>
          metadataFor(url, { client_name: "x".repeat(150), padding: "y".repeat(6000) }),
        );
        documents.set("/other.json", () => metadataFor("https://elsewhere.example/client.json"));
        const page = async (clientID: string) => {
          const { challenge } = await pkce();
          const answer = await owner.request(
            authorizeQuery({
              response_type: "code",
              client_id: clientID,
              redirect_uri: redirectURI,
              code_challenge: challenge,
              code_challenge_method: "S256",
            }),
          );
          expect(answer.headers.get("location"), clientID).toBeNull();
          return answer.text;
        };
        expect(await page(`${base}/redirects.json`)).toMatch(/redirects, and redirects are not followed/);
        expect(await page(`${base}/big.json`)).toMatch(/over 5120 bytes/);
        expect(await page(`${base}/other.json`)).toMatch(/names another client_id/);
        expect(await page(`${base}/missing.json`)).toMatch(/answered HTTP 404/);
        // Not fetched at all: plain http off loopback, and private or link-local addresses.
        for (const id of [
          "http://app.example/client.json",
          "https://10.0.0.7/client.json",
          "https://169.254.169.254/x",
        ])
          expect(await page(id), id).toMatch(/not registered with inboxd/);
      });
    });

    it("revokes a token (RFC 7009); introspection then says inactive, as for unknown tokens", async () => {
      const { tokens } = await flow();
      expect(
        (await app.request("/oauth/revoke", { form: { token: tokens.access_token, token_type_hint: "access_token" } }))
          .status,
      ).toBe(200);
      await sleep(AFTER_CACHE);
      expect((await app.request("/v1/accounts", { token: tokens.access_token })).status).toBe(401);
      expect((await app.request("/oauth/introspect", { form: { token: tokens.access_token } })).json).toEqual({
        active: false,
      });
      expect((await app.request("/oauth/introspect", { form: { token: "inbx_made-up" } })).json).toEqual({
        active: false,
      });
      expect((await app.request("/oauth/revoke", { form: { token: "unknown" } })).status).toBe(200);
      // The owner's own token introspects too.
      expect((await app.request("/oauth/introspect", { form: { token: server.admin } })).json).toMatchObject({
        active: true,
        scope: "read write",
      });
    });

    describe("attacks", () => {
      let clientID: string;
      beforeAll(async () => {
        clientID = (await register(app, [redirectURI])).client_id;
      });
      const authorize = (params: Record<string, string | undefined>) =>
        owner.request(
          authorizeQuery({
            response_type: "code",
            client_id: clientID,
            redirect_uri: redirectURI,
            code_challenge_method: "S256",
            state: "st",
            scope: "read",
            ...params,
          }),
        );

      it("refuses a missing or plain PKCE challenge, back at the app with the state", async () => {
        for (const params of [
          { code_challenge: undefined },
          { code_challenge: "x".repeat(43), code_challenge_method: "plain" },
        ]) {
          const r = await authorize(params);
          expect(r.status).toBe(303);
          const back = new URL(r.headers.get("location")!);
          expect(back.searchParams.get("error")).toBe("invalid_request");
          expect(back.searchParams.get("state")).toBe("st");
          expect(back.searchParams.get("code")).toBeNull();
        }
      });

      it("never redirects to an address the app did not register (no open redirect)", async () => {
        for (const uri of [
          "https://evil.example/steal",
          "http://127.0.0.1:8765/other",
          "http://127.0.0.1.evil.example:8765/callback",
        ]) {
          const r = await authorize({ redirect_uri: uri, code_challenge: (await pkce()).challenge });
          expect(r.status, uri).toBe(400);
          expect(r.headers.get("location")).toBeNull();
        }
        const unknown = await owner.request(
          authorizeQuery({
            response_type: "code",
            client_id: "client_nobody",
            redirect_uri: "https://evil.example",
            code_challenge: (await pkce()).challenge,
            code_challenge_method: "S256",
          }),
        );
        expect(unknown.status).toBe(400);
        expect(unknown.headers.get("location")).toBeNull();
        // A loopback redirect may use any port (RFC 8252 §7.3).
        const port = await authorize({
          redirect_uri: "http://127.0.0.1:40111/callback",
          code_challenge: (await pkce()).challenge,
        });
        expect([200]).toContain(port.status);
      });

      it("refuses a wrong verifier, and a replayed code revokes what it issued", async () => {
        const { verifier, challenge } = await pkce();
        const back = await approve(owner, server, { clientID, redirectURI, challenge });
        const code = back.searchParams.get("code")!;
        const wrong = await exchange(app, {
          grant_type: "authorization_code",
          code,
          code_verifier: (await pkce()).verifier,
          client_id: clientID,
          redirect_uri: redirectURI,
        });
        expect(wrong.status).toBe(400);
        expect(wrong.json.error).toBe("invalid_grant");
        // The failed attempt used the code up.
        expect(
          (
            await exchange(app, {
              grant_type: "authorization_code",
              code,
              code_verifier: verifier,
              client_id: clientID,
            })
          ).status,
        ).toBe(400);

        const second = await pkce();
        const again = await approve(owner, server, { clientID, redirectURI, challenge: second.challenge });
        const fields = {
          grant_type: "authorization_code",
          code: again.searchParams.get("code")!,
          code_verifier: second.verifier,
          client_id: clientID,
          redirect_uri: redirectURI,
        };
        const first = await exchange(app, fields);
        expect(first.status).toBe(200);
        const replay = await exchange(app, fields);
        expect(replay.status).toBe(400);
        await sleep(AFTER_CACHE);
        expect((await app.request("/v1/accounts", { token: first.json.access_token })).status).toBe(401);
        expect(
          (await exchange(app, { grant_type: "refresh_token", refresh_token: first.json.refresh_token })).status,
        ).toBe(400);
      });

      it("refuses the consent form without the page's CSRF token, without a session, or from another site", async () => {
        const { challenge } = await pkce();
        const page = await authorize({ code_challenge: challenge });
        const fields = consentFields(page.text);
        expect(fields.csrf).toBeTruthy();
        const forged = await owner.request("/oauth/authorize", {
          form: { ...fields, csrf: "forged", decision: "approve" },
        });
        expect(forged.status).toBe(403);
        expect(forged.headers.get("location")).toBeNull();
        const { csrf: _csrf, ...noCsrf } = fields;
        expect((await owner.request("/oauth/authorize", { form: { ...noCsrf, decision: "approve" } })).status).toBe(
          403,
        );
        const stranger = await new Browser(server.url).request("/oauth/authorize", {
          form: { ...fields, decision: "approve" },
        });
        expect(stranger.status).toBe(401);
        expect(stranger.headers.get("location")).toBeNull();
        const crossSite = await owner.request("/oauth/authorize", {
          form: { ...fields, decision: "approve" },
          headers: { origin: "https://evil.example" },
        });
        expect(crossSite.status).toBe(403);
      });

      it("echoes the state exactly, and a denial returns access_denied without a code", async () => {
        const { challenge } = await pkce();
        const state = "a b&c=d/é";
        const back = await approve(owner, server, { clientID, redirectURI, challenge, state, decision: "deny" });
        expect(back.searchParams.get("error")).toBe("access_denied");
        expect(back.searchParams.get("state")).toBe(state);
        expect(back.searchParams.get("code")).toBeNull();
      });

      it("signs in with a token only from the sign-in page's form, never from a link", async () => {
        const link = await new Browser(server.url).request(`/oauth/login?code=${encodeURIComponent(server.admin)}`);
        expect(link.status).toBe(401);
        expect(link.headers.get("set-cookie")).toBeNull();
        expect(link.text).toContain("never from a link");
        const form = await new Browser(server.url).request("/oauth/login", { form: { code: server.admin } });
        expect(form.status).toBe(303);
        expect(form.headers.get("set-cookie")).toContain("inboxd_session=");
      });

      it("does not sign in through a link whose next is another site, however it is written", async () => {
        // Browsers drop tabs and newlines from a URL and read "\\" as "/": each of these would leave the origin.
        for (const next of [
          "//evil.example/x",
          "/\t/evil.example/x",
          "/\n/evil.example/x",
          "/\\evil.example/x",
          "https://evil.example/",
        ]) {
          const r = await new Browser(server.url).request("/oauth/login", { form: { code: server.admin, next } });
          expect(r.status, JSON.stringify(next)).toBe(303);
          expect(r.headers.get("location"), JSON.stringify(next)).toBe("/");
        }
        const kept = await new Browser(server.url).request("/oauth/login", {
          form: { code: server.admin, next: "/oauth/authorize?client_id=c&state=a%20b#top" },
        });
        expect(kept.headers.get("location")).toBe("/oauth/authorize?client_id=c&state=a%20b#top");
      });
    });
  });
}
