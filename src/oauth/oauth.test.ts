/**
 * What needs the app's clock or its log: codes that expire after 60 s, access tokens that expire, and that no
 * secret of the flow ever reaches a log line. The app runs in-process on a real (memory) storage driver.
 */
import { createStorage } from "unstorage";
import { describe, expect, it } from "vitest";
import { createApp } from "../app.ts";
import { createToken, listTokens } from "../services/tokens.ts";
import { s256 } from "./form.ts";

const base = "http://127.0.0.1:23373";
const redirectURI = "http://127.0.0.1:9/cb";

async function harness() {
  let now = Date.now();
  const lines: string[] = [];
  const storage = createStorage();
  const app = await createApp({ storage, rateLimit: false, now: () => now, log: (line) => lines.push(line) });
  const owner = (await createToken(storage, { name: "owner" })).token;
  const call = async (
    path: string,
    init: { form?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {},
  ) => {
    const headers: Record<string, string> = { host: "127.0.0.1:23373", ...init.headers };
    let body: string | undefined;
    if (init.form)
      [headers["content-type"], body] = [
        "application/x-www-form-urlencoded",
        new URLSearchParams(init.form).toString(),
      ];
    if (init.json) [headers["content-type"], body] = ["application/json", JSON.stringify(init.json)];
    return app.fetch(new Request(base + path, { method: body ? "POST" : "GET", headers, body }));
  };
  const client = await (
    await call("/oauth/register", { json: { client_name: "Clocked", redirect_uris: [redirectURI] } })
  ).json();
  /** Sign in, approve, and answer the code with its verifier. */
  const code = async () => {
    const verifier = crypto.randomUUID() + crypto.randomUUID();
    const q = new URLSearchParams({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: redirectURI,
      code_challenge: await s256(verifier),
      code_challenge_method: "S256",
    });
    const signedIn = await call("/oauth/login", { form: { code: owner, next: `/oauth/authorize?${q}` } });
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0];
    const html = await (await call(`/oauth/authorize?${q}`, { headers: { cookie } })).text();
    const fields = Object.fromEntries(
      [...html.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], m[2].replace(/&amp;/g, "&")]),
    );
    const back = await call("/oauth/authorize", { form: { ...fields, decision: "approve" }, headers: { cookie } });
    return { code: new URL(back.headers.get("location")!).searchParams.get("code")!, verifier, cookie };
  };
  const token = (c: { code: string; verifier: string }) =>
    call("/oauth/token", {
      form: { grant_type: "authorization_code", code: c.code, code_verifier: c.verifier, client_id: client.client_id },
    });
  return { app, storage, owner, lines, call, client, code, token, advance: (ms: number) => (now += ms) };
}

describe("OAuth with the app's clock and log", () => {
  it("refuses a code after 60 s", async () => {
    const h = await harness();
    const c = await h.code();
    h.advance(61_000);
    const r = await h.token(c);
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringMatching(/expired/),
    });
  });

  it("lets an access token expire after its lifetime; the refresh token gets a new one", async () => {
    const h = await harness();
    const tokens = await (await h.token(await h.code())).json();
    expect(tokens.expires_in).toBe(3600);
    const auth = { authorization: `Bearer ${tokens.access_token}` };
    expect((await h.call("/v1/accounts", { headers: auth })).status).toBe(200);
    h.advance(3_601_000);
    expect((await h.call("/v1/accounts", { headers: auth })).status).toBe(401);
    const refreshed = await h.call("/oauth/token", {
      form: { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
    });
    expect(
      (await h.call("/v1/accounts", { headers: { authorization: `Bearer ${(await refreshed.json()).access_token}` } }))
        .status,
    ).toBe(200);
    // The token store lists the grant's tokens under the app's name (what `inboxd token list` shows).
    expect(
      (await listTokens(h.storage)).filter((t) => t.clientID === h.client.client_id).map((t) => t.clientName),
    ).toEqual(["Clocked", "Clocked"]);
  });

  it("writes none of the flow's secrets to the log", async () => {
    const h = await harness();
    const c = await h.code();
    const tokens = await (await h.token(c)).json();
    await h.call("/v1/accounts", { headers: { authorization: `Bearer ${tokens.access_token}` } });
    await h.call("/oauth/introspect", { form: { token: tokens.access_token } });
    await h.call("/oauth/token", { form: { grant_type: "refresh_token", refresh_token: tokens.refresh_token } });
    await h.call("/oauth/revoke", { form: { token: tokens.refresh_token } });
    const log = h.lines.join("\n");
    expect(h.lines.length).toBeGreaterThan(5);
    for (const secret of [
      c.code,
      c.verifier,
      c.cookie.split("=")[1],
      tokens.access_token,
      tokens.refresh_token,
      h.owner,
    ])
      expect(log).not.toContain(secret);
  });
});
