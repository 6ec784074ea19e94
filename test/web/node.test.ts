import { startNode } from "../harness/node.ts";
import { ROOT } from "../harness/process.ts";
import { ownerSignInLink } from "../oauth/kit.ts";
import { WEB_SEED, webSuite } from "./suite.ts";

// On the daemon the owner signs in with the one-time link `inboxd open` prints (run beside the daemon, on its data
// directory, as a person would). The QR login waits for the test to confirm it (it would complete on its own).
webSuite(
  "the Node daemon",
  async ({ admin, victim }) => {
    const node = await startNode({
      tokens: [
        { token: admin, scopes: ["read", "write"] },
        { token: victim, scopes: ["read"] },
      ],
      seed: WEB_SEED,
      tuning: { sandboxQrDelayMs: 10 * 60_000 },
    });
    return {
      url: node.url,
      restart: () => node.restart(),
      stop: () => node.stop(),
      signIn: async (page, next) =>
        void (await page.goto(`${await ownerSignInLink(node, ROOT)}&${new URLSearchParams({ next })}`)),
    };
  },
  { screenshots: true },
);
