/**
 * The auth sweep (sweep.ts) against the Worker: workerd through Miniflare, on a loopback port, with a seeded
 * dataset. The Worker answers any Host and Origin by design (remote access is its normal mode), so only
 * `Sec-Fetch-Site: cross-site` and `Origin: null` are swept as cross-site here. Its tokens besides the admin and
 * read secrets are the ones it issues through OAuth: the sweep's revoked and expired tokens are such tokens, issued
 * to apps the owner approves, revoked as the web inbox's Settings do (DELETE /v1/tokens/{id}), and expiring after
 * INBOXD_TOKEN_TTL, which the sweep shortens.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { startWorkerd } from "../harness/workerd.ts";
import { authorizeApp, authSweep, EXPIRING_TOKEN_SECONDS, sweptOperations, type Minted } from "./sweep.ts";

/** A token's ID as GET /v1/tokens lists it: its SHA-256 in hex (worked out here, not taken from the code under test). */
const idOf = (token: string) => createHash("sha256").update(token).digest("hex");

authSweep(
  {
    name: "workerd",
    loopbackOnly: false,
    discoveryCrossOrigin: true,
    // Documentation addresses (RFC 5737); Miniflare passes a client's CF-Connecting-IP on (Cloudflare sets its own).
    from: (n) => ({ headers: { "cf-connecting-ip": `198.51.100.${n + 1}` } }),
    async start(options) {
      const worker = await startWorkerd(options);
      const admin = options.tokens.find((t) => t.scopes.includes("write"))!.token;
      const asAdmin = (path: string, method = "GET") =>
        fetch(`${worker.url}${path}`, { method, headers: { authorization: `Bearer ${admin}` } });
      const mint = async (name: string): Promise<Minted> => {
        const { token } = await authorizeApp(worker.url, admin, name);
        return { token, id: idOf(token) };
      };
      try {
        // Issued under the default lifetime (an hour), so that only its revocation can end it during the sweep.
        const lasting = await mint("sweep-revoked");
        // Then the lifetime is shortened as a redeploy with INBOXD_TOKEN_TTL would, before the sweep's setup (a
        // restart ends login sessions): tokens issued from now on expire within the sweep.
        await worker.restart({ INBOXD_TOKEN_TTL: String(EXPIRING_TOKEN_SECONDS) });
        return {
          url: worker.url,
          stop: () => worker.stop(),
          tokens: {
            lasting,
            async expiring(name) {
              const minted = await mint(name);
              // When it expires, as the Worker says (its clock is this machine's).
              const listed = (
                (await (await asAdmin("/v1/tokens")).json()) as { items: { id: string; expiresAt?: string }[] }
              ).items.find((t) => t.id === minted.id);
              if (!listed?.expiresAt)
                throw new Error(
                  `setup: the token issued to ${name} is not listed with an expiry: ${JSON.stringify(listed)}`,
                );
              return { ...minted, expiresAt: Date.parse(listed.expiresAt) };
            },
            async revoke(id) {
              const res = await asAdmin(`/v1/tokens/${id}`, "DELETE");
              if (res.status !== 200) throw new Error(`revoking token ${id} → ${res.status}: ${await res.text()}`);
            },
          },
        };
      } catch (error) {
        await worker.stop();
        throw error;
      }
    },
  },
  await sweptOperations(),
);

describe("auth sweep on workerd: the secrets", () => {
  // Found by this sweep's review: a rotated or removed secret must end the token it was.
  it("refuses a replaced or removed INBOXD_ADMIN_TOKEN / INBOXD_READ_TOKEN (401) after the restart that deploys the change", async () => {
    const [oldAdmin, newAdmin, oldRead] = [
      "old-admin-secret-123456",
      "new-admin-secret-456789",
      "old-read-secret-123456",
    ];
    const worker = await startWorkerd({
      tokens: [
        { token: oldAdmin, scopes: ["read", "write"] },
        { token: oldRead, scopes: ["read"] },
      ],
    });
    try {
      const status = (token: string) =>
        fetch(`${worker.url}/v1/accounts`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
      expect([await status(oldAdmin), await status(oldRead)]).toEqual([200, 200]);
      await worker.restart({ INBOXD_ADMIN_TOKEN: newAdmin, INBOXD_READ_TOKEN: undefined });
      expect([await status(newAdmin), await status(oldAdmin), await status(oldRead)]).toEqual([200, 401, 401]);
    } finally {
      await worker.stop();
    }
  });
});
