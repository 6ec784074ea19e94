import { startWorkerd } from "../harness/workerd.ts";
import { browserSuite } from "./browser.ts";
import { randomToken } from "./kit.ts";

// In the Worker the owner signs in once by pasting the admin token into the sign-in page.
browserSuite("workerd", async () => {
  const admin = randomToken();
  const worker = await startWorkerd({ token: admin });
  return {
    url: worker.url,
    admin,
    stop: () => worker.stop(),
    async signIn(page) {
      await page.getByLabel("Sign-in code or admin token").fill(admin);
      await page.getByRole("button", { name: "Sign in" }).click();
    },
  };
});
