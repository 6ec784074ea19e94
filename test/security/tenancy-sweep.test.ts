/**
 * The isolation sweep of a deployment of many inboxes (INBOXD_TENANCY=multi), in workerd: every operation of the
 * route table (sweptOperations(), so a route added later is swept too, HEAD included) is sent with one inbox's
 * read+write token and the real IDs of another inbox's data in its path, query and body — and again with that
 * token re-tagged to name the other inbox (src/tenancy.ts). No answer may hold any of the other inbox's data
 * (distinctive strings collected from it first, as the auth sweep does), a re-tagged token must be refused like an
 * unknown one (401) wherever a token is needed, and the other inbox must read the same afterwards. Beside the route
 * table: a WebSocket subscribed to everything hears nothing of the other inbox, while the other inbox's own socket
 * does (so the check can fail), and an MCP client of one inbox finds nothing of the other.
 */
import { Agent } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorkerd, type WorkerdServer } from "../harness/workerd.ts";
import { enc } from "../kit/common.ts";
import { connect } from "../events/kit.ts";
import { approvedApp, Browser } from "../oauth/kit.ts";
import {
  collect,
  leaked,
  MIN_OPERATIONS,
  plan,
  SEED,
  send,
  sweptOperations,
  type Answer,
  type Device,
  type Sent,
} from "./sweep.ts";

const operator = "operator-secret-of-the-isolation-sweep";
const operations = await sweptOperations();
const agent = new Agent({ keepAlive: true, maxSockets: 8 });
let server: WorkerdServer;
const ask = (req: Sent) => send(agent, server.url, req);

/** An inbox made through the admin API and a browser signed in to it from its link. */
async function inbox(id: string, seed: number): Promise<Browser> {
  const res = await fetch(`${server.url}/admin/v1/inboxes`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    body: JSON.stringify({ id, seed: { ...SEED, seed } }),
  });
  if (res.status !== 201) throw new Error(`creating ${id} → ${res.status}: ${await res.text()}`);
  const { signIn } = (await res.json()) as { signIn: { url: string } };
  const browser = new Browser(server.url);
  if ((await browser.request(signIn.url)).status !== 303) throw new Error(`signing in to ${id} failed`);
  return browser;
}

let alice: string;
let bob: string;
let bobData: Device;
let bobBefore: string;

/** What Bob's inbox holds, as Bob reads it: the sweep must leave it as it was. */
async function bobState(): Promise<string> {
  const out: string[] = [];
  for (const path of ["/v1/accounts", "/v1/chats?limit=50", "/v1/labels", "/v1/webhooks", "/v1/tokens"]) {
    const a = await ask({
      method: "GET",
      path,
      headers: { authorization: `Bearer ${bob}`, accept: "application/json" },
    });
    out.push(`${path} ${a.status} ${a.text}`);
  }
  const { chatID } = bobData.ids;
  const messages = await ask({
    method: "GET",
    path: `/v1/chats/${enc(chatID)}/messages`,
    headers: { authorization: `Bearer ${bob}` },
  });
  out.push(messages.text);
  return out.join("\n");
}

beforeAll(async () => {
  server = await startWorkerd({ operatorToken: operator });
  const [aliceBrowser, bobBrowser] = [await inbox("alice", 1), await inbox("bob", 2)];
  [alice, bob] = [(await approvedApp(aliceBrowser)).token, (await approvedApp(bobBrowser)).token];
  // Bob's data, as the auth sweep collects a device's (an upload, a label, a webhook, an approved app…).
  const bobs = await collect(ask, bob, server.url, (name) => approvedApp(bobBrowser, name));
  const alices = await collect(ask, alice, server.url, (name) => approvedApp(aliceBrowser, name));
  // What both seeds share (the sandbox's own user IDs, "Sandbox User 1") is Alice's as much as Bob's: not evidence.
  const hers = new Set(alices.needles);
  bobData = { ...bobs, needles: bobs.needles.filter((n) => !hers.has(n)) };
  bobBefore = await bobState();
}, 180_000);

afterAll(async () => {
  agent.destroy();
  await server?.stop();
});

