import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { databasePath } from "../../adapters/node/data-dir.ts";
import { startServer, type RunningServer } from "../../adapters/node/serve.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { ensureToken } from "../../src/services/tokens.ts";
import { matrixSuite } from "./suite.ts";

matrixSuite({
  name: "the Node daemon",
  async start(token, { firstBackfill }) {
    const dataDir = mkdtempSync(join(tmpdir(), "inboxd-matrix-"));
    const dbPath = databasePath(dataDir);
    const { storage, close } = await openSqliteStorage(dbPath);
    await ensureToken(storage, token, { name: "rw", scopes: ["read", "write"] });
    await close();
    const listen = (port: number) =>
      startServer({ port, host: "127.0.0.1", dbPath, allowHosts: [], verbose: false, print: () => undefined, tuning: { matrixFirstBackfill: firstBackfill } });
    let server: RunningServer = await listen(0);
    const port = Number(new URL(server.url).port);
    return {
      url: server.url,
      token,
      async restart(whileDown) {
        await server.close();
        await whileDown?.();
        server = await listen(port);
      },
      async stop() {
        await server.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  },
});
