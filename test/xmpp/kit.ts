/**
 * Plumbing for the XMPP suite: a runtime running inboxd with a token, a real Prosody, plain XMPP clients as the
 * other people, the official SDK as the API client, and the one HTTP client (test/kit/http.ts) for the login-session
 * endpoints the SDK does not cover. Nothing here asserts.
 */
import BeeperDesktop from "@beeper/desktop-api";
import type { ProsodyServer } from "../harness/prosody.ts";
import { enc, randomToken as tokenWith, sleep } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { checkingFetch, type ResponseChecker } from "../scenario/openapi-check.ts";
import type { Runtime } from "../harness/bridge-runtime.ts";

export type { Runtime };

export interface RuntimeTarget {
  name: string;
  start(token: string): Promise<Runtime>;
  /** The login fields that reach the test server: host and port over TCP, or the WebSocket URL. */
  serverFields(server: ProsodyServer): Record<string, string>;
  /** Login fields for a transport this runtime cannot open, where there is one. */
  unsupportedFields?(server: ProsodyServer): Record<string, string>;
}

export { enc, sleep };
export const randomToken = () => tokenWith("xmpp");

/** Polls until `probe` answers something truthy; throws naming `what` (and the last value seen) after the timeout. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 8000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > until)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`,
      );
    await sleep(30);
  }
}

export class Client {
  readonly sdk: BeeperDesktop;
  spec?: ResponseChecker;

  /** Every JSON answer is checked against the document the server serves (GET /v1/spec). */
  private readonly fetch = checkingFetch(() => this.spec);
  private readonly api: Api;

  constructor(readonly runtime: Runtime) {
    this.sdk = new BeeperDesktop({
      baseURL: runtime.url,
      accessToken: runtime.token,
      maxRetries: 0,
      logLevel: "off",
      fetch: this.fetch,
    });
    this.api = new Api(runtime.url, runtime.token, { fetch: this.fetch });
  }

  async raw<T = any>(method: string, path: string, json?: unknown): Promise<{ status: number; body: T }> {
    const { status, body } = await this.api.raw<T>(method, path, { json });
    return { status, body };
  }

  async ok<T = any>(method: string, path: string, json?: unknown): Promise<T> {
    const res = await this.raw<T>(method, path, json);
    if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** Runs a login (XMPP's by default) with these fields to its end: the finished session (complete or failed). */
  async login(
    fields: Record<string, string>,
    reconnect?: { loginID: string },
    flow: { bridgeID?: string; flowID?: string } = {},
  ): Promise<any> {
    const bridge = flow.bridgeID ?? "local-xmpp";
    const started = await this.ok("POST", `/v1/bridges/${bridge}/login-sessions`, {
      flowID: flow.flowID ?? "password",
      ...(reconnect ? { loginID: reconnect.loginID } : {}),
    });
    const step = started.currentStep;
    const answered = await this.ok(
      "POST",
      `/v1/bridges/${bridge}/login-sessions/${started.loginSessionID}/steps/${step.stepID}`,
      { type: "user_input", fields },
    );
    return waitFor("the login session to finish", async () => {
      const session =
        answered.status === "waiting_for_input"
          ? await this.ok("GET", `/v1/bridges/${bridge}/login-sessions/${started.loginSessionID}`)
          : answered;
      return session.status === "complete" || session.status === "failed" ? session : undefined;
    });
  }

  account = (accountID: string) => this.ok("GET", `/v1/accounts/${enc(accountID)}`);

  /** Waits for the account to report `status` (and records every status seen on the way). */
  async accountStatus(accountID: string, status: string, seen?: string[], timeoutMs = 15_000) {
    return waitFor(
      `account ${accountID} to be ${status}`,
      async () => {
        const a = await this.account(accountID);
        if (seen && seen[seen.length - 1] !== a.status) seen.push(a.status);
        return a.status === status ? a : undefined;
      },
      timeoutMs,
    );
  }

  /** The account's chat with `networkTitle` (a JID's local part or a room name). */
  async chatTitled(accountID: string, title: string) {
    return waitFor(`a chat titled ${title}`, async () => {
      const page = await this.sdk.chats.list({ accountIDs: [accountID] });
      return page.items.find((c) => c.title === title);
    });
  }

  /** Every message of a chat, newest first, through the SDK's pager. */
  async messages(chatID: string) {
    const out = [];
    for await (const m of this.sdk.messages.list(chatID)) out.push(m);
    return out;
  }

  async messageWith(
    chatID: string,
    match: (m: Awaited<ReturnType<Client["messages"]>>[number]) => boolean,
    what: string,
    timeoutMs?: number,
  ) {
    return waitFor(what, async () => (await this.messages(chatID)).find(match), timeoutMs);
  }
}

/** A small real PNG (1×1) followed by 150 KB of random bytes: still a valid image, and byte-exactness shows. */
export function imageBytes(): Uint8Array {
  const png = Uint8Array.from(
    atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="),
    (c) => c.charCodeAt(0),
  );
  const tail = new Uint8Array(150_000);
  for (let at = 0; at < tail.length; at += 65_536) crypto.getRandomValues(tail.subarray(at, at + 65_536));
  const out = new Uint8Array(png.length + tail.length);
  out.set(png);
  out.set(tail, png.length);
  return out;
}
