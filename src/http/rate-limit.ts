import { ApiError } from "../errors.ts";

/**
 * Per-token request budgets and per-address throttling of failed authentication (issue 12). Both are token buckets
 * kept in memory: the daemon has one process, the Worker one Durable Object per device, so one map sees every
 * request (an object that is evicted starts again with full buckets, which only errs on the generous side).
 */
export interface RateLimitOptions {
  /** Requests per second a token may make on average (default: DEFAULT_RATE_LIMIT.perSecond). */
  perSecond?: number;
  /** Requests a token may make at once before the average applies (default: DEFAULT_RATE_LIMIT.burst). */
  burst?: number;
  /** Failed authentications allowed per client address per minute (default: DEFAULT_RATE_LIMIT.failedAuthPerMinute). */
  failedAuthPerMinute?: number;
  /** Buckets kept at most per kind (tokens, addresses) before idle ones are dropped (default: DEFAULT_RATE_LIMIT.maxKeys). */
  maxKeys?: number;
}

/**
 * The defaults, sized for one person's clients, not for a public service:
 * - perSecond 100: a person's apps and agents make a few requests a second, a client starting up some dozens; an
 *   export paging through a million messages (50,000 pages of 20) takes about 8 minutes at this pace. It is also far
 *   below what one device serves (the daemon answers ~10,000 chat-list reads or ~1,300 sends a second on 2 CPUs, a
 *   Durable Object less), so one token's flood leaves room for the others. Load tests that measure capacity on one
 *   token (npm run bench, test suites) must raise or turn off the budget: `--rate-limit`, INBOXD_RATE_LIMIT.
 * - burst 400 (4 s of budget): what a client sends at once when it starts (pages of chats, then each chat's first
 *   page of messages) passes without a wait.
 * - failedAuthPerMinute 30 per address (per /64 for IPv6): a person who mistypes a token fails a few times, and a
 *   script with a revoked token still learns it from a plain 401; a client that keeps failing gets 429s, one attempt
 *   every 2 s.
 * - maxKeys 10,000: about 1 MB of buckets at most per kind.
 */
export const DEFAULT_RATE_LIMIT = { perSecond: 100, burst: 400, failedAuthPerMinute: 30, maxKeys: 10_000 } as const;

/** A budget given as one number (`--rate-limit N`, INBOXD_RATE_LIMIT) keeps the default burst-to-rate ratio. */
export const BURST_SECONDS = DEFAULT_RATE_LIMIT.burst / DEFAULT_RATE_LIMIT.perSecond;

/**
 * Reads `--rate-limit` / INBOXD_RATE_LIMIT: requests per second per token, `0` or `off` to turn the limits off,
 * undefined or empty for the defaults. Throws a RangeError naming the value otherwise.
 */
export function parseRateLimit(text: string | undefined): RateLimitOptions | false | undefined {
  const value = text?.trim().toLowerCase();
  if (!value) return undefined;
  if (value === "off" || value === "0") return false;
  const perSecond = Number(value);
  if (!Number.isFinite(perSecond) || perSecond <= 0)
    throw new RangeError(
      `rate limit must be requests per second (a positive number), 0 or off; got ${JSON.stringify(text)}`,
    );
  return { perSecond, burst: Math.max(1, Math.ceil(perSecond * BURST_SECONDS)) };
}

/**
 * The key an address is counted under: an IPv4 address as is, an IPv6 one by its /64, which is what one client (a
 * home line, a server) usually holds: counted address by address, one client would have 2^64 budgets.
 */
export function addressKey(address: string): string {
  if (!address.includes(":")) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]; // an IPv4 client of a dual-stack listener
  const [head, tail] = address.split("%")[0].split("::"); // "%eth0": a zone
  const groups = head ? head.split(":") : [];
  if (tail !== undefined) {
    const rest = tail ? tail.split(":") : [];
    const width = rest.length + (rest.at(-1)?.includes(".") ? 1 : 0); // a trailing IPv4 part fills two groups
    groups.push(...Array<string>(Math.max(0, 8 - groups.length - width)).fill("0"), ...rest);
  }
  return `${groups
    .slice(0, 4)
    .map((g) => (parseInt(g, 16) || 0).toString(16))
    .join(":")}::/64`;
}

/**
 * Loopback clients are not throttled for failed authentication. On the daemon every local app shares one loopback
 * address: one script retrying a revoked token would turn every other local app's mistake into a 429 (which the SDKs
 * retry) instead of a plain 401, or, where the address is checked before the token, lock them all out. A guesser on the
 * machine itself gains nothing from speed against 256-bit tokens. Remote clients (the Worker's, those of a daemon that
 * serves --allow-host names) have addresses of their own; a reverse proxy on the same machine hides them behind
 * loopback, so throttle there.
 */
function isLoopback(key: string): boolean {
  return key.startsWith("127.") || key === "0:0:0:0::/64"; // addressKey's IPv4 and ::1's /64 (which holds no other usable address)
}

/** Tokens available at `at` (ms); below 0 after more failures were charged than the bucket held. */
interface Bucket {
  level: number;
  at: number;
}

/**
 * Token buckets by key. A full bucket is the same as no bucket, so the map holds only keys that spent recently; when
 * it reaches `maxKeys` the full ones are dropped, and if that does not free a quarter of it, the oldest entries go
 * too (they then start again full: a budget given back, never one taken away from someone else).
 */
class Buckets {
  private readonly map = new Map<string, Bucket>();
  private readonly perMs: number;

