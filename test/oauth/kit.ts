/**
 * Plumbing for the OAuth suites: a plain HTTP client that keeps a cookie jar for the owner's browser session, PKCE
 * pairs, and the steps of the authorization code flow as an app and a person perform them. Nothing here asserts.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationFull,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { s256 } from "../../src/oauth/form.ts";

export const randomToken = () => `oauth_${randomBytes(18).toString("base64url")}`;

/** What a person does on the daemon's machine: `inboxd open --print` beside the running daemon, for a fresh one-time sign-in link. */
export async function ownerSignInLink(node: { url: string; dataDir: string }, root: string): Promise<string> {
  const port = new URL(node.url).port;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "adapters/node/cli.ts", "open", "--data-dir", node.dataDir, "--port", port, "--print"],
    { cwd: root },
  );
  const link = stdout.trim().split("\n").pop()!;
  if (!link.startsWith(`${node.url}/oauth/login?code=`)) throw new Error(`inboxd open printed ${stdout}`);
  return link;
}

export interface Server {
  url: string;
  /** A read+write token the owner has (the Worker's admin token; a CLI token on the daemon). */
  admin: string;
  stop(): Promise<void>;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export class Browser {
  private cookies = new Map<string, string>();

  /** `fetchFn`: how requests go out (a test reaching the server through a proxy by a public name passes its own). */
  constructor(
    readonly base: string,
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  async request(
    path: string,
    init: {
      method?: string;
      form?: Record<string, string>;
      json?: unknown;
      headers?: Record<string, string>;
      token?: string;
    } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    let body: string | undefined;
    if (init.form) {
      headers["content-type"] = "application/x-www-form-urlencoded";
      body = new URLSearchParams(init.form).toString();
    } else if (init.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(init.json);
    }
    const res = await this.fetchFn(path.startsWith("http") ? path : this.base + path, {
      method: init.method ?? (body ? "POST" : "GET"),
      headers,
      body,
      redirect: "manual",
    });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(";");
      const [name, ...value] = pair.split("=");
      this.cookies.set(name.trim(), value.join("="));
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  forget() {
    this.cookies.clear();
  }
}

export async function pkce() {
  const verifier = randomBytes(40).toString("base64url");
  return { verifier, challenge: await s256(verifier) };
}

export async function register(browser: Browser, redirectURIs = ["http://127.0.0.1/callback"], name = "Test App") {
  const r = await browser.request("/oauth/register", {
    json: {
      client_name: name,
      redirect_uris: redirectURIs,
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
  });
  if (r.status !== 201) throw new Error(`register → ${r.status}: ${r.text}`);
  return r.json as { client_id: string; client_name: string };
}

export function authorizeQuery(params: Record<string, string | undefined>) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  return `/oauth/authorize?${q}`;
}

/** The consent page's form fields (hidden inputs), as the browser would post them. */
export function consentFields(html: string): Record<string, string> {
  const unescapeHtml = (s: string) =>
    s
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&");
  return Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], unescapeHtml(m[2])]),
  );
}

/** Runs the whole flow as app + owner: answers the redirect back to the app (with `code` or `error`). */
export async function approve(
  browser: Browser,
  server: Server,
  options: {
    clientID: string;
    redirectURI: string;
    challenge: string;
    scope?: string;
    state?: string;
    decision?: "approve" | "deny";
  },
) {
  const query = authorizeQuery({
    response_type: "code",
    client_id: options.clientID,
    redirect_uri: options.redirectURI,
    code_challenge: options.challenge,
    code_challenge_method: "S256",
    scope: options.scope ?? "read write",
    state: options.state ?? "s-123",
  });
  let page = await browser.request(query);
  if (/Sign in to inboxd/.test(page.text)) {
    const signedIn = await browser.request("/oauth/login", { form: { code: server.admin, next: query } });
    if (signedIn.status !== 303) throw new Error(`sign-in → ${signedIn.status}: ${signedIn.text}`);
    page = await browser.request(signedIn.headers.get("location")!);
  }
  if (page.status !== 200) throw new Error(`consent page → ${page.status}: ${page.text.slice(0, 300)}`);
  const decided = await browser.request("/oauth/authorize", {
    form: { ...consentFields(page.text), decision: options.decision ?? "approve" },
  });
  if (decided.status !== 303) throw new Error(`decision → ${decided.status}: ${decided.text.slice(0, 300)}`);
  return new URL(decided.headers.get("location")!);
}

export async function exchange(browser: Browser, fields: Record<string, string>) {
  return browser.request("/oauth/token", { form: fields });
}

/**
 * An app registered and approved in `browser`, which is signed in already (from a sign-in link) or signs in with
 * `signIn` (an admin token) when the consent page asks: its client ID and its access and refresh tokens, granted
 * the scope it asked for.
 */
export async function approvedApp(
  browser: Browser,
  name = "Test App",
  scope = "read write",
  { signIn = "", redirectURI = "http://127.0.0.1/callback" }: { signIn?: string; redirectURI?: string } = {},
) {
  const client = await register(browser, [redirectURI], name);
  const { verifier, challenge } = await pkce();
  const back = await approve(
    browser,
    { url: browser.base, admin: signIn, stop: async () => {} },
    { clientID: client.client_id, redirectURI, challenge, scope },
  );
  const answer = await exchange(browser, {
    grant_type: "authorization_code",
    code: back.searchParams.get("code") ?? "",
    code_verifier: verifier,
    client_id: client.client_id,
    redirect_uri: redirectURI,
  });
  if (answer.status !== 200 || answer.json?.scope !== scope)
    throw new Error(`token → ${answer.status}: ${answer.text}`);
  return {
    clientID: client.client_id,
    token: answer.json.access_token as string,
    refresh: answer.json.refresh_token as string,
  };
}

/** An OAuth client provider that keeps everything in memory and records where it was told to send the person. */
export class MemoryProvider implements OAuthClientProvider {
  authorizationURL?: URL;
  private info?: OAuthClientInformationFull;
  private saved?: OAuthTokens;
  private verifier = "";

  constructor(readonly redirectUrl: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "MCP OAuth test",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation = () => this.info;
  saveClientInformation = (info: OAuthClientInformationFull) => void (this.info = info);
  tokens = () => this.saved;
  saveTokens = (tokens: OAuthTokens) => void (this.saved = tokens);
  redirectToAuthorization = (url: URL) => void (this.authorizationURL = url);
  saveCodeVerifier = (verifier: string) => void (this.verifier = verifier);
  codeVerifier = () => this.verifier;
}
