import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { startNode } from "../harness/node.ts";
import { ROOT } from "../harness/process.ts";
import { browserSuite } from "./browser.ts";
import { randomToken } from "./kit.ts";

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
        const port = new URL(node.url).port;
        const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "adapters/node/cli.ts", "open", "--data-dir", node.dataDir, "--port", port, "--print"], { cwd: ROOT });
        const link = stdout.trim().split("\n").pop()!;
        if (!link.startsWith(`${node.url}/oauth/login?code=`)) throw new Error(`inboxd open printed ${stdout}`);
        await page.goto(`${link}&${new URLSearchParams({ next })}`);
      },
    };
  },
  { screenshot: true },
);