  constructor(
    perSecond: number,
    readonly capacity: number,
    private readonly maxKeys: number,
  ) {
    this.perMs = perSecond / 1000;
  }

  get size() {
    return this.map.size;
  }

  /** Takes one token; answers 0, or (taking nothing) the ms until one is there. */
  take(key: string, now: number): number {
    const bucket = this.map.get(key);
    if (!bucket) {
      this.insert(key, this.capacity - 1, now);
      return 0;
    }
    const level = this.refill(bucket, now);
    if (level < 1) return this.wait(level);
    bucket.level = level - 1;
    bucket.at = now;
    return 0;
  }

  /** Takes one token even when there is none, so that every charge counts (the wait grows with them). */
  charge(key: string, now: number): void {
    const bucket = this.map.get(key);
    if (!bucket) {
      this.insert(key, this.capacity - 1, now);
      return;
    }
    bucket.level = this.refill(bucket, now) - 1;
    bucket.at = now;
  }

  /** The ms until the key's bucket holds a token; 0 when it holds one now. */
  waitFor(key: string, now: number): number {
    const bucket = this.map.get(key);
    if (!bucket) return 0;
    const level = this.refill(bucket, now);
    return level < 1 ? this.wait(level) : 0;
  }

  private refill(bucket: Bucket, now: number): number {
    // max(0, …): a clock set back must not drain anyone's bucket.
    return Math.min(this.capacity, bucket.level + Math.max(0, now - bucket.at) * this.perMs);
  }

  private wait(level: number): number {
    return Math.max(1, Math.ceil((1 - level) / this.perMs));
  }

  private insert(key: string, level: number, now: number) {
    if (this.map.size >= this.maxKeys) this.sweep(now);
    this.map.set(key, { level, at: now });
  }

  private sweep(now: number) {
    for (const [key, bucket] of this.map) if (this.refill(bucket, now) >= this.capacity) this.map.delete(key);
    const keep = Math.floor(this.maxKeys * 0.75);
    // Map iteration is insertion order: the keys first seen longest ago go first.
    for (const key of this.map.keys()) {
      if (this.map.size <= keep) break;
      this.map.delete(key);
    }
  }
}

function rateLimited(message: string, waitMs: number): ApiError {
  return new ApiError(429, "RATE_LIMITED", message, undefined, {
    "retry-after": String(Math.max(1, Math.ceil(waitMs / 1000))),
    "retry-after-ms": String(waitMs),
  });
}

export class RateLimiter {
  private readonly tokens: Buckets;
  private readonly addresses: Buckets;
  private readonly budget: string;

  constructor(
    readonly options: RateLimitOptions = {},
    readonly now: () => number = Date.now,
  ) {
    const perSecond = options.perSecond ?? DEFAULT_RATE_LIMIT.perSecond;
    const burst = options.burst ?? DEFAULT_RATE_LIMIT.burst;
    const failed = options.failedAuthPerMinute ?? DEFAULT_RATE_LIMIT.failedAuthPerMinute;
    const maxKeys = options.maxKeys ?? DEFAULT_RATE_LIMIT.maxKeys;
    if (!(perSecond > 0 && Number.isFinite(perSecond)))
      throw new RangeError(`rate limit: perSecond must be a positive number, got ${perSecond}`);
    if (!(burst >= 1 && Number.isFinite(burst)))
      throw new RangeError(`rate limit: burst must be at least 1, got ${burst}`);
    if (!(failed >= 1 && Number.isFinite(failed)))
      throw new RangeError(`rate limit: failedAuthPerMinute must be at least 1, got ${failed}`);
    if (!(maxKeys >= 1 && Number.isInteger(maxKeys)))
      throw new RangeError(`rate limit: maxKeys must be a positive integer, got ${maxKeys}`);
    this.tokens = new Buckets(perSecond, burst, maxKeys);
    this.addresses = new Buckets(failed / 60, failed, maxKeys);
    this.budget = `${perSecond} ${perSecond === 1 ? "request" : "requests"} per second with bursts of up to ${burst}`;
  }

  /** Buckets held (tokens, addresses), for tests of the memory bound. */
  get sizes() {
    return { tokens: this.tokens.size, addresses: this.addresses.size };
  }

  /**
   * Spends one request of the key's budget (a token's ID; the relay's client addresses); throws a 429 ApiError
   * (retry-after, retry-after-ms) when it is empty. `who` names the key in the message.
   */
  spend(key: string, who = "this token"): void {
    const wait = this.tokens.take(key, this.now());
    if (wait) throw rateLimited(`rate limit exceeded: ${who} may make ${this.budget}; retry in ${wait} ms`, wait);
  }

  /** Throws a 429 ApiError (retry-after, retry-after-ms) while the address is over its failed-authentication budget. */
  checkAddress(address: string | undefined): void {
    const key = throttled(address);
    if (key === undefined) return;
    const wait = this.addresses.waitFor(key, this.now());
    if (wait)
      throw rateLimited(
        `too many failed authentications from this address: at most ${this.addresses.capacity} a minute; retry in ${Math.ceil(wait / 1000)} s`,
        wait,
      );
  }

  /** Records a failed authentication from the address (undefined: the runtime cannot tell addresses apart; loopback: see isLoopback). */
  failed(address: string | undefined): void {
    const key = throttled(address);
    if (key !== undefined) this.addresses.charge(key, this.now());
  }
}

/** The key failed authentications from `address` count under; undefined when they are not counted. */
function throttled(address: string | undefined): string | undefined {
  if (address === undefined) return undefined;
  const key = addressKey(address);
  return isLoopback(key) ? undefined : key;
}
