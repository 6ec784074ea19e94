/**
 * The auth sweep (sweep.ts) against the real daemon: SQLite in a temp dir, HTTP on a loopback port, a seeded
 * dataset. Expired and revoked tokens are minted in the daemon's own store, opened beside the running server as
 * `inboxd token create|revoke` would. Only here: the loopback-only Host and Origin checks.
 */
import { databasePath } from "../../adapters/node/data-dir.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { createToken, revokeToken } from "../../src/services/tokens.ts";
import { startNode } from "../harness/node.ts";
import { authSweep, EXPIRING_TOKEN_SECONDS, sweptOperations } from "./sweep.ts";

authSweep(
  {
    name: "node",
    loopbackOnly: true,
    discoveryCrossOrigin: false,
    // Linux routes all of 127.0.0.0/8 to the loopback interface: each is a client address of its own.
    from: (n) => ({ localAddress: `127.0.1.${n + 1}` }),
    async start(options) {
      const daemon = await startNode(options);
      const { storage, close } = await openSqliteStorage(databasePath(daemon.dataDir));
      const { token, id } = await createToken(storage, { name: "sweep-revoked", scopes: ["read", "write"] });
      return {
        url: daemon.url,
        tokens: {
          lasting: { token, id },
          async expiring(name) {
            const expiresAt = Date.now() + EXPIRING_TOKEN_SECONDS * 1000;
            const { token, id } = await createToken(storage, { name, scopes: ["read", "write"], expiresAt });
            return { token, id, expiresAt };
          },
          async revoke(id) {
            const revoked = await revokeToken(storage, id);
            if (revoked !== 1) throw new Error(`revoking token ${id} revoked ${revoked} tokens`);
          },
        },
        async stop() {
          await close();
          await daemon.stop();
        },
      };
    },
  },
  await sweptOperations(),
);
