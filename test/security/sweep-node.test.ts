/**
 * The auth sweep (sweep.ts) against the real daemon: SQLite in a temp dir, HTTP on a loopback port, a seeded
 * dataset. Only here: expired and revoked tokens (minted in the daemon's own store, opened beside the running
 * server as `inboxd token create|revoke` would), and the loopback-only Host and Origin checks.
 */
import { databasePath } from "../../adapters/node/data-dir.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { createToken, revokeToken } from "../../src/services/tokens.ts";
import { startNode } from "../harness/node.ts";
import { authSweep, sweptOperations } from "./sweep.ts";

authSweep(
  {
    name: "node",
    loopbackOnly: true,
    mintsTokens: true,
    discoveryCrossOrigin: false,
    // Linux routes all of 127.0.0.0/8 to the loopback interface: each is a client address of its own.
    from: (n) => ({ localAddress: `127.0.1.${n + 1}` }),
    async start(options) {
      const daemon = await startNode(options);
      const { storage, close } = await openSqliteStorage(databasePath(daemon.dataDir));
      return {
        url: daemon.url,
        tokens: {
          create: async (o) => {
            const { token, id } = await createToken(storage, o);
            return { token, id };
          },
          revoke: (id) => revokeToken(storage, id),
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
