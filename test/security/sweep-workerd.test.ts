/**
 * The auth sweep (sweep.ts) against the Worker: workerd through Miniflare, on a loopback port, with a seeded
 * dataset. The Worker answers any Host and Origin by design (remote access is its normal mode), so only
 * `Sec-Fetch-Site: cross-site` and `Origin: null` are swept as cross-site here; its only tokens are the admin and
 * read secrets, so expired and revoked tokens are swept on the daemon only.
 */
import { describe, expect, it } from "vitest";
import { startWorkerd } from "../harness/workerd.ts";
import { authSweep, sweptOperations } from "./sweep.ts";

authSweep(
  {
    name: "workerd",
    loopbackOnly: false,
    mintsTokens: false,
    discoveryCrossOrigin: true,
    // Documentation addresses (RFC 5737); Miniflare passes a client's CF-Connecting-IP on (Cloudflare sets its own).
    from: (n) => ({ headers: { "cf-connecting-ip": `198.51.100.${n + 1}` } }),
    start: (options) => startWorkerd(options),
  },
  await sweptOperations(),
);

describe("auth sweep on workerd: the secrets", () => {
  // Found by this sweep's review: a rotated or removed secret must end the token it was.
  it("refuses a replaced or removed INBOXD_ADMIN_TOKEN / INBOXD_READ_TOKEN (401) after the restart that deploys the change", async () => {
    const [oldAdmin, newAdmin, oldRead] = ["old-admin-secret-123456", "new-admin-secret-456789", "old-read-secret-123456"];
    const worker = await startWorkerd({ tokens: [{ token: oldAdmin, scopes: ["read", "write"] }, { token: oldRead, scopes: ["read"] }] });
    try {
      const status = (token: string) => fetch(`${worker.url}/v1/accounts`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
      expect([await status(oldAdmin), await status(oldRead)]).toEqual([200, 200]);
      await worker.restart({ INBOXD_ADMIN_TOKEN: newAdmin, INBOXD_READ_TOKEN: undefined });
      expect([await status(newAdmin), await status(oldAdmin), await status(oldRead)]).toEqual([200, 401, 401]);
    } finally {
      await worker.stop();
    }
  });
});
