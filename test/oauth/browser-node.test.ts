import { startNode } from "../harness/node.ts";
import { ROOT } from "../harness/process.ts";
import { browserSuite } from "./browser.ts";
import { ownerSignInLink, randomToken } from "./kit.ts";

// On the daemon the owner signs in with the one-time link `inboxd open` prints (run here as a person would, beside
// the running daemon, on its data directory).
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
        await page.goto(`${await ownerSignInLink(node, ROOT)}&${new URLSearchParams({ next })}`);
      },
    };
  },
  { screenshot: true },
);
