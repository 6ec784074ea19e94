import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.ts";
import { addressKey, BURST_SECONDS, DEFAULT_RATE_LIMIT, parseRateLimit, RateLimiter } from "./rate-limit.ts";

/** A limiter on a clock the test moves by hand. */
function limiter(options: ConstructorParameters<typeof RateLimiter>[0] = {}) {
  const clock = { t: 1_000_000 };
  return { clock, limiter: new RateLimiter(options, () => clock.t) };
}

/** The 429 `work` throws, or undefined when it throws nothing. */
function refusal(work: () => void): ApiError | undefined {
  try {
    work();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  return undefined;
}

/** How many of `n` spends in a row succeed. */
const spends = (l: RateLimiter, token: string, n: number) =>
  Array.from({ length: n }, () => refusal(() => l.spend(token))).filter((e) => !e).length;

describe("RateLimiter: per-token budget", () => {
  it("allows a burst, then refills at the rate", () => {
    const { clock, limiter: l } = limiter({ perSecond: 10, burst: 5 });
    expect(spends(l, "a", 8)).toBe(5);
    clock.t += 100; // one request's worth at 10/s
    expect(spends(l, "a", 3)).toBe(1);
    clock.t += 250; // 2.5 requests' worth: two whole ones
    expect(spends(l, "a", 3)).toBe(2);
    clock.t += 60_000; // a long pause refills to the burst, not beyond
    expect(spends(l, "a", 10)).toBe(5);
  });

  it("answers 429 RATE_LIMITED with retry-after (whole seconds, ≥ 1) and retry-after-ms, naming the budget", () => {
    const { clock, limiter: l } = limiter({ perSecond: 4, burst: 2 });
    spends(l, "a", 2);
    const error = refusal(() => l.spend("a"))!;
    expect(error.status).toBe(429);
    expect(error.code).toBe("RATE_LIMITED");
    expect(error.message).toMatch(/4 requests per second with bursts of up to 2/);
    expect(error.headers).toEqual({ "retry-after": "1", "retry-after-ms": "250" });
    clock.t += 100;
    expect(refusal(() => l.spend("a"))!.headers!["retry-after-ms"]).toBe("150");
    clock.t += 150;
    expect(refusal(() => l.spend("a"))).toBeUndefined();

    const slow = limiter({ perSecond: 0.4, burst: 1 }).limiter;
    slow.spend("a");
    expect(refusal(() => slow.spend("a"))!.headers).toEqual({ "retry-after": "3", "retry-after-ms": "2500" });
  });

  it("keeps tokens apart: one token's flood leaves another's budget whole", () => {
    const { limiter: l } = limiter({ perSecond: 1, burst: 3 });
    expect(spends(l, "flood", 1000)).toBe(3);
    expect(spends(l, "quiet", 3)).toBe(3);
  });

  it("refused requests cost nothing: a client that keeps retrying gets in as soon as the bucket refills", () => {
    const { clock, limiter: l } = limiter({ perSecond: 1, burst: 1 });
    l.spend("a");
    for (let i = 0; i < 100; i++) expect(refusal(() => l.spend("a"))).toBeDefined();
    clock.t += 1000;
    expect(refusal(() => l.spend("a"))).toBeUndefined();
  });

  it("does not drain a bucket when the clock is set back", () => {
    const { clock, limiter: l } = limiter({ perSecond: 1, burst: 2 });
    l.spend("a");
    clock.t -= 3_600_000;
    expect(refusal(() => l.spend("a"))).toBeUndefined();
  });
});

describe("RateLimiter: failed authentication per address", () => {
  it("refuses an address after its failures use up the minute's budget, until the window frees up", () => {
    const { clock, limiter: l } = limiter({ failedAuthPerMinute: 6 });
    for (let i = 0; i < 6; i++) {
      expect(refusal(() => l.checkAddress("198.51.100.7"))).toBeUndefined();
      l.failed("198.51.100.7");
    }
    const error = refusal(() => l.checkAddress("198.51.100.7"))!;
    expect(error.status).toBe(429);
    expect(error.message).toMatch(/failed authentications.*6 a minute/);
    // 6 a minute: one more try every 10 s.
    expect(error.headers).toEqual({ "retry-after": "10", "retry-after-ms": "10000" });
    expect(refusal(() => l.checkAddress("203.0.113.9"))).toBeUndefined(); // another address is not affected
    clock.t += 9_999;
    expect(refusal(() => l.checkAddress("198.51.100.7"))).toBeDefined();
    clock.t += 1;
    expect(refusal(() => l.checkAddress("198.51.100.7"))).toBeUndefined();
  });

  it("counts every failure, also those that were let in together before the first was counted", () => {
    const { clock, limiter: l } = limiter({ failedAuthPerMinute: 6 });
    for (let i = 0; i < 12; i++) l.failed("a"); // 12 concurrent requests all passed checkAddress
    clock.t += 60_000; // a minute frees only 6 of them
    expect(refusal(() => l.checkAddress("a"))!.headers!["retry-after-ms"]).toBe("10000");
  });

  it("does not throttle when the runtime cannot tell addresses", () => {
    const { limiter: l } = limiter({ failedAuthPerMinute: 1 });
    for (let i = 0; i < 10; i++) l.failed(undefined);
    expect(refusal(() => l.checkAddress(undefined))).toBeUndefined();
    expect(l.sizes.addresses).toBe(0);
  });

  it("does not throttle loopback clients, which on a daemon are every app of the machine", () => {
    const { limiter: l } = limiter({ failedAuthPerMinute: 1 });
    for (const address of ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"]) {
      for (let i = 0; i < 5; i++) l.failed(address);
      expect(
        refusal(() => l.checkAddress(address)),
        address,
      ).toBeUndefined();
    }
    expect(l.sizes.addresses).toBe(0);
    for (const address of ["128.0.0.1", "::ffff:10.0.0.1", "fe80::1"]) {
      l.failed(address);
      expect(refusal(() => l.checkAddress(address))?.status, address).toBe(429);
    }
  });

  it("failures do not touch the token budgets, nor spends the address budgets", () => {
    const { limiter: l } = limiter({ perSecond: 1, burst: 1, failedAuthPerMinute: 1 });
    l.failed("a");
    expect(refusal(() => l.spend("a"))).toBeUndefined();
    expect(refusal(() => l.checkAddress("b"))).toBeUndefined();
  });
});

describe("addressKey", () => {
  it("counts IPv4 addresses apart and IPv6 ones by their /64, however they are written", () => {
    expect(addressKey("198.51.100.7")).toBe("198.51.100.7");
    expect(addressKey("::ffff:198.51.100.7")).toBe("198.51.100.7");
    for (const same of [
      "2001:db8:1:2::1",
      "2001:0db8:0001:0002:ffff:0:0:9",
      "2001:db8:1:2:3::",
      "2001:DB8:1:2::1%eth0",
    ])
      expect(addressKey(same), same).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8::2:3:4:5:6")).toBe("2001:db8:0:2::/64");
    expect(addressKey("1::2:3:4:5.6.7.8")).toBe("1:0:0:2::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
  });

  it("throttles a client that moves through its /64", () => {
    const { limiter: l } = limiter({ failedAuthPerMinute: 3 });
    for (let i = 1; i <= 3; i++) l.failed(`2001:db8:1:2::${i.toString(16)}`);
    expect(refusal(() => l.checkAddress("2001:db8:1:2::ffff"))?.status).toBe(429);
    expect(refusal(() => l.checkAddress("2001:db8:1:3::1"))).toBeUndefined();
  });
});

describe("RateLimiter: memory", () => {
  it("holds at most maxKeys buckets however many tokens and addresses it sees", () => {
    const { clock, limiter: l } = limiter({ perSecond: 1, burst: 10, failedAuthPerMinute: 10, maxKeys: 100 });
    for (let i = 0; i < 100_000; i++) {
      l.spend(`token-${i}`);
      l.failed(`address-${i}`);
      if (i % 1000 === 0) clock.t += 1;
    }
    expect(l.sizes.tokens).toBeLessThanOrEqual(100);
    expect(l.sizes.addresses).toBeLessThanOrEqual(100);
  });

  it("drops full buckets first: an address still locked out keeps its debt while idle ones make room", () => {
    const { clock, limiter: l } = limiter({ failedAuthPerMinute: 1, maxKeys: 4 });
    for (let i = 0; i < 3; i++) l.failed("guesser"); // 2 failures over the budget: locked for 3 minutes
    for (let i = 0; i < 3; i++) l.failed(`typo-${i}`);
    clock.t += 60_000; // the typos' buckets are full again; the guesser's is not
    for (let i = 0; i < 3; i++) l.failed(`new-${i}`); // the guesser was seen first: an oldest-first eviction would drop it
    expect(l.sizes.addresses).toBeLessThanOrEqual(4);
    expect(refusal(() => l.checkAddress("guesser"))!.headers!["retry-after"]).toBe("120");
  });
});

describe("parseRateLimit", () => {
  it("reads requests per second, with the default burst ratio; 0 or off turns the limits off; empty keeps the defaults", () => {
    expect(parseRateLimit("10")).toEqual({ perSecond: 10, burst: 10 * BURST_SECONDS });
    expect(parseRateLimit(" 0.1 ")).toEqual({ perSecond: 0.1, burst: 1 });
    expect(parseRateLimit(String(DEFAULT_RATE_LIMIT.perSecond))).toEqual({
      perSecond: DEFAULT_RATE_LIMIT.perSecond,
      burst: DEFAULT_RATE_LIMIT.burst,
    });
    expect(parseRateLimit("0")).toBe(false);
    expect(parseRateLimit("OFF")).toBe(false);
    expect(parseRateLimit(undefined)).toBeUndefined();
    expect(parseRateLimit("")).toBeUndefined();
  });

  it("refuses anything else, naming the value", () => {
    for (const bad of ["-1", "ten", "Infinity", "1e999", "NaN"])
      expect(() => parseRateLimit(bad), bad).toThrow(/rate limit must be.*got/);
  });
});
