import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorkerd, type WorkerdServer } from "../../test/harness/workerd.ts";

// Runs in Node and talks to the Worker in workerd over a real loopback socket, as an SDK would.
const token = "inbx_worker-test-admin-token";
let server: WorkerdServer;

const api = (path: string, init: RequestInit = {}, auth = true) =>
  fetch(`${server.url}${path}`, {
    ...init,
    headers: {
      ...(auth ? { authorization: `Bearer ${token}` } : {}),
      ...(init.body ? { "content-type": "application/json" } : {}),
    },
  });

beforeAll(async () => {
  server = await startWorkerd({ token, seed: { chats: 12, messages: 120, accounts: 2, seed: 7 } });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

describe("Worker in workerd", () => {
  it("refuses a request without a token with the wire error body", async () => {
    const res = await api("/v1/accounts", {}, false);
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = await res.json();
    expect(body).toEqual({ code: "UNAUTHORIZED", message: expect.any(String) });
  });

  it("refuses an unknown token", async () => {
    const res = await fetch(`${server.url}/v1/accounts`, { headers: { authorization: "Bearer not-the-admin-token" } });
    expect(res.status).toBe(401);
  });

  it("accepts the INBOXD_ADMIN_TOKEN secret and serves the seeded accounts", async () => {
    const res = await api("/v1/accounts");
    expect(res.status).toBe(200);
    const accounts = (await res.json()) as { accountID: string }[];
    expect(Array.isArray(accounts)).toBe(true);
    expect(accounts).toHaveLength(2);
    expect(accounts[0].accountID).toMatch(/^local-sandbox_ba_/);
  });

  it("keeps a write in Durable Object storage across requests and a workerd restart", async () => {
    const chats = (await (await api("/v1/chats")).json()) as { items: { id: string; isMuted: boolean }[] };
    const chat = chats.items.find((c) => !c.isMuted)!;
    const path = `/v1/chats/${encodeURIComponent(chat.id)}`;

    const patched = await api(path, { method: "PATCH", body: JSON.stringify({ isMuted: true }) });
    expect(patched.status).toBe(200);
    expect(((await (await api(path)).json()) as { isMuted: boolean }).isMuted).toBe(true);

    // A restart drops the object's in-memory state: what comes back now was read from its storage.
    await server.restart();
    const after = await api(path);
    expect(after.status).toBe(200);
    expect(((await after.json()) as { isMuted: boolean }).isMuted).toBe(true);
    expect(((await (await api("/v1/accounts")).json()) as unknown[]).length).toBe(2);
  }, 30_000);
});

describe("Worker without INBOXD_ADMIN_TOKEN", () => {
  it("answers 401 and says why in its log, once per boot", async () => {
    const logs: { level: string; message: string }[] = [];
    const bare = await startWorkerd({ onLog: (log) => logs.push(log) });
    try {
      const warnings = () => logs.filter((log) => log.message.includes("no INBOXD_ADMIN_TOKEN secret"));
      for (let i = 0; i < 2; i++)
        expect((await fetch(`${bare.url}/v1/accounts`, { headers: { authorization: "Bearer anything" } })).status).toBe(
          401,
        );
      await expect.poll(() => warnings().length).toBe(1);
      expect(warnings()[0]).toMatchObject({
        level: "warn",
        message:
          "inboxd: no INBOXD_ADMIN_TOKEN secret: every request without another valid token is answered 401; " +
          "set it with wrangler secret put INBOXD_ADMIN_TOKEN (or .dev.vars for wrangler dev)",
      });

      // Once the secret is set (a redeploy), the object boots without the warning and the token works.
      await bare.restart({ INBOXD_ADMIN_TOKEN: token });
      expect((await fetch(`${bare.url}/v1/accounts`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
        200,
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(warnings()).toHaveLength(1);
    } finally {
      await bare.stop();
    }
  }, 60_000);
});
