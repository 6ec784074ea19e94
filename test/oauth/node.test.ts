import { startNode } from "../harness/node.ts";
import { randomToken } from "./kit.ts";
import { oauthSuite } from "./suite.ts";

oauthSuite("the Node daemon", async () => {
  const admin = randomToken();
  const node = await startNode({ tokens: [{ token: admin, scopes: ["read", "write"] }] });
  return { url: node.url, admin, stop: () => node.stop() };
});
