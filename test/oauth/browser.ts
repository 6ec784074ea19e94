/**
 * OAuth as real clients do it: a person in a real browser (Debian's chromium driven by playwright-core) signs in
 * and approves; an app waits for the code on a loopback redirect server. The clients are the official SDK (with
 * the tokens it was given) and an MCP client from @modelcontextprotocol/sdk whose OAuth provider starts from a bare
 * 401 on /v0/mcp. The consent page is screenshotted (docs/oauth-consent.png with UPDATE_SCREENSHOTS=1).
 */
import BeeperDesktop from "@beeper/desktop-api";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { Browser as Chromium, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aptInstall } from "../harness/server-process.ts";
import { CHROMIUM, launchChromium } from "../kit/chromium.ts";
import { Browser, exchange, MemoryProvider, pkce, register, type Server } from "./kit.ts";

export { CHROMIUM };

/**
 * Debian's chromium, installed with apt when it is missing and the tests run as root (as the Prosody and Synapse
 * harnesses install their servers); otherwise the error names the one command to run.
 */
/** A beforeAll that may install chromium waits this long (a fresh machine downloads ~100 MB of packages). */
export const CHROMIUM_INSTALL_MS = 600_000;

export async function ensureChromium(): Promise<void> {
  if (existsSync(CHROMIUM)) return;
  const hint = `these tests drive Debian's chromium at ${CHROMIUM}: run \`sudo apt-get install -y chromium\``;
  await aptInstall(["chromium"], {
    lock: "inboxd-chromium-install.lock",
    unless: `test -x ${CHROMIUM}`,
    notRoot: `${hint} (not root, so the tests cannot install it)`,
    failed: `installing chromium failed; ${hint}`,
  });
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get reported success but ${CHROMIUM} is still missing; ${hint}`);
}
const DOCS = fileURLToPath(new URL("../../docs/", import.meta.url));

/** A loopback server that receives the redirect back to the app and hands over its query. */
async function redirectReceiver() {
  let resolve!: (query: URLSearchParams) => void;
  const next = () => new Promise<URLSearchParams>((r) => (resolve = r));
  let waiting = next();
  const server: HttpServer = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") return void res.writeHead(404).end(); // the browser's favicon request
    res.writeHead(200, { "content-type": "text/plain" }).end("You can close this window.");
    resolve(url.searchParams);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  return {
    url,
    /** The next redirect's query. */
    async take() {
      const got = await waiting;
      waiting = next();
      return got;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The person: signs in the way this runtime offers (`signIn` opens the one-time link, or pastes the admin token). */
async function approveInBrowser(
  page: Page,
  authorizeURL: string,
  signIn: (page: Page, next: string) => Promise<void>,
  screenshot?: string,
) {
  await page.goto(authorizeURL);
  if (await page.getByRole("heading", { name: "Sign in to inboxd" }).isVisible())
    await signIn(page, new URL(authorizeURL).pathname + new URL(authorizeURL).search);
  await page.getByRole("button", { name: "Approve" }).waitFor();
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  await page.getByRole("button", { name: "Approve" }).click();
}

export function browserSuite(
  name: string,
  start: () => Promise<Server & { signIn(page: Page, next: string): Promise<void> }>,
  options: { screenshot?: boolean } = {},
) {
  describe(`OAuth in a real browser on ${name}`, () => {
    let server: Awaited<ReturnType<typeof start>>;
    let browser: Chromium;
    let receiver: Awaited<ReturnType<typeof redirectReceiver>>;

    beforeAll(async () => {
      await ensureChromium();
      server = await start();
      receiver = await redirectReceiver();
      browser = await launchChromium();
    }, CHROMIUM_INSTALL_MS);
    afterAll(async () => {
      await browser?.close();
      await receiver?.close();
      await server?.stop();
    });

    it("registers an app, the owner signs in and approves, the code reaches the app's loopback server, and the SDK uses the token", async () => {
      const app = new Browser(server.url);
      const client = await register(app, [receiver.url], "Inbox Helper");
      const { verifier, challenge } = await pkce();
      const authorize = `${server.url}/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: receiver.url, code_challenge: challenge, code_challenge_method: "S256", scope: "read write", state: "browser-state" })}`;
      const page = await (await browser.newContext()).newPage();
      // docs/oauth.md shows docs/oauth-consent.png; UPDATE_SCREENSHOTS=1 retakes it (otherwise it goes to a temp file).
      const shot =
        options.screenshot && process.env.UPDATE_SCREENSHOTS === "1"
          ? `${DOCS}oauth-consent.png`
          : join(tmpdir(), `inboxd-oauth-consent-${process.pid}.png`);
      mkdirSync(dirname(shot), { recursive: true });
      await approveInBrowser(page, authorize, server.signIn, shot);
      expect(statSync(shot).size).toBeGreaterThan(5_000);
      const back = await receiver.take();
      expect(back.get("state")).toBe("browser-state");
      const token = await exchange(app, {
        grant_type: "authorization_code",
        code: back.get("code")!,
        code_verifier: verifier,
        client_id: client.client_id,
        redirect_uri: receiver.url,
      });
      expect(token.status).toBe(200);
      const { access_token } = token.json as { access_token: string };
      const sdk = new BeeperDesktop({ baseURL: server.url, accessToken: access_token, maxRetries: 0, logLevel: "off" });
      expect(Array.isArray(await sdk.accounts.list())).toBe(true);
      const info = await (
        await fetch(`${server.url}/v1/info`, { headers: { authorization: `Bearer ${access_token}` } })
      ).json();
      expect(info.endpoints.oauth.token_endpoint).toBe(`${server.url}/oauth/token`);
      await page.context().close();
    });

    it("an MCP client starts from a bare 401 on /v0/mcp, and after the owner approves it lists the tools", async () => {
      const provider = new MemoryProvider(receiver.url);
      const first = new StreamableHTTPClientTransport(new URL(`${server.url}/v0/mcp`), { authProvider: provider });
      await expect(new Client({ name: "oauth-test", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
      expect(provider.authorizationURL, "the client found the authorization endpoint from the 401").toBeDefined();
      const page = await (await browser.newContext()).newPage();
      await approveInBrowser(page, provider.authorizationURL!.toString(), server.signIn);
      const back = await receiver.take();
      expect(back.get("error"), back.get("error_description") ?? "").toBeNull();
      await first.finishAuth(back.get("code")!);
      expect(provider.tokens()?.access_token).toBeTruthy();
      const mcp = new Client({ name: "oauth-test", version: "1.0.0" });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/v0/mcp`), { authProvider: provider }));
      const tools = await mcp.listTools();
      expect(tools.tools.map((t) => t.name)).toContain("search_chats");
      await mcp.close();
      await page.context().close();
    });

    it("passes the official conformance suite's authorization-server scenarios (metadata with CIMD, authorization-code grant with iss)", async () => {
      // The suite prints the authorization URL for a person to open and waits on its own loopback callback: the
      // person here is chromium, approving on the consent page as in the tests above.
      const port = await freePort();
      const client = await register(new Browser(server.url), [`http://127.0.0.1:${port}/callback`], "Conformance");
      const out = join(tmpdir(), `inboxd-as-conformance-${process.pid}-${port}`);
      const suite = spawn(
        join(ROOT, ".ci/with-node"),
        [
          "22",
          "node",
          CONFORMANCE,
          "authorization",
          "--url",
          server.url,
          "--client-id",
          client.client_id,
          "--resource",
          `${server.url}/v0/mcp`,
          "-p",
          String(port),
          "-o",
          out,
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let output = "";
      const authorizeURL = new Promise<string>((resolve, reject) => {
        const seen = (chunk: Buffer) => {
          output += chunk.toString();
          const url = output.split("\n").find((line) => line.startsWith(`${server.url}/oauth/authorize?`));
          if (url) resolve(url.trim());
        };
        suite.stdout.on("data", seen);
        suite.stderr.on("data", seen);
        suite.on("exit", () => reject(new Error(`the suite ended without an authorization URL:\n${output}`)));
      });
      const exited = new Promise<number | null>((resolve) => suite.on("exit", resolve));
      try {
        const page = await (await browser.newContext()).newPage();
        await approveInBrowser(page, await authorizeURL, server.signIn);
        const code = await exited;
        await page.context().close();
        const checks = readdirSync(out).flatMap(
          (dir) =>
            JSON.parse(readFileSync(join(out, dir, "checks.json"), "utf8")) as {
              id: string;
              status: string;
              errorMessage?: string;
            }[],
        );
        const status = Object.fromEntries(
          checks.map((c) => [c.id, `${c.status}${c.errorMessage ? `: ${c.errorMessage}` : ""}`]),
        );
        console.log(`authorization-server conformance on ${name}:`, status);
        expect(status["authorization-server-metadata"]).toBe("SUCCESS");
        expect(status["authorization-server-metadata-cimd"]).toBe("SUCCESS");
        expect(status["authorization-code-grant"]).toBe("SUCCESS");
        expect(code, output).toBe(0);
      } finally {
        suite.kill();
      }
    }, 120_000);
  });
}

/** A loopback port nobody listens on now (the suite's callback server takes it). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CONFORMANCE = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