describe("isolation sweep: one inbox's credentials reach nothing of another's", () => {
  it("sweeps the whole route table", () => {
    expect(operations.length).toBeGreaterThanOrEqual(MIN_OPERATIONS);
    expect(bobData.needles.length).toBeGreaterThan(20);
    console.log(
      `isolation sweep: ${operations.length} operations, ${bobData.needles.length} strings only Bob's inbox holds`,
    );
  });

  it("finds Bob's data where Bob asks (the leak check can fail)", async () => {
    const req: Sent = { method: "GET", path: "/v1/chats", headers: { authorization: `Bearer ${bob}` } };
    expect(leaked(bobData, req, await ask(req)).length).toBeGreaterThan(5);
  });

  it("answers no operation, with Alice's token and Bob's IDs, with anything of Bob's", async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const s of operations) {
      const planned = plan(s, bobData.ids);
      const req: Sent = {
        method: s.op.method,
        path: planned.path,
        headers: { ...planned.headers, authorization: `Bearer ${alice}` },
        body: planned.body,
      };
      const a: Answer = await ask(req);
      checked++;
      const found = leaked(bobData, req, a);
      if (found.length) failures.push(`${s.name} → ${a.status}: holds Bob's ${JSON.stringify(found.slice(0, 3))}`);
      if (a.status === 429) failures.push(`${s.name}: rate-limited, so the answer is unknown`);
    }
    console.log(`isolation sweep: ${checked} operations sent with Alice's token and Bob's IDs`);
    expect(failures).toEqual([]);
  }, 180_000);

  it("refuses Alice's token re-tagged to name Bob's inbox wherever a token is needed, leaking nothing", async () => {
    const forged = alice.replace(/^inbx_alice\./, "inbx_bob.");
    const failures: string[] = [];
    for (const s of operations) {
      const planned = plan(s, bobData.ids);
      const req: Sent = {
        method: s.op.method,
        path: planned.path,
        headers: { ...planned.headers, authorization: `Bearer ${forged}` },
        body: planned.body,
      };
      const a = await ask(req);
      if (s.scope !== "public" && a.status !== 401) failures.push(`${s.name}: wanted 401, got ${a.status}`);
      const found = leaked(bobData, req, a);
      if (found.length) failures.push(`${s.name} → ${a.status}: holds Bob's ${JSON.stringify(found.slice(0, 3))}`);
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it("leaves Bob's inbox as it was", async () => {
    expect(await bobState()).toBe(bobBefore);
  });

  it("delivers Bob's events to Bob's socket only", async () => {
    const watching = await connect(server.url, alice, ["*"]);
    const own = await connect(server.url, bob, ["*"]);
    try {
      const text = `isolation sweep, for Bob only ${Date.now()}`;
      const sent = await ask({
        method: "POST",
        path: `/v1/chats/${enc(bobData.ids.chatID)}/messages`,
        headers: { authorization: `Bearer ${bob}`, "content-type": "application/json" },
        body: JSON.stringify({ text }),
      });
      expect(sent.status).toBe(200);
      await own.next((f) => JSON.stringify(f).includes(text), { what: "Bob's own message event" });
      // Bob's socket has it; Alice's, opened first, must not have had it by now, nor any of Bob's chat.
      await new Promise((r) => setTimeout(r, 500));
      const heard = JSON.stringify(watching.frames);
      expect(heard).not.toContain(text);
      expect(heard).not.toContain(bobData.ids.chatID);
    } finally {
      watching.close();
      own.close();
    }
  });

  it("finds nothing of Bob's through Alice's MCP endpoint", async () => {
    const rpc = (body: unknown, session?: string) =>
      fetch(`${server.url}/v0/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${alice}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(session ? { "mcp-session-id": session } : {}),
        },
        body: JSON.stringify(body),
      });
    const init = await rpc({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "sweep", version: "1" } },
    });
    expect(init.status).toBe(200);
    const session = init.headers.get("mcp-session-id") ?? undefined;
    await init.text();
    const calls = [
      { name: "search_chats", arguments: {} },
      { name: "get_accounts", arguments: {} },
      { name: "search_messages", arguments: { query: bobData.needles.find((n) => n.includes(" ")) ?? "a" } },
      { name: "get_chat", arguments: { chatID: bobData.ids.chatID } },
    ];
    let answered = 0;
    for (const [i, params] of calls.entries()) {
      const res = await rpc({ jsonrpc: "2.0", id: i + 2, method: "tools/call", params }, session);
      const text = await res.text();
      if (res.status === 200) answered++;
      const found = bobData.needles.filter((n) => text.includes(n) && !JSON.stringify(params).includes(n));
      expect(found, `${params.name}: ${text.slice(0, 300)}`).toEqual([]);
    }
    expect(answered).toBe(calls.length);
  });
});
