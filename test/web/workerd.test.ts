import { startWorkerd } from "../harness/workerd.ts";
import { WEB_SEED, webSuite } from "./suite.ts";

// In the Worker the owner signs in by pasting the admin token into the sign-in page.
webSuite("workerd", async ({ admin, victim }) => {
  const worker = await startWorkerd({
    tokens: [
      { token: admin, scopes: ["read", "write"] },
      { token: victim, scopes: ["read"] },
    ],
    seed: WEB_SEED,
    tuning: { sandboxQrDelayMs: 10 * 60_000 },
  });
  return {
    url: worker.url,
    restart: () => worker.restart(),
    stop: () => worker.stop(),
    async signIn(page) {
      await page.getByLabel("Sign-in code or admin token").fill(admin);
      await page.getByRole("button", { name: "Sign in" }).click();
    },
  };
});
