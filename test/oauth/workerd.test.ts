import { startWorkerd } from "../harness/workerd.ts";
import { randomToken } from "./kit.ts";
import { oauthSuite } from "./suite.ts";

// In the Worker the owner signs in with the admin token (INBOXD_ADMIN_TOKEN).
oauthSuite("workerd", async () => {
  const admin = randomToken();
  const worker = await startWorkerd({ token: admin });
  return { url: worker.url, admin, stop: () => worker.stop() };
});
