/**
 * A big store answers its first chat pages before every chat is read (Db.reload's `early`): the app starts with the
 * chat snapshot's first part, and reads the rest between requests. Here the rest is held back (AppOptions.nextTurn)
 * until the test lets it go, so what may be answered early and what must wait is seen, not timed.
 */
import { createStorage } from "unstorage";
import { afterAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../src/app.ts";
import { seedDataset } from "../src/seed/dataset.ts";
import { ensureToken } from "../src/services/tokens.ts";
import { Db } from "../src/store/db.ts";
import { chatPath, sleep } from "./kit/common.ts";

const TOKEN = "early-start-test-token";
const storage = createStorage();
let app: App | undefined;
afterAll(() => app?.close());

function call(method: string, path: string, body?: unknown) {
  return app!
    .fetch(
      new Request(`http://127.0.0.1:23373${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      }),
    )
    .then(async (response) => ({ status: response.status, body: await response.json() }));
}

/** A request's answer, and whether it has come yet. */
function pending<T>(promise: Promise<T>) {
  const state = { done: false, answer: promise };
  void promise.then(() => (state.done = true));
  return state;
}

describe("starting early on a big store", () => {
  it("answers the first chat pages from the snapshot's first part; everything else waits for the rest, then runs", async () => {
    // 3,000 chats: a snapshot of several 512 KB parts.
    await seedDataset(await Db.open(storage), { chats: 3000, messages: 6000, accounts: 1, seed: 9 });
    await ensureToken(storage, TOKEN, { scopes: ["read", "write"] });
    const whole = (await Db.open(storage)).chats.all();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    app = await createApp({ storage, rateLimit: false, nextTurn: () => held });
    const db = app.context.db;
    expect(db.loading).toBeDefined();
    expect(db.chats.trustedRows).toBeGreaterThan(100);
    expect(db.chats.trustedRows).toBeLessThan(whole.length);

    // The first page and the next, as a full start-up lists them.
    const first = await call("GET", "/v1/chats");
    expect(first.status).toBe(200);
    expect(first.body.items.map((c: { id: string }) => c.id)).toEqual(whole.slice(0, 25).map((c) => c.id));
    expect(first.body.hasMore).toBe(true);
    const second = await call("GET", `/v1/chats?cursor=${encodeURIComponent(first.body.oldestCursor)}`);
    expect(second.body.items.map((c: { id: string }) => c.id)).toEqual(whole.slice(25, 50).map((c) => c.id));
    const unread = await call("GET", "/v1/chats/search?unreadOnly=true&limit=5");
    expect(unread.status).toBe(200);
    expect(db.chats.complete).toBe(false);

    // What needs more than the top of the list waits: a search that matches no chat, the oldest chats, a chat by
    // its ID, a send.
    const oldest = whole[whole.length - 1];
    const waiting = {
      search: pending(call("GET", "/v1/chats/search?query=nosuchwordanywhere")),
      oldest: pending(call("GET", "/v1/chats?direction=after")),
      chat: pending(call("GET", chatPath(oldest.id))),
      send: pending(call("POST", `${chatPath(oldest.id)}/messages`, { text: "sent while the chats were loading" })),
    };
    await sleep(100);
    expect(Object.entries(waiting).filter(([, w]) => w.done)).toEqual([]);
    expect(db.chats.complete).toBe(false);

    release();
    await db.loading;
    expect(db.chats.complete).toBe(true);
    const search = await waiting.search.answer;
    expect(search).toMatchObject({ status: 200, body: { items: [], hasMore: false } });
    const after = await waiting.oldest.answer;
    expect(after.status).toBe(200);
    expect(after.body.items.at(-1).id).toBe(oldest.id);
    expect((await waiting.chat.answer).body.id).toBe(oldest.id);
    const sent = await waiting.send.answer;
    expect(sent.status).toBe(200);
    // The send went to the chat, which now tops the list.
    const now = await call("GET", "/v1/chats");
    expect(now.body.items[0].id).toBe(oldest.id);
    expect(sent.body.chatID).toBe(oldest.id);
  });
});
