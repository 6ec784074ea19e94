import { startNode } from "../harness/node.ts";
import { browserSuite } from "./browser.ts";
import { randomToken } from "./kit.ts";
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";
import { databasePath } from "../../adapters/node/data-dir.ts";
import { OAuthStore, SIGN_IN_TTL_MS } from "../../src/oauth/index.ts";

// On the daemon the owner signs in with the one-time link `inboxd open` prints (made here the way it makes it).
browserSuite(
  "the Node daemon",
  async () => {
    const admin = randomToken();
    const node = await startNode({ tokens: [{ token: admin, scopes: ["read", "write"] }] });
    return {
      url: node.url,
      admin,
      stop: () => node.stop(),
      async signIn(page, next) {
        const { storage, close } = await openSqliteStorage(databasePath(node.dataDir));
        const code = await new OAuthStore(storage, Date.now).createSignIn(SIGN_IN_TTL_MS);
        await close();
        await page.goto(`${node.url}/oauth/login?${new URLSearchParams({ code, next })}`);
      },
    };
  },
  { screenshot: true },
);
