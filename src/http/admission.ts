import type { TokenVerifier } from "../services/tokens.ts";
import { authenticate, type Principal } from "./guard.ts";
import type { RateLimiter } from "./rate-limit.ts";

/**
 * Who may in: a request's token checked against the token store, then the rate limits. A valid token always gets in
 * (every local client shares 127.0.0.1, so refusing by address first would let anyone lock the owner out); failed
 * attempts with a token count per client address, and past the budget they are answered 429 instead of 401.
 * Requests without a token do not count: clients start the OAuth flow with one.
 */
export class Admission {
  constructor(
    private readonly tokens: TokenVerifier,
    private readonly limiter: RateLimiter | undefined,
    private readonly clientAddress?: (request: Request) => string | undefined,
  ) {}

  /** The principal `request` authenticates as; `from` is the request the client sent (its address, for throttling). */
  async admit(request: Request, from: Request = request): Promise<Principal> {
    let principal: Principal;
    try {
      principal = await authenticate(request, this.tokens);
    } catch (error) {
      if (this.limiter && request.headers.has("authorization")) {
        const address = this.clientAddress?.(from);
        this.limiter.checkAddress(address);
        this.limiter.failed(address);
      }
      throw error;
    }
    this.limiter?.spend(principal.id);
    return principal;
  }
}
