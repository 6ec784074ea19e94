/**
 * The auth sweep (sweep.ts) against the Worker: workerd through Miniflare, on a loopback port, with a seeded
 * dataset. The Worker answers any Host and Origin by design (remote access is its normal mode), so only
 * `Sec-Fetch-Site: cross-site` and `Origin: null` are swept as cross-site here; its only tokens are the admin and
 * read secrets, so expired and revoked tokens are swept on the daemon only.
 */
import { describe, it } from "vitest";
import { startWorkerd } from "../harness/workerd.ts";
import { authSweep, sweptOperations } from "./sweep.ts";

authSweep(
  {
    name: "workerd",
    loopbackOnly: false,
    mintsTokens: false,
    // Documentation addresses (RFC 5737); Miniflare passes a client's CF-Connecting-IP on (Cloudflare sets its own).
    from: (n) => ({ headers: { "cf-connecting-ip": `198.51.100.${n + 1}` } }),
    start: (options) => startWorkerd(options),
  },
  await sweptOperations(),
);

describe("auth sweep on workerd: the secrets", () => {
  // Found by this sweep's review (issue 12): boot() only adds a secret's hash (ensureToken), so a rotated or removed
  // secret stays valid. startWorkerd cannot restart with other bindings yet, so this cannot be a test here today.
  it.todo("a replaced or removed INBOXD_ADMIN_TOKEN / INBOXD_READ_TOKEN is refused (401) after the restart that deploys the change");
});
