/**
 * The web inbox in a deployment of many inboxes (INBOXD_TENANCY=multi), in a real browser (Debian's chromium through
 * playwright-core): an operator's sign-in link takes the person to the consent page for their inbox, then to the web
 * inbox, which names the inbox in its rail and title. The same browser given another inbox's link ends the grant it
 * held and follows the new inbox, instead of showing the old one under the new sign-in.
 *
 * UPDATE_SCREENSHOTS=1 retakes docs/web-inbox-many.png (otherwise it goes to a temp directory).
 */
import BeeperDesktop from "@beeper/desktop-api";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeInbox, OPERATOR_TOKEN } from "../harness/inboxes.ts";
import { startWorkerd, type WorkerdServer } from "../harness/workerd.ts";
import { launchChromium } from "../kit/chromium.ts";
import { CHROMIUM_INSTALL_MS, ensureChromium } from "../oauth/browser.ts";

const DOCS = fileURLToPath(new URL("../../docs/", import.meta.url));
const shot = (name: string) =>
  process.env.UPDATE_SCREENSHOTS === "1" ? join(DOCS, name) : join(tmpdir(), `inboxd-${process.pid}-${name}`);

let worker: WorkerdServer;
let browser: Browser;
let page: Page;
/** Each inbox's own read+write token, for what the API says it holds. */
const tokens: Record<string, string> = {};
const problems: string[] = [];

beforeAll(async () => {
  await ensureChromium();
  worker = await startWorkerd({ operatorToken: OPERATOR_TOKEN });
  for (const [id, seed] of [
    ["alice", 1],
    ["bob", 2],
  ] as const) {
    const made = await makeInbox(worker.url, id, {
      seed: { chats: 8, messages: 60, accounts: 1, seed },
      tokens: [{ token: id, scopes: ["read", "write"] }],
    });
    tokens[id] = made[id];
  }
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.setDefaultTimeout(12_000);
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
}, CHROMIUM_INSTALL_MS);

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
});

/** A fresh one-time sign-in link for the inbox, as the operator makes one. */
async function signInLink(id: string): Promise<string> {
  const res = await fetch(`${worker.url}/admin/v1/inboxes/${id}/sign-in-links`, {
    method: "POST",
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
  });
  if (res.status !== 201) throw new Error(`sign-in link for ${id} → ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { url: string }).url;
}

/** The titles of the first chat rows, and the API's newest chats of the inbox, which they must be. */
async function shownAndHeld(id: string) {
  const rows = page.locator('[data-testid="chat-list"] [role="option"] .title');
  await rows.first().waitFor();
  const sdk = new BeeperDesktop({ baseURL: worker.url, accessToken: tokens[id], maxRetries: 0, logLevel: "off" });
  const held = await sdk.chats.search({ inbox: "primary", limit: 5, includeMuted: true });
  return { shown: (await rows.allTextContents()).slice(0, 5), held: held.items.map((c) => c.title) };
}

/** Follows a sign-in link to the consent page, which must name the inbox, and approves the web inbox there. */
async function signInAndApprove(id: string) {
  await page.goto(await signInLink(id));
  // The page goes on to the consent page by itself: the person came to sign in.
  await page.waitForURL(/\/oauth\/authorize\?/);
  await expect
    .poll(() => page.locator("p", { hasText: "inboxd web inbox" }).textContent())
    .toContain(`wants to use the inbox ${id}`);
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByRole("note", { name: `Inbox ${id}` }).waitFor();
}

describe("the web inbox where a deployment holds many inboxes", () => {
  it("a sign-in link leads to the consent page for its inbox, then to the web inbox, which names the inbox", async () => {
    await signInAndApprove("alice");
    expect(page.url()).toBe(`${worker.url}/`); // the landing's parameter, the code and the state left the address
    await expect.poll(() => page.title()).toBe("alice · inboxd");
    const { shown, held } = await shownAndHeld("alice");
    expect(shown).toEqual(held);
    await page.screenshot({ path: shot("web-inbox-many.png") });
  });

  it("another inbox's link in the same browser ends the page's grant for the first and shows the second", async () => {
    const before = await page.evaluate(
      () => JSON.parse(localStorage.getItem("inboxd:auth")!) as { accessToken: string },
    );
    expect(before.accessToken).toMatch(/^inbx_alice\./);
    await signInAndApprove("bob");
    await expect.poll(() => page.title()).toBe("bob · inboxd");
    const { shown, held } = await shownAndHeld("bob");
    expect(shown).toEqual(held);
    expect(shown).not.toEqual((await shownAndHeld("alice")).held);
    // The grant the page held for alice's inbox was revoked, not left behind.
    const introspected = await fetch(`${worker.url}/oauth/introspect`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: before.accessToken }),
    });
    expect(await introspected.json()).toMatchObject({ active: false });
    // And alice's own token still works: only the page's grant went.
    const alice = new BeeperDesktop({ baseURL: worker.url, accessToken: tokens.alice, maxRetries: 0, logLevel: "off" });
    expect((await alice.accounts.list()).length).toBeGreaterThan(0);
  });

  it("an address that claims a sign-in (anyone can write one) changes nothing while the page holds that inbox's grant", async () => {
    const held = () => page.evaluate(() => localStorage.getItem("inboxd:auth"));
    const before = await held();
    for (const claim of ["bob", "Not_An_Inbox"]) {
      await page.goto(`${worker.url}/?signed-in=${claim}`);
      await page.getByRole("note", { name: "Inbox bob" }).waitFor();
      expect(page.url()).toBe(`${worker.url}/`);
      expect(await held()).toBe(before);
    }
    // Another inbox's name only leads to the consent page, where the person may say no: the grant is kept then.
    await page.goto(`${worker.url}/?signed-in=alice`);
    await page.waitForURL(/\/oauth\/authorize\?/);
    await page.getByRole("button", { name: "Deny" }).click();
    await page.getByText("Access was denied on the consent page.").waitFor();
    expect(await held()).toBe(before);
  });

  it("signing out ends the grant and gives the tab its plain title back", async () => {
    await page.goto(`${worker.url}/`);
    await page.getByRole("note", { name: "Inbox bob" }).waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    await expect.poll(() => page.title()).toBe("inboxd");
  });

  it("raised no page errors", () => {
    expect(problems).toEqual([]);
  });
});
