/**
 * What a remote client does, the same through the reverse proxy (proxy.test.ts) and through the relay
 * (test/relay/relay.test.ts): the official SDK's round trip, a /v1/ws session, and an MCP client's whole OAuth flow.
 * Each asserts that what it was handed points at `origin`, the public address the client used.
 */
import BeeperDesktop, { toFile } from "@beeper/desktop-api";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import type WebSocket from "ws";
import { connect } from "../events/kit.ts";
import { approve, Browser, MemoryProvider } from "../oauth/kit.ts";

export interface Remote {
  /** The public origin clients use. */
  origin: string;
  /** A read+write token. */
  token: string;
  /** How requests reach it (a resolver for a public name; default: the global fetch). */
  fetch?: typeof fetch;
  wsOptions?: WebSocket.ClientOptions;
}

const through = (remote: Remote) => remote.fetch ?? fetch;

/**
 * Accounts, the Echo chat, an upload of `size` bytes sent to Echo, the message back, Echo's answer, the bytes served.
 * Answers the attachment's URL (mxc://…).
 */
export async function sdkRoundTrip(remote: Remote, size: number, text: string): Promise<string> {
  const sdk = new BeeperDesktop({
    baseURL: remote.origin,
    accessToken: remote.token,
    fetch: remote.fetch,
    maxRetries: 0,
    logLevel: "off",
  });
  expect((await sdk.accounts.list()).length).toBe(1);
  let echo: { id: string } | undefined;
  for await (const chat of sdk.chats.search({ query: "Echo" })) {
    echo = chat;
    break;
  }
  expect(echo).toBeDefined();
  const theirs = async () =>
    new Set((await sdk.messages.list(echo!.id)).items.filter((m) => !m.isSender).map((m) => m.id));
  const before = await theirs();
  const bytes = randomBytes(size);
  const upload = await sdk.assets.upload({
    file: await toFile(bytes, "noise.bin", { type: "application/octet-stream" }),
  });
  expect(upload.fileSize).toBe(bytes.length);
  const sent = await sdk.messages.send(echo!.id, { text, attachment: { uploadID: upload.uploadID! } } as never);
  const message = await sdk.messages.retrieve(sent.pendingMessageID, { chatID: echo!.id });
  expect(message.text).toBe(text);
  // Echo answers; the reply is read the same way.
  await expect
    .poll(async () => [...(await theirs())].some((id) => !before.has(id)), { timeout: 10_000, interval: 200 })
    .toBe(true);
  const served = await through(remote)(
    `${remote.origin}/v1/assets/serve?url=${encodeURIComponent(message.attachments![0].id!)}`,
    { headers: { authorization: `Bearer ${remote.token}` } },
  );
  expect(served.status).toBe(200);
  expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
  return message.attachments![0].id!;
}

/** A /v1/ws session subscribed to every chat receives the event of a message sent the same way. */
export async function liveEvents(remote: Remote, text: string) {
  const ws = await connect(remote.origin, remote.token, ["*"], { wsOptions: remote.wsOptions });
  try {
    const auth = { authorization: `Bearer ${remote.token}` };
    const chats = (await (await through(remote)(`${remote.origin}/v1/chats?limit=1`, { headers: auth })).json()) as {
      items: { id: string }[];
    };
    const chatID = chats.items[0].id;
    const sent = (await (
      await through(remote)(`${remote.origin}/v1/chats/${encodeURIComponent(chatID)}/messages`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ text }),
      })
    ).json()) as { pendingMessageID: string };
    const frame = await ws.next(
      (f) => f.type === "message.upserted" && (f.ids as string[]).includes(sent.pendingMessageID),
      { what: "the sent message's event" },
    );
    expect(frame.chatID).toBe(chatID);
  } finally {
    ws.close();
  }
}

/**
 * An MCP client from a bare 401: discovery, registration, the owner's approval with S256 PKCE (signed in with the
 * read+write token), the code exchanged, then tools/list, and download_asset for `asset` (an mxc:// URL), whose
 * serveURL must be at the public origin too. Every address it is handed is.
 */
export async function mcpOAuth(remote: Remote, asset: string) {
  const redirect = "https://agent.example.net/callback";
  const provider = new MemoryProvider(redirect);
  const mcpURL = new URL(`${remote.origin}/v0/mcp`);
  const first = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider, fetch: remote.fetch });
  await expect(new Client({ name: "remote-test", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(
    UnauthorizedError,
  );
  const authorizeURL = provider.authorizationURL!;
  expect(authorizeURL.origin, "the authorization endpoint the client found").toBe(remote.origin);
  expect(authorizeURL.searchParams.get("code_challenge_method")).toBe("S256");
  // The owner approves in their browser, through the same public origin.
  const owner = new Browser(remote.origin, remote.fetch);
  const back = await approve(
    owner,
    { url: remote.origin, admin: remote.token, stop: async () => undefined },
    {
      clientID: authorizeURL.searchParams.get("client_id")!,
      redirectURI: redirect,
      challenge: authorizeURL.searchParams.get("code_challenge")!,
      state: authorizeURL.searchParams.get("state") ?? undefined,
    },
  );
  expect(back.origin + back.pathname).toBe(redirect);
  expect(back.searchParams.get("iss")).toBe(remote.origin);
  await first.finishAuth(back.searchParams.get("code")!);
  expect(provider.tokens()?.access_token).toMatch(/^inbx_/);
  const mcp = new Client({ name: "remote-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(mcpURL, { authProvider: provider, fetch: remote.fetch }));
  expect((await mcp.listTools()).tools.map((t) => t.name)).toContain("search_chats");
  const downloaded = await mcp.callTool({ name: "download_asset", arguments: { url: asset } });
  expect((downloaded.structuredContent as { serveURL: string }).serveURL).toBe(
    `${remote.origin}/v1/assets/serve?url=${encodeURIComponent(asset)}`,
  );
  await mcp.close();
}
