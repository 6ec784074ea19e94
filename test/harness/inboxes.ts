import type { Start, StartOptions } from "../kit/common.ts";
import { approvedApp, Browser } from "../oauth/kit.ts";
import { startWorkerd } from "./workerd.ts";

/** The operator's token of the deployments started here. */
export const OPERATOR_TOKEN = "operator-secret-of-the-inbox-harness";

/**
 * Makes an inbox in a deployment of many (INBOXD_TENANCY=multi) as an operator and a person do: the admin API
 * creates it (seeded), the person opens the sign-in link, and apps they approve get the tokens — one per token the
 * caller asked for, with its scopes. Answers the tokens it got for the ones asked for.
 */
export async function makeInbox(
  url: string,
  id: string,
  options: Pick<StartOptions, "seed" | "tokens">,
): Promise<Record<string, string>> {
  const res = await fetch(`${url}/admin/v1/inboxes`, {
    method: "POST",
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ id, seed: options.seed }),
  });
  if (res.status !== 201) throw new Error(`creating inbox ${id} → ${res.status}: ${await res.text()}`);
  const { signIn } = (await res.json()) as { signIn: { url: string } };
  const browser = new Browser(url);
  const landed = await browser.request(signIn.url);
  if (landed.status !== 303) throw new Error(`signing in to inbox ${id} → ${landed.status}`);
  const tokens: Record<string, string> = {};
  for (const asked of options.tokens)
    tokens[asked.token] = (
      await approvedApp(browser, `scenario ${asked.scopes.join("+")}`, asked.scopes.join(" "))
    ).token;
  return tokens;
}

/**
 * A `Start` whose servers are inboxes of one shared deployment (`deployment`), named `<name>-1`, `<name>-2`…; stopping
 * one deletes the inbox. A start that asks for runtime tuning (login-session lifetimes, the sandbox's QR delay:
 * deployment-wide vars) gets a deployment of its own, with one inbox.
 */
export function inboxStart(deployment: () => { url: string }, name: string): Start {
  let made = 0;
  return async (options) => {
    const tuning = (options as { tuning?: Parameters<typeof startWorkerd>[0]["tuning"] }).tuning;
    const own = tuning ? await startWorkerd({ operatorToken: OPERATOR_TOKEN, tuning }) : undefined;
    const server = own ?? deployment();
    const id = `${name}-${++made}`;
    try {
      const tokens = await makeInbox(server.url, id, options);
      return {
        url: server.url,
        tokens,
        async stop() {
          if (own) return own.stop();
          const res = await fetch(`${server.url}/admin/v1/inboxes/${id}`, {
            method: "DELETE",
            headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
          });
          if (res.status !== 200) throw new Error(`deleting inbox ${id} → ${res.status}: ${await res.text()}`);
        },
      };
    } catch (error) {
      await own?.stop();
      throw error;
    }
  };
}
