import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/errors.ts";
import { LOOPBACK_PROXIES, proxyView, trustedProxies, type ProxyTrust } from "./forwarded.ts";

const loopback: ProxyTrust = { trusts: trustedProxies(LOOPBACK_PROXIES), hosts: [] };
const view = (headers: Record<string, string>, peer = "127.0.0.1", trust = loopback) =>
  proxyView(new Headers(headers), peer, trust);
const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, code: error.code, message: error.message };
    throw error;
  }
  throw new Error("not refused");
};

describe("trustedProxies", () => {
  it("matches CIDR ranges and single addresses of both families, IPv4-mapped IPv6 as IPv4", () => {
    const trusts = trustedProxies(["10.0.0.0/8", "fd00::/8", "192.0.2.7"]);
    expect(["10.1.2.3", "::ffff:10.9.9.9", "fd12::1", "192.0.2.7"].map(trusts)).toEqual([true, true, true, true]);
    expect(["11.0.0.1", "fe80::1", "192.0.2.8", "garbage", ""].map(trusts)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(trustedProxies(LOOPBACK_PROXIES)("::ffff:127.0.0.1")).toBe(true);
    expect(trustedProxies(LOOPBACK_PROXIES)("::1")).toBe(true);
  });

  it("refuses what is no address or range, naming it", () => {
    expect(() => trustedProxies(["10.0.0.0/33"])).toThrow(/10\.0\.0\.0\/33 is not an IP address or CIDR range/);
    expect(() => trustedProxies(["proxy.local"])).toThrow(/proxy\.local/);
  });
});

describe("proxyView", () => {
  it("reads X-Forwarded-Host/-Proto/-Port/-For from a trusted peer", () => {
    expect(
      view({
        host: "127.0.0.1:23373",
        "x-forwarded-host": "inbox.example.com",
        "x-forwarded-proto": "https",
        "x-forwarded-for": "203.0.113.9",
      }),
    ).toEqual({
      origin: "https://inbox.example.com",
      host: "inbox.example.com",
      client: "203.0.113.9",
    });
    expect(
      view({ "x-forwarded-host": "inbox.example.com", "x-forwarded-proto": "https", "x-forwarded-port": "8443" })!
        .origin,
    ).toBe("https://inbox.example.com:8443");
    // A port in the host wins over X-Forwarded-Port; a default port is dropped.
    expect(view({ "x-forwarded-host": "inbox.example.com:9000", "x-forwarded-port": "8443" })!.origin).toBe(
      "http://inbox.example.com:9000",
    );
    expect(
      view({ "x-forwarded-host": "inbox.example.com", "x-forwarded-proto": "https", "x-forwarded-port": "443" })!
        .origin,
    ).toBe("https://inbox.example.com");
  });

  it("reads RFC 7239 Forwarded when no X-Forwarded-* header is there", () => {
    const v = view({ forwarded: 'for="[2001:db8::1]:4711";host=inbox.example.com;proto=https' });
    expect(v).toEqual({ origin: "https://inbox.example.com", host: "inbox.example.com", client: "2001:db8::1" });
  });

  it("with X-Forwarded-* present, ignores a Forwarded header (a client's own, passed on by a proxy that sets X-Forwarded-*)", () => {
    const v = view({
      forwarded: "for=10.9.9.9;host=evil.example;proto=https",
      "x-forwarded-for": "203.0.113.9",
      "x-forwarded-host": "inbox.example.com",
      "x-forwarded-proto": "http",
    });
    expect(v).toEqual({ origin: "http://inbox.example.com", host: "inbox.example.com", client: "203.0.113.9" });
  });

  it("ignores every forwarded header from a peer that is not trusted, and answers nothing when none was sent", () => {
    expect(view({ "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" }, "192.0.2.1")).toBeUndefined();
    expect(proxyView(new Headers({ forwarded: "host=evil.example" }), undefined, loopback)).toBeUndefined();
    expect(view({ host: "127.0.0.1:23373" })).toBeUndefined();
  });

  it("walks the hops from the nearest: the first untrusted address is the client, the outermost trusted proxy's host counts", () => {
    const trust: ProxyTrust = { trusts: trustedProxies([...LOOPBACK_PROXIES, "10.0.0.0/8"]), hosts: [] };
    // A client that sends its own X-Forwarded-For (spoofed 1.2.3.4) through two proxies that append.
    const v = view(
      {
        "x-forwarded-for": "1.2.3.4, 198.51.100.5, 10.0.0.2",
        "x-forwarded-host": "spoofed.example, inbox.example.com, internal.lan",
      },
      "127.0.0.1",
      trust,
    );
    expect(v).toEqual({ origin: "http://inbox.example.com", host: "inbox.example.com", client: "198.51.100.5" });
    const f = view(
      {
        forwarded:
          "for=1.2.3.4;host=spoofed.example, for=198.51.100.5;host=inbox.example.com;proto=https, for=10.0.0.2;host=internal.lan",
      },
      "127.0.0.1",
      trust,
    );
    expect(f).toEqual({ origin: "https://inbox.example.com", host: "inbox.example.com", client: "198.51.100.5" });
  });

  it("with --public-url answers as it, and takes only its host (and --allow-host names) from the proxy", () => {
    const trust: ProxyTrust = {
      ...loopback,
      publicURL: new URL("https://inbox.example.com"),
      hosts: ["alias.example.com"],
    };
    expect(view({ "x-forwarded-host": "inbox.example.com", "x-forwarded-proto": "http" }, "127.0.0.1", trust)).toEqual({
      origin: "https://inbox.example.com",
      host: "inbox.example.com",
      client: undefined,
    });
    expect(view({ "x-forwarded-host": "alias.example.com" }, "127.0.0.1", trust)!.origin).toBe(
      "https://inbox.example.com",
    );
    // A tunnel that passes the public Host and nothing else.
    expect(view({ host: "inbox.example.com" }, "127.0.0.1", trust)!.origin).toBe("https://inbox.example.com");
    expect(refusal(() => view({ "x-forwarded-host": "evil.example" }, "127.0.0.1", trust))).toMatchObject({
      status: 403,
      code: "HOST_NOT_ALLOWED",
      message: expect.stringContaining("evil.example"),
    });
  });

  it("refuses malformed forwarded values (400) instead of building URLs from them", () => {
    for (const headers of <Record<string, string>[]>[
      { "x-forwarded-host": "inbox.example.com/path" },
      { "x-forwarded-host": "user@inbox.example.com" },
      { "x-forwarded-proto": "javascript" },
      { "x-forwarded-host": "a.example", "x-forwarded-port": "99999" },
      { forwarded: "host=" },
    ])
      expect(
        refusal(() => view(headers)),
        JSON.stringify(headers),
      ).toMatchObject({
        status: 400,
        code: "INVALID_REQUEST",
        message: expect.stringMatching(/proxy in front of this server forwarded an invalid/),
      });
  });
});
