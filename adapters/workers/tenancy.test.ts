import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorkerd, type WorkerdServer } from "../../test/harness/workerd.ts";
import { approvedApp, authorizeQuery, Browser, pkce, register } from "../../test/oauth/kit.ts";

// Many inboxes in one Worker (INBOXD_TENANCY=multi), in workerd, over real loopback sockets: the operator's admin
// API, a person's first sign-in from the link it gives, and what one inbox's credentials can reach.
const operator = "operator-secret-for-the-tenancy-suite";
let server: WorkerdServer;

const admin = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) =>
  fetch(`${server.url}/admin/v1${path}`, {
    method: init.method ?? (init.json ? "POST" : "GET"),
    headers: {
      authorization: `Bearer ${init.token ?? operator}`,
      ...(init.json ? { "content-type": "application/json" } : {}),
    },
    body: init.json ? JSON.stringify(init.json) : undefined,
  });

const api = (token: string, path: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${token}`,
      ...(init.body ? { "content-type": "application/json" } : {}),
      ...(init.headers as Record<string, string> | undefined),
    },
  });

/** What a person does with the link the operator sends: sign in, then let an app through the OAuth flow. */
async function signIn(link: string): Promise<{ browser: Browser; token: string; refresh: string }> {
  const browser = new Browser(server.url);
  const landed = await browser.request(link);
  if (landed.status !== 303) throw new Error(`sign-in link → ${landed.status}: ${landed.text.slice(0, 200)}`);
  return { browser, ...(await approvedApp(browser)) };
}

async function create(body: Record<string, unknown>) {
  const res = await admin("/inboxes", { json: body });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; signIn: { url: string; expiresAt: string } };
}

const seed = { chats: 6, messages: 40, accounts: 1 };
let alice: Awaited<ReturnType<typeof signIn>>;
let bob: Awaited<ReturnType<typeof signIn>>;

beforeAll(async () => {
  server = await startWorkerd({ operatorToken: operator });
  const a = await create({ id: "alice", name: "Alice", seed: { ...seed, seed: 1 } });
  const b = await create({ id: "bob", seed: { ...seed, seed: 2 } });
  [alice, bob] = await Promise.all([signIn(a.signIn.url), signIn(b.signIn.url)]);
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

describe("many inboxes in one Worker", () => {
  it("keeps the admin API behind the operator's token", async () => {
    expect((await admin("/inboxes", { token: "wrong" })).status).toBe(401);
    expect((await fetch(`${server.url}/admin/v1/inboxes`)).status).toBe(401);
    // A person's token is no operator's.
    expect((await admin("/inboxes", { token: alice.token })).status).toBe(401);
    const list = (await (await admin("/inboxes")).json()) as { items: { id: string; name?: string }[] };
    expect(list.items.map((i) => i.id).sort()).toEqual(["alice", "bob"]);
  });

  it("lists inboxes a page at a time, in ID order, and refuses a bad page", async () => {
    const page = async (query: string) => {
      const res = await admin(`/inboxes${query}`);
      expect(res.status).toBe(200);
      return (await res.json()) as { items: { id: string }[]; hasMore: boolean; nextAfter?: string };
    };
    const first = await page("?limit=1");
    expect(first).toMatchObject({ items: [{ id: "alice" }], hasMore: true, nextAfter: "alice" });
    const second = await page(`?limit=1&after=${first.nextAfter}`);
    expect(second.items.map((i) => i.id)).toEqual(["bob"]);
    expect(second.hasMore).toBe(false);
    expect(second.nextAfter).toBeUndefined();
    expect((await page("?after=bob")).items).toEqual([]);
    for (const [query, where] of [
      ["?limit=0", "query.limit"],
      ["?limit=1001", "query.limit"],
      ["?limit=ten", "query.limit"],
      ["?after=Not_An_ID", "query.after"],
      ["?cursor=alice", "query.cursor"],
      ["?limit=0&limit=5", "query.limit"],
    ]) {
      const refused = await admin(`/inboxes${query}`);
      expect(refused.status, query).toBe(400);
      expect(await refused.text(), query).toContain(where);
    }
  });

  it("refuses a bad inbox ID, a taken one, and unknown fields, saying where", async () => {
    const bad = await admin("/inboxes", { json: { id: "Not An ID" } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("body.id");
    expect((await admin("/inboxes", { json: { id: "alice" } })).status).toBe(409);
    expect((await admin("/inboxes", { json: { id: "device" } })).status).toBe(400);
    expect((await admin("/inboxes", { json: { colour: "red" } })).status).toBe(400);
    // Only its own paths: nothing near them falls through to the list or to creating an inbox.
    expect((await admin("/inboxesXYZ")).status).toBe(404);
    expect((await admin("/inboxes/alice/sign-in-links/x", { json: { id: "mallory" } })).status).toBe(404);
    expect((await admin("/inboxes/%E0")).status).toBe(404);
    expect((await admin("/inboxes/mallory")).status).toBe(404);
  });

  it("answers secrets uncached, and gives no sign-in link for a suspended inbox", async () => {
    const link = await admin("/inboxes/alice/sign-in-links", { method: "POST" });
    expect(link.status).toBe(201);
    expect(link.headers.get("cache-control")).toBe("no-store");
    await admin("/inboxes/bob", { method: "PATCH", json: { status: "suspended" } });
    expect((await admin("/inboxes/bob/sign-in-links", { method: "POST" })).status).toBe(409);
    await admin("/inboxes/bob", { method: "PATCH", json: { status: "active" } });
    const refused = await admin("/inboxes", { token: "wrong" });
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer /);
  });

  it("mints secrets that name their inbox, and each inbox serves its own data", async () => {
    expect(alice.token).toMatch(/^inbx_alice\./);
    expect(alice.refresh).toMatch(/^inbr_alice\./);
    expect(bob.token).toMatch(/^inbx_bob\./);
    const names = async (token: string) =>
      ((await (await api(token, "/v1/chats?limit=50")).json()) as { items: { title: string }[] }).items
        .map((c) => c.title)
        .sort();
    const [a, b] = [await names(alice.token), await names(bob.token)];
    expect(a).toHaveLength(6);
    expect(b).toHaveLength(6);
    expect(a).not.toEqual(b);
  });

  it("refuses one inbox's token with another inbox's name written into it, as any unknown token", async () => {
    const forged = alice.token.replace(/^inbx_alice\./, "inbx_bob.");
    const intoNowhere = alice.token.replace(/^inbx_alice\./, "inbx_nobody.");
    const untagged = alice.token.replace(/^inbx_alice\./, "inbx_");
    const answers = await Promise.all(
      [forged, intoNowhere, untagged].map(async (t) => {
        const res = await api(t, "/v1/chats");
        return { status: res.status, body: await res.json() };
      }),
    );
    for (const a of answers) expect(a).toEqual(answers[1]);
    expect(answers[0].status).toBe(401);
  });

  it("signs a browser in to its own inbox only", async () => {
    // Alice's session cookie reaches Alice's inbox: the consent flow there issued Alice's token (above). Bob's
    // sign-in code is refused once used, and a made-up one for Alice is refused like any wrong code.
    const again = await new Browser(server.url).request(`/oauth/login?code=signin_alice.${"A".repeat(43)}`);
    expect(again.status).toBe(401);
    // The consent page names the inbox the browser is signed in to.
    const client = await register(alice.browser);
    const { challenge } = await pkce();
    const consent = await alice.browser.request(
      authorizeQuery({
        response_type: "code",
        client_id: client.client_id,
        redirect_uri: "http://127.0.0.1/callback",
        code_challenge: challenge,
        code_challenge_method: "S256",
      }),
    );
    expect(consent.text).toContain("wants to use the inbox <strong>alice</strong>");
  });

  it("refreshes and introspects a token at its own inbox", async () => {
    const browser = new Browser(server.url);
    const introspected = await browser.request("/oauth/introspect", { form: { token: alice.token } });
    expect(introspected.json.active).toBe(true);
    const foreign = await browser.request("/oauth/introspect", {
      form: { token: alice.token.replace("inbx_alice.", "inbx_bob.") },
    });
    expect(foreign.json).toEqual({ active: false });
    // The refresh token names Alice's inbox too: the grant is rotated there, and the new access token opens it.
    const refreshed = await browser.request("/oauth/token", {
      form: { grant_type: "refresh_token", refresh_token: alice.refresh },
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.json.access_token).toMatch(/^inbx_alice\./);
    expect(refreshed.json.refresh_token).toMatch(/^inbr_alice\./);
    expect((await api(refreshed.json.access_token, "/v1/accounts")).status).toBe(200);
    alice.refresh = refreshed.json.refresh_token;
    // Alice's refresh token re-tagged for Bob's inbox is unknown there.
    const crossed = await browser.request("/oauth/token", {
      form: { grant_type: "refresh_token", refresh_token: alice.refresh.replace("inbr_alice.", "inbr_bob.") },
    });
    expect(crossed.status).toBe(400);
    expect(crossed.json.error).toBe("invalid_grant");
  });

  it("suspends and resumes an inbox without touching the other", async () => {
    const suspended = await admin("/inboxes/bob", { method: "PATCH", json: { status: "suspended" } });
    expect(suspended.status).toBe(200);
    const refused = await api(bob.token, "/v1/accounts");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { message: string }).message).toContain("suspended");
    expect((await api(alice.token, "/v1/accounts")).status).toBe(200);
    // Only Bob's own tokens learn that his inbox is suspended: anyone else gets what a missing inbox answers.
    const guess = async (token: string) => {
      const res = await api(token, "/v1/accounts");
      return { status: res.status, body: await res.json() };
    };
    expect(await guess(`inbx_bob.${"B".repeat(43)}`)).toEqual(await guess(`inbx_nobody.${"B".repeat(43)}`));
    await admin("/inboxes/bob", { method: "PATCH", json: { status: "active" } });
    expect((await api(bob.token, "/v1/accounts")).status).toBe(200);
  });

  it("counts each inbox's messages, storage and requests on the admin API", async () => {
    const shown = (await (await admin("/inboxes/alice")).json()) as {
      name: string;
      usage: { accounts: number; chats: number; messages: number; storageBytes: number; requests: number };
    };
    expect(shown.name).toBe("Alice");
    expect(shown.usage.accounts).toBe(1);
    expect(shown.usage.chats).toBe(6);
    expect(shown.usage.messages).toBeGreaterThanOrEqual(40);
    expect(shown.usage.storageBytes).toBeGreaterThan(10_000);
    expect(shown.usage.requests).toBeGreaterThan(3);
  });

  it("holds an inbox to its operator's limits, with errors that say which", async () => {
    const limited = await create({ id: "carol", limits: { maxAccounts: 0 } });
    const carol = await signIn(limited.signIn.url);
    const login = await api(carol.token, "/v1/bridges/local-sandbox/login-sessions", { method: "POST", body: "{}" });
    expect(login.status).toBe(409);
    expect(((await login.json()) as { message: string }).message).toContain("this inbox may hold 0 account");

    await admin("/inboxes/carol", { method: "PATCH", json: { limits: { maxStorageBytes: 1 } } });
    const write = await api(carol.token, "/v1/labels", { method: "POST", body: JSON.stringify({ name: "x" }) });
    expect(write.status).toBe(507);
    expect(((await write.json()) as { code: string }).code).toBe("STORAGE_LIMIT_REACHED");
    // A token that is not Carol's learns nothing of her limit: it is refused as unknown.
    const guessed = await api(`inbx_carol.${"C".repeat(43)}`, "/v1/labels", {
      method: "POST",
      body: JSON.stringify({ name: "x" }),
    });
    expect(guessed.status).toBe(401);
    // Reads still work, and so would deletes, so the person can free space.
    expect((await api(carol.token, "/v1/accounts")).status).toBe(200);
    // Through MCP: its tools that write are refused with the same reason, its reads answer.
    const rpc = async (id: number, method: string, params: unknown) => {
      const res = await api(carol.token, "/v0/mcp", {
        method: "POST",
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
        headers: { accept: "application/json, text/event-stream" },
      });
      return res.text();
    };
    await rpc(1, "initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "limits", version: "1" },
    });
    const sent = await rpc(2, "tools/call", { name: "send_message", arguments: { chatID: "x", text: "hi" } });
    expect(sent).toContain("cannot run now: this inbox holds");
    const searched = await rpc(3, "tools/call", { name: "search_chats", arguments: {} });
    expect(searched).not.toContain("cannot run now");
    expect(searched).toContain('"result"');

    // A request budget for this inbox's tokens so small (one every 1,000 s, bursts of one) that no refill comes
    // while the test runs, however slow the machine, while Alice's stay unlimited.
    await admin("/inboxes/carol", { method: "PATCH", json: { limits: { requestsPerSecond: 0.001 } } });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await api(carol.token, "/v1/accounts")).status);
    expect(statuses).toEqual([200, 429, 429]);
    for (let i = 0; i < 8; i++) expect((await api(alice.token, "/v1/accounts")).status).toBe(200);
  });

  it("deletes an inbox with its storage and assets; its tokens then open nothing", async () => {
    const dave = await signIn((await create({ id: "dave" })).signIn.url);
    const form = new FormData();
    form.set("file", new Blob([new Uint8Array(2048).fill(7)], { type: "image/png" }), "seven.png");
    const upload = await fetch(`${server.url}/v1/assets/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${dave.token}` },
      body: form,
    });
    expect(upload.status).toBeLessThan(300);
    expect((await server.assetKeys()).some((k) => k.startsWith("inboxes:dave:"))).toBe(true);
    const removed = await admin("/inboxes/dave", { method: "DELETE" });
    expect(removed.status).toBe(200);
    expect(((await removed.json()) as { assetsDeleted: number }).assetsDeleted).toBeGreaterThan(0);
    expect((await server.assetKeys()).some((k) => k.startsWith("inboxes:dave:"))).toBe(false);
    expect((await api(dave.token, "/v1/accounts")).status).toBe(401);
    expect((await admin("/inboxes/dave")).status).toBe(404);
    // The same ID again is a new, empty inbox: the old token stays worthless.
    await create({ id: "dave" });
    expect((await api(dave.token, "/v1/accounts")).status).toBe(401);
    expect((await api(alice.token, "/v1/accounts")).status).toBe(200);
  });
});

describe("a single-device deployment that goes to many inboxes", () => {
  it("keeps its data, tokens and assets as the inbox named device, beside new inboxes", async () => {
    const adminToken = "inbx_single-device-admin-secret";
    const single = await startWorkerd({ token: adminToken, seed: { chats: 5, messages: 30, accounts: 1, seed: 9 } });
    const at = (path: string, init: RequestInit = {}, token = adminToken) =>
      fetch(`${single.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });
    try {
      const form = new FormData();
      form.set("file", new Blob(["bytes from before the move"], { type: "text/plain" }), "before.txt");
      const upload = (await (await at("/v1/assets/upload", { method: "POST", body: form })).json()) as {
        srcURL: string;
      };
      const chatsBefore = await (await at("/v1/chats")).text();
      const keysBefore = await single.assetKeys();
      expect(keysBefore.length).toBeGreaterThan(0);

      // The redeploy: INBOXD_TENANCY=multi and an operator token; nothing is copied or converted.
      await single.restart({ INBOXD_TENANCY: "multi", INBOXD_OPERATOR_TOKEN: operator });
      expect(await (await at("/v1/chats")).text()).toBe(chatsBefore);
      const served = await at(`/v1/assets/serve?url=${encodeURIComponent(upload.srcURL)}`);
      expect(await served.text()).toBe("bytes from before the move");

      const listed = await fetch(`${single.url}/admin/v1/inboxes`, {
        headers: { authorization: `Bearer ${operator}` },
      });
      const items = ((await listed.json()) as { items: { id: string; adopted?: boolean }[] }).items;
      expect(items).toEqual([expect.objectContaining({ id: "device", adopted: true })]);

      // A new inbox beside it sees none of it, and deleting that one leaves the device's assets alone.
      const made = await fetch(`${single.url}/admin/v1/inboxes`, {
        method: "POST",
        headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
        body: JSON.stringify({ id: "newcomer" }),
      });
      expect(made.status).toBe(201);
      const newcomer = new Browser(single.url);
      expect((await newcomer.request(((await made.json()) as { signIn: { url: string } }).signIn.url)).status).toBe(
        303,
      );
      const theirs = (await approvedApp(newcomer)).token;
      expect(theirs).toMatch(/^inbx_newcomer\./);
      const seen = await at("/v1/chats", {}, theirs);
      expect(((await seen.json()) as { items: unknown[] }).items).toEqual([]);
      await fetch(`${single.url}/admin/v1/inboxes/newcomer`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${operator}` },
      });
      expect(await single.assetKeys()).toEqual(keysBefore);
      expect(await (await at("/v1/chats")).text()).toBe(chatsBefore);
    } finally {
      await single.stop();
    }
  }, 60_000);
});

describe("a deployment set up both ways", () => {
  it("refuses relay mode together with many inboxes, saying why", async () => {
    const both = await startWorkerd({
      operatorToken: operator,
      vars: { INBOXD_MODE: "relay", INBOXD_RELAY_SECRET: "x".repeat(24) },
    });
    try {
      const res = await fetch(`${both.url}/.inboxd/relay`);
      expect(res.status).toBe(500);
      expect(((await res.json()) as { message: string }).message).toContain("exclude each other");
    } finally {
      await both.stop();
    }
  }, 60_000);
});
