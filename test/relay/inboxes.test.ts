/**
 * The relay for two inboxes of one deployment of many (INBOXD_TENANCY=multi): Alice and Bob each run their own
 * daemon (`inboxd serve --relay URL`, real child processes), which dials out to their own inbox with the pairing
 * secret the operator's admin API gave that inbox. Through the Worker: the official SDK's round trip, a /v1/ws
 * session and an MCP client's whole OAuth flow reach each person's own daemon, and one person's token re-tagged
 * for the other inbox, or one inbox's pairing secret re-tagged for the other, is refused.
 */
import { randomBytes } from "node:crypto";
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareDataDir } from "../harness/node.ts";
import { killAll, type ServingProcess } from "../harness/process.ts";
import { connected, serveRelayed } from "./kit.ts";
import { startWorkerd, type WorkerdServer } from "../harness/workerd.ts";
import { liveEvents, mcpOAuth, sdkRoundTrip } from "../remote/kit.ts";

const operator = "operator-secret-of-the-relay-suite";
let worker: WorkerdServer;
const people = ["alice", "bob"] as const;
const dirs: Record<string, string> = {};
const secrets: Record<string, string> = {};
const tokens: Record<string, string> = {};
const daemons: ServingProcess[] = [];

const admin = async (path: string, method = "POST") => {
  const res = await fetch(`${worker.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${operator}` },
  });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${JSON.stringify(body)}`);
  return body;
};

const serve = (dataDir: string, secret: string) => serveRelayed(secret, { relay: worker.url, dataDir });

beforeAll(async () => {
  worker = await startWorkerd({ operatorToken: operator });
  for (const [n, person] of people.entries()) {
    await fetch(`${worker.url}/admin/v1/inboxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
      body: JSON.stringify({ id: person }),
    });
    secrets[person] = (await admin(`/inboxes/${person}/relay`)).relaySecret as string;
    // The daemon's own token, minted as it mints them once it relays through an inbox (checked below with the CLI).
    tokens[person] = `inbx_${person}.${randomBytes(32).toString("base64url")}`;
    dirs[person] = await prepareDataDir({
      seed: { chats: 6, messages: 40, accounts: 1, seed: 30 + n },
      tokens: [{ token: tokens[person], scopes: ["read", "write"] }],
    });
    const daemon = await serve(dirs[person], secrets[person]);
    daemons.push(daemon);
    await connected(daemon);
  }
}, 90_000);

afterAll(async () => {
  for (const d of daemons) await d.stop("SIGTERM");
  killAll();
  await worker?.stop();
  for (const dir of Object.values(dirs)) rmSync(dir, { recursive: true, force: true });
});

describe("the relay, for two inboxes of one deployment", () => {
  it("gives each inbox a pairing secret that names it, and lists it as relaying", async () => {
    expect(secrets.alice).toMatch(/^relay_alice\./);
    const shown = await admin("/inboxes/alice", "GET");
    // A relaying inbox's usage is its (empty) own store: its data lives on the daemon.
    expect(shown.relay).toEqual({ since: expect.any(String) });
    expect(JSON.stringify(shown)).not.toContain("secretHash");
  });

  it("reaches each person's own daemon with their token, through the official SDK", async () => {
    const titles = async (person: string) => {
      const res = await fetch(`${worker.url}/v1/chats?limit=50`, {
        headers: { authorization: `Bearer ${tokens[person]}` },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { items: { title: string }[] }).items.map((c) => c.title).sort();
    };
    expect(await titles("alice")).not.toEqual(await titles("bob"));
    for (const person of people)
      await sdkRoundTrip({ origin: worker.url, token: tokens[person] }, 4096, `through the relay, ${person}`);
  });

  it("refuses a token re-tagged for the other inbox (the other daemon does not know it)", async () => {
    const forged = tokens.alice.replace("inbx_alice.", "inbx_bob.");
    const res = await fetch(`${worker.url}/v1/accounts`, { headers: { authorization: `Bearer ${forged}` } });
    expect(res.status).toBe(401);
  });

  it("carries each person's live events to their own socket", async () => {
    for (const person of people) await liveEvents({ origin: worker.url, token: tokens[person] }, `live for ${person}`);
  });

  it("lets an MCP client through the whole OAuth flow to each person's own daemon", async () => {
    for (const person of people) {
      const asset = await sdkRoundTrip({ origin: worker.url, token: tokens[person] }, 512, `asset for ${person}`);
      await mcpOAuth({ origin: worker.url, token: tokens[person] }, asset);
    }
  });

  it("refuses a pairing secret re-tagged for the other inbox, and keeps the daemon that holds the right one", async () => {
    dirs.intruder = await prepareDataDir({ tokens: [] });
    const intruder = await serve(dirs.intruder, secrets.alice.replace("relay_alice.", "relay_bob."));
    try {
      const deadline = Date.now() + 10_000;
      while (!/refused the pairing secret/.test(intruder.output()) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(intruder.output()).toMatch(/refused the pairing secret \(401\)/);
    } finally {
      await intruder.stop("SIGTERM");
    }
    const res = await fetch(`${worker.url}/v1/accounts`, { headers: { authorization: `Bearer ${tokens.bob}` } });
    expect(res.status).toBe(200);
  });

  it("has the CLI mint tokens that name the inbox the daemon relays through", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "adapters/node/cli.ts", "token", "create", "--data-dir", dirs.alice, "--name", "cli"],
      { env: process.env },
    );
    const minted = stdout.trim();
    expect(minted).toMatch(/^inbx_alice\./);
    const res = await fetch(`${worker.url}/v1/accounts`, { headers: { authorization: `Bearer ${minted}` } });
    expect(res.status).toBe(200);
  });

  it("serves what a daemon answers sandboxed, off the origin every inbox shares, with no cookie but its own", async () => {
    const page = await fetch(`${worker.url}/`, { headers: { authorization: `Bearer ${tokens.alice}` } });
    expect(page.status).toBe(200);
    const policy = page.headers.get("content-security-policy") ?? "";
    expect(policy).toMatch(/^sandbox /);
    expect(policy).not.toContain("allow-same-origin");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    await page.arrayBuffer();
  });

  it("lets go of the daemon at once when the operator gives the inbox a new pairing secret", async () => {
    const bobs = daemons[1];
    const fresh = (await admin("/inboxes/bob/relay")).relaySecret as string;
    expect(fresh).not.toBe(secrets.bob);
    const deadline = Date.now() + 10_000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      status = (await fetch(`${worker.url}/v1/accounts`, { headers: { authorization: `Bearer ${tokens.bob}` } }))
        .status;
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(503);
    // Its daemon dials again with the old secret, and is refused.
    while (!/refused the pairing secret \(401\)/.test(bobs.output()) && Date.now() < deadline + 10_000)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(bobs.output()).toMatch(/refused the pairing secret \(401\)/);
    // Alice's relay is not touched.
    expect(
      (await fetch(`${worker.url}/v1/accounts`, { headers: { authorization: `Bearer ${tokens.alice}` } })).status,
    ).toBe(200);
  }, 30_000);
});
