import { createStorage } from "unstorage";
import { describe, expect, it } from "vitest";
import { createApp } from "../app.ts";
import { ensureToken, revokeToken, TokenVerifier } from "../services/tokens.ts";
import { ApiError } from "../errors.ts";
import { authenticate, authorize, checkRequestOrigin, hostAllowed, requiredScope, type GuardOptions } from "./guard.ts";

function check(
  headers: Record<string, string>,
  options: GuardOptions = {},
  url = "http://127.0.0.1:23373/v1/accounts",
) {
  const request = new Request(url, { headers });
  checkRequestOrigin(request, new URL(url), options);
}

function refusal(work: () => unknown): { status: number; code: string } | undefined {
  try {
    work();
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, code: error.code };
    throw error;
  }
  return undefined;
}

describe("hostAllowed", () => {
  it("allows loopback names, with or without a port", () => {
    for (const host of [
      "127.0.0.1:23373",
      "127.0.0.1",
      "127.1.2.3:80",
      "localhost",
      "LOCALHOST:23373",
      "[::1]",
      "[::1]:23373",
      "app.localhost:3000",
    ])
      expect(hostAllowed(host, {}), host).toBe(true);
  });

  it("refuses other names, including ones that merely start like loopback", () => {
    for (const host of [
      "evil.example",
      "127.0.0.1.evil.example",
      "localhost.evil.example",
      "0.0.0.0:23373",
      "192.168.1.10",
      "[::2]:23373",
      "",
      null,
    ])
      expect(hostAllowed(host, {}), String(host)).toBe(false);
  });

  it("adds configured names, and '*' allows everything", () => {
    expect(hostAllowed("inbox.example:443", { allowedHosts: ["inbox.example"] })).toBe(true);
    expect(hostAllowed("other.example", { allowedHosts: ["inbox.example"] })).toBe(false);
    expect(hostAllowed("anything.example", { allowedHosts: "*" })).toBe(true);
  });

  it("matches configured names case-insensitively, as host names are (`--allow-host Inbox.Example`)", () => {
    expect(hostAllowed("inbox.example", { allowedHosts: ["Inbox.Example"] })).toBe(true);
  });
});

describe("checkRequestOrigin", () => {
  it("lets same-site and non-browser requests through", () => {
    expect(refusal(() => check({}))).toBeUndefined();
    expect(refusal(() => check({ "sec-fetch-site": "same-origin", origin: "http://127.0.0.1:23373" }))).toBeUndefined();
    expect(refusal(() => check({ "sec-fetch-site": "none" }))).toBeUndefined();
    expect(refusal(() => check({ origin: "http://localhost:5173" }))).toBeUndefined();
  });

  it("refuses Origin: null (sandboxed iframes, file:// pages) like a foreign origin, also where any host is allowed", () => {
    expect(refusal(() => check({ origin: "null" }))).toEqual({ status: 403, code: "CROSS_SITE_REQUEST" });
    expect(refusal(() => check({ origin: "null" }, { allowedHosts: "*" }))).toEqual({
      status: 403,
      code: "CROSS_SITE_REQUEST",
    });
  });

  it("refuses a foreign Host (DNS rebinding) with 403, naming the option that would allow it", () => {
    expect(refusal(() => check({ host: "evil.example:23373" }))).toEqual({ status: 403, code: "HOST_NOT_ALLOWED" });
    expect(() => check({ host: "inbox.example:23373" })).toThrow(
      /^Host inbox\.example is not allowed: .*start it with --allow-host inbox\.example$/,
    );
    expect(refusal(() => check({}, {}, "http://evil.example/v1/accounts"))).toEqual({
      status: 403,
      code: "HOST_NOT_ALLOWED",
    });
  });

  it("refuses cross-site browser requests with 403", () => {
    expect(refusal(() => check({ "sec-fetch-site": "cross-site" }))).toEqual({
      status: 403,
      code: "CROSS_SITE_REQUEST",
    });
    expect(refusal(() => check({ origin: "https://evil.example" }))).toEqual({
      status: 403,
      code: "CROSS_SITE_REQUEST",
    });
    expect(refusal(() => check({ origin: "not a url" }))).toEqual({ status: 403, code: "CROSS_SITE_REQUEST" });
  });

  it("accepts an allowed remote host and its origin", () => {
    expect(
      refusal(() =>
        check({ host: "inbox.example", origin: "https://inbox.example" }, { allowedHosts: ["inbox.example"] }),
      ),
    ).toBeUndefined();
  });
});

