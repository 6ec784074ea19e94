import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createStorage, type Storage } from "unstorage";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStorage } from "../adapters/node/sqlite-storage.ts";
import { createApp, type App } from "../src/app.ts";
import { ECHO_ID } from "../src/connectors/sandbox/contacts.ts";
import { seedDataset } from "../src/seed/dataset.ts";
import { ensureToken } from "../src/services/tokens.ts";
import { Db } from "../src/store/db.ts";

// 1,000 concurrent requests on ONE chat through app.fetch: sends, reactions on one message, edits of 1,000
// messages; then a new app over the same storage (the first one is not closed, so nothing is flushed for it)
// must show all of it.
const N = 1000;
const TOKEN = "concurrency-test-token";
const SENT_WORD = "quokkasend";
const EDIT_WORD = "wombatedit";

interface Message {
  id: string;
  sortKey: string;
  timestamp: string;
  text?: string;
  sendStatus?: { status: string };
  reactions?: { reactionKey: string }[];
}

function client(app: App) {
  return async (method: string, path: string, body?: unknown) => {
    const response = await app.fetch(
      new Request(`http://127.0.0.1:23373${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      }),
    );
    return { status: response.status, body: response.status === 204 ? null : await response.json() };
  };
}

async function seed(storage: Storage) {
  await seedDataset(await Db.open(storage), { chats: 12, messages: 300, seed: 5, now: Date.now() - 60_000 });
  await ensureToken(storage, TOKEN, { scopes: ["read", "write"] });
}

async function allMessages(call: ReturnType<typeof client>, chatID: string): Promise<Message[]> {
  const out: Message[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await call(
      "GET",
      `/v1/chats/${encodeURIComponent(chatID)}/messages${cursor ? `?cursor=${cursor}&direction=before` : ""}`,
    );
    expect(page.status).toBe(200);
    out.push(...page.body.items);
    if (!page.body.hasMore) return out;
    cursor = page.body.items[page.body.items.length - 1].sortKey;
  }
}

async function searchAll(call: ReturnType<typeof client>, word: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await call("GET", `/v1/messages/search?query=${word}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(page.status).toBe(200);
    ids.push(...page.body.items.map((m: Message) => m.id));
    if (!page.body.hasMore) return ids;
    cursor = page.body.oldestCursor;
  }
}

/** Everything the scenario wrote, checked through the API. */
async function verify(call: ReturnType<typeof client>, chatID: string, sentIDs: string[], edited: boolean) {
  const messages = await allMessages(call, chatID);
  const sortKeys = messages.map((m) => m.sortKey);
  expect(new Set(sortKeys).size, "distinct sortKeys").toBe(messages.length);
  expect(sortKeys, "newest first").toEqual([...sortKeys].sort().reverse());
  const stamps = messages.map((m) => Date.parse(m.timestamp));
  expect(stamps, "timestamps follow sortKeys").toEqual([...stamps].sort((a, b) => b - a));
  const byID = new Map(messages.map((m) => [m.id, m]));
  const texts = sentIDs.map((id) => byID.get(id)?.text);
  expect(texts).toEqual(sentIDs.map((_, i) => (edited ? `${EDIT_WORD} ${i}` : `${SENT_WORD} ${i}`)));
  const reacted = byID.get(sentIDs[0])!;
  expect(new Set(reacted.reactions?.map((r) => r.reactionKey))).toEqual(
    new Set(Array.from({ length: N }, (_, i) => `k${i}`)),
  );
  // Soft, so that a search failure still lets the restart half of the scenario run.
  const found = await searchAll(call, edited ? EDIT_WORD : SENT_WORD);
  expect.soft(found.length, "each match once").toBe(new Set(found).size);
  expect
    .soft(new Set(found), `search for ${edited ? EDIT_WORD : SENT_WORD} finds every message`)
    .toEqual(new Set(sentIDs));
}

async function waitUntilSent(call: ReturnType<typeof client>, chatID: string, ids: string[]) {
  for (let attempt = 0; attempt < 100; attempt++) {
    const byID = new Map((await allMessages(call, chatID)).map((m) => [m.id, m]));
    if (ids.every((id) => byID.get(id)?.sendStatus?.status === "SUCCESS")) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("sends did not settle");
}

async function scenario(storage: Storage, reopen: () => Promise<Storage>) {
  await seed(storage);
  const app = await createApp({ storage, rateLimit: false });
  const call = client(app);
  const chats = (await call("GET", "/v1/chats")).body.items as {
    id: string;
    participants: { items: { id: string }[] };
  }[];
  // Not the Echo chat: Echo would answer each of the 1,000 messages.
  const chatID = chats.find((c) => !c.participants.items.some((p) => p.id === ECHO_ID))!.id;
  const chatPath = `/v1/chats/${encodeURIComponent(chatID)}/messages`;

  const sends = await Promise.all(
    Array.from({ length: N }, (_, i) => call("POST", chatPath, { text: `${SENT_WORD} ${i}` })),
  );
  expect(sends.filter((r) => r.status !== 200)).toEqual([]);
  const sentIDs = sends.map((r) => r.body.pendingMessageID as string);
  expect(new Set(sentIDs).size).toBe(N);

  const reactions = await Promise.all(
    Array.from({ length: N }, (_, i) => call("POST", `${chatPath}/${sentIDs[0]}/reactions`, { reactionKey: `k${i}` })),
  );
  expect(reactions.filter((r) => r.status !== 200)).toEqual([]);
  await verify(call, chatID, sentIDs, false);

  await waitUntilSent(call, chatID, sentIDs);
  // Edits arrive in no particular order (many clients), so their postings reach the index out of order.
  const editOrder = sentIDs.map((_, i) => (i * 7919) % N);
  const edits = await Promise.all(
    editOrder.map((i) => call("PUT", `${chatPath}/${sentIDs[i]}`, { text: `${EDIT_WORD} ${i}` })),
  );
  expect(edits.filter((r) => r.status !== 200 || r.body.success !== true)).toEqual([]);
  await verify(call, chatID, sentIDs, true);

  // A second app over the same data, while the first was never closed: only acknowledged writes can be there.
  const restarted = await createApp({ storage: await reopen(), rateLimit: false });
  await verify(client(restarted), chatID, sentIDs, true);
  await restarted.close();
  await app.close();
}

describe("1,000 concurrent requests on one chat", () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it("memory storage: sends, reactions and edits all land, in order, and survive a restart", async () => {
    const storage = createStorage();
    await scenario(storage, async () => storage);
  }, 120_000);

  it("SQLite storage: the same, and a fresh connection to the file sees it all", async () => {
    const dir = mkdtempSync(join(tmpdir(), "inboxd-concurrency-"));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "inboxd.sqlite3");
    const first = await openSqliteStorage(path);
    cleanup.push(first.close);
    await scenario(first.storage, async () => {
      const second = await openSqliteStorage(path);
      cleanup.push(second.close);
      return second.storage;
    });
  }, 180_000);
});
