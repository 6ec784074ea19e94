/**
 * Per-token request budgets and per-address throttling of failed authentication (issue 12). The interface the app
 * is wired to; the budgets themselves follow.
 */
export interface RateLimitOptions {
  /** Requests per second a token may make on average. */
  perSecond?: number;
  /** Requests a token may make at once before the average applies. */
  burst?: number;
  /** Failed authentications allowed per client address per minute. */
  failedAuthPerMinute?: number;
}

export class RateLimiter {
  constructor(
    readonly options: RateLimitOptions = {},
    readonly now: () => number = Date.now,
  ) {}

  /** Spends one request of the token's budget; throws a 429 ApiError (retry-after, retry-after-ms) when it is empty. */
  spend(_tokenID: string): void {}

  /** Before authenticating: throws a 429 ApiError while the address is over its failed-authentication budget. */
  checkAddress(_address: string | undefined): void {}

  /** Records a failed authentication from the address. */
  failed(_address: string | undefined): void {}
}