describe("tokens and scopes", () => {
  const request = (authorization?: string) =>
    new Request("http://127.0.0.1/v1/accounts", { headers: authorization ? { authorization } : {} });

  it("authenticates a stored token and refuses missing, malformed, unknown and revoked ones with 401", async () => {
    const storage = createStorage();
    await ensureToken(storage, "reader-token", { name: "reader", scopes: ["read"] });
    const tokens = new TokenVerifier(storage, 0);
    const principal = await authenticate(request("Bearer reader-token"), tokens);
    expect(principal).toMatchObject({ name: "reader", scopes: ["read"] });
    expect((await authenticate(request("bearer   reader-token  "), tokens)).name).toBe("reader");
    for (const header of [
      undefined,
      "reader-token",
      "Basic cmVhZGVyLXRva2Vu",
      "Bearer",
      "Bearer wrong",
      `Bearer ${"x".repeat(500)}`,
    ])
      await expect(authenticate(request(header), tokens), String(header)).rejects.toMatchObject({
        status: 401,
        code: "UNAUTHORIZED",
      });
    await revokeToken(storage, "reader");
    await expect(authenticate(request("Bearer reader-token"), tokens)).rejects.toMatchObject({ status: 401 });
  });

  it("remembers a verification for the TTL only, so a revocation shows within it", async () => {
    const storage = createStorage();
    await ensureToken(storage, "short-lived", { name: "short", scopes: ["read", "write"] });
    let clock = 0;
    const tokens = new TokenVerifier(storage, 1000, () => clock);
    expect((await authenticate(request("Bearer short-lived"), tokens)).name).toBe("short");
    await revokeToken(storage, "short");
    clock = 999;
    expect((await authenticate(request("Bearer short-lived"), tokens)).name).toBe("short");
    clock = 1000;
    await expect(authenticate(request("Bearer short-lived"), tokens)).rejects.toMatchObject({ status: 401 });
  });

  it("needs read for GET and HEAD, write for everything else", () => {
    expect(requiredScope("GET")).toBe("read");
    expect(requiredScope("HEAD")).toBe("read");
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) expect(requiredScope(method)).toBe("write");
    const reader = { id: "x", name: "r", scopes: ["read" as const] };
    expect(refusal(() => authorize(reader, "read"))).toBeUndefined();
    expect(refusal(() => authorize(reader, "write"))).toEqual({ status: 403, code: "FORBIDDEN" });
  });

  it("applies all of this in front of every route of the app", async () => {
    const storage = createStorage();
    await ensureToken(storage, "reader-token", { scopes: ["read"] });
    const app = await createApp({ storage });
    const call = (method: string, headers: Record<string, string>) =>
      app.fetch(new Request("http://127.0.0.1:23373/v1/chats/x/archive", { method: method, headers }));
    expect((await call("POST", {})).status).toBe(401);
    expect((await call("POST", { authorization: "Bearer reader-token" })).status).toBe(403);
    expect((await call("GET", { authorization: "Bearer reader-token", host: "evil.example" })).status).toBe(403);
    expect(
      (
        await app.fetch(
          new Request("http://127.0.0.1:23373/v1/accounts", { headers: { authorization: "Bearer reader-token" } }),
        )
      ).status,
    ).toBe(200);
    await app.close();
  });
});
