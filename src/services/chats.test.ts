import { createStorage, type Storage } from "unstorage";
import { afterEach, describe, expect, it, vi } from "vitest";
import { png } from "../../test/assets/fixtures.ts";
import { createApp, type App } from "../app.ts";
import { NetworkError, type NetworkClient, type NetworkConnector, type OutgoingFile } from "../bridges/connector.ts";
import { SandboxConnector } from "../connectors/sandbox/sandbox.ts";
import { ApiError } from "../errors.ts";
import { seedDataset } from "../seed/dataset.ts";
import { Db } from "../store/db.ts";
import { assetKey, uploadBase64 } from "./assets.ts";
import type { AssetRecord } from "../store/records.ts";
import { updateChat } from "./chats.ts";
import { createLabel, deleteLabel, listLabels } from "./labels.ts";
import { createToken } from "./tokens.ts";

/**
 * PATCH /v1/chats/{id}: the chat settings that live beyond one request (labels, timed mutes, pictures, draft
 * attachments), and the ones the network takes (picture, disappearing-message timer) on networks with and without.
 */

const apps: App[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function seeded(): Promise<Storage> {
  const storage = createStorage();
  await seedDataset(await Db.open(storage), { chats: 4, messages: 20, accounts: 1, seed: 3 });
  return storage;
}

/** An app over `storage` whose clock the test moves, recording what it asks the runtime to wake it for. */
async function open(
  storage: Storage,
  clock: { now: number; wakeAt?: number },
  uploadTtlMs?: number,
  connectors?: NetworkConnector[],
): Promise<App> {
  const app = await createApp({
    storage,
    now: () => clock.now,
    schedule: (at) => (clock.wakeAt = at),
    assets: { storage: createStorage(), uploadTtlMs },
    connectors,
  });
  apps.push(app);
  return app;
}

const uploadPicture = (app: App) =>
  uploadBase64(
    app.context,
    app.context.assets,
    { content: Buffer.from(png(2, 2)).toString("base64"), mimeType: "image/png" },
    ["content"],
  );

describe("labels", () => {
  it("survive a restart, on the label list and on chats", async () => {
    const storage = await seeded();
    const clock = { now: Date.now() };
    const app = await open(storage, clock);
    const [chat] = app.context.db.chats.all();
    const a = await createLabel(app.context, "Family");
    const b = await createLabel(app.context, "bills");
    await updateChat(app.context, chat.id, { labelIDs: [a.id, b.id] });
    await app.close();
    apps.splice(0);

    const again = await open(storage, clock);
    expect(listLabels(again.context)).toEqual([b, a]);
    expect(again.context.db.chats.find(chat.id)?.labelIDs).toEqual([a.id, b.id]);
  });

  it("a label deleted while a PATCH waits for its picture is refused, not stored on the chat", async () => {
    const app = await open(await seeded(), { now: Date.now() });
    const [chat] = app.context.db.chats.all();
    const label = await createLabel(app.context, "Contested");
    const picture = await uploadPicture(app);
    // The PATCH checks the label, then waits to look up the picture; the deletion lands during that wait.
    // Its refusal is caught at once: it may come before the deletion's own commit is done.
    const patching = updateChat(app.context, chat.id, { labelIDs: [label.id], imgURL: picture.id }).catch(
      (error: unknown) => error,
    );
    await deleteLabel(app.context, label.id);
    const refused = await patching;
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(422);
    expect(chat.labelIDs ?? []).toEqual([]);
  });
});

describe("timed mutes", () => {
  it("ask for a wake-up at their end and are cleared by it, also after a restart", async () => {
    const storage = await seeded();
    const clock: { now: number; wakeAt?: number } = { now: Date.UTC(2030, 0, 1) };
    const app = await open(storage, clock);
    const [first, second] = app.context.db.chats.all();
    await updateChat(app.context, first.id, { isMuted: true, mutedUntil: clock.now + 60_000 });
    await updateChat(app.context, second.id, { mutedUntil: clock.now + 120_000 });
    expect(clock.wakeAt).toBe(clock.now + 60_000);

    clock.now += 60_000;
    await app.wake();
    expect(first).toMatchObject({ isMuted: false, mutedUntil: undefined });
    expect(second).toMatchObject({ isMuted: true, mutedUntil: clock.now + 60_000 });
    expect(clock.wakeAt).toBe(clock.now + 60_000);
    await app.close();
    apps.splice(0);

    clock.now += 60_000;
    const again = await open(storage, clock);
    await again.wake();
    expect(again.context.db.chats.find(second.id)).toMatchObject({ isMuted: false, mutedUntil: undefined });
    expect(again.context.db.chats.find(first.id)?.isMuted).toBe(false);
    expect(clock.wakeAt).toBeUndefined();
  });
});

describe("chat pictures", () => {
  it("keep their upload past the time unsent uploads are deleted", async () => {
    const clock = { now: Date.now() };
    const app = await open(await seeded(), clock, 1000);
    const [chat] = app.context.db.chats.all();
    const kept = await uploadPicture(app);
    const unsent = await uploadPicture(app);
    await updateChat(app.context, chat.id, { imgURL: kept.id });
    clock.now += 2000;
    await app.wake();
    const stored = (id: string) => app.context.db.kv.get<AssetRecord>(assetKey(id));
    expect(await stored(unsent.id)).toBeUndefined();
    expect((await stored(kept.id))?.id).toBe(kept.id);
    expect(chat.imgURL).toBe(`localmxc://inboxd/${kept.id}`);
  });
});

describe("draft attachments", () => {
  it("keep their uploads past the time unsent uploads are deleted, let them go a day after the draft is cleared, and leave them sendable", async () => {
    const clock = { now: Date.now() };
    const app = await open(await seeded(), clock, 1000);
    const [chat, other] = app.context.db.chats.all();
    const [held, shared, unsent] = [await uploadPicture(app), await uploadPicture(app), await uploadPicture(app)];
    const stored = (id: string) => app.context.db.kv.get<AssetRecord>(assetKey(id));
    const draft = await updateChat(app.context, chat.id, {
      draft: { text: "", attachments: { a: { uploadID: held.id }, b: { uploadID: shared.id, type: "gif" } } },
    });
    expect(draft.draft?.attachments).toMatchObject({
      a: { id: "a", type: "file", uploadID: held.id, mimeType: "image/png", size: { width: 2, height: 2 } },
      b: { type: "gif" },
    });
    await updateChat(app.context, other.id, { draft: { text: "also", attachments: { c: { uploadID: shared.id } } } });
    clock.now += 2000;
    await app.wake();
    expect(await stored(unsent.id)).toBeUndefined();
    expect((await stored(held.id))?.usedAt).toBeUndefined();

    // Cleared: the uploads only this draft held expire a TTL later; the one another draft holds stays.
    await updateChat(app.context, chat.id, { draft: null });
    await app.wake();
    expect(await stored(held.id)).toBeDefined();
    clock.now += 2000;
    await app.wake();
    expect(await stored(held.id)).toBeUndefined();
    expect(await stored(shared.id)).toBeDefined();
  });
});

describe("settings the network takes", () => {
  const base = "http://127.0.0.1:23373";

  /** The seeded sandbox accounts, served by a client that `adapt` makes from the sandbox's own. */
  class Adapted implements NetworkConnector {
    readonly network = "sandbox";
    readonly displayName = "Sandbox";
    constructor(private readonly adapt: (client: NetworkClient) => NetworkClient) {}
    loadAccount(...args: Parameters<NetworkConnector["loadAccount"]>) {
      return this.adapt(new SandboxConnector().loadAccount(...args));
    }
  }
  /** A network with none of the optional chat settings: only the calls every client has. */
  const bare = (c: NetworkClient): NetworkClient => ({
    connect: () => c.connect(),
    disconnect: () => c.disconnect(),
    capabilities: (chat) => c.capabilities(chat),
    send: (id, m) => c.send(id, m),
  });

  async function serve(adapt: (client: NetworkClient) => NetworkClient) {
    const storage = await seeded();
    const app = await open(storage, { now: Date.now() }, undefined, [new Adapted(adapt)]);
    const { token } = await createToken(storage, { scopes: ["read", "write"] });
    const call = async (method: string, path: string, json?: unknown) => {
      const res = await app.fetch(
        new Request(base + path, {
          method,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: json === undefined ? undefined : JSON.stringify(json),
        }),
      );
      return { status: res.status, body: await res.json() };
    };
    const [chat] = app.context.db.chats.all().filter((c) => c.type === "group");
    return { app, call, chat, path: `/v1/chats/${encodeURIComponent(chat.id)}` };
  }

  it("a network without them: 422 NOT_SUPPORTED naming the field, and nothing of the PATCH applied", async () => {
    const { app, call, chat, path } = await serve(bare);
    const picture = await uploadPicture(app);
    for (const [field, value] of [
      ["imgURL", picture.id],
      ["messageExpirySeconds", 3600],
      ["messageExpirySeconds", 0],
    ] as const) {
      const res = await call("PATCH", path, { title: "Not applied", [field]: value });
      expect(res.status, field).toBe(422);
      expect(res.body).toMatchObject({ code: "NOT_SUPPORTED", details: { issues: [{ path: ["body", field] }] } });
      expect(res.body.message).toMatch(/not supported by this network/);
    }
    expect(chat.title).not.toBe("Not applied");
    // The account says so beforehand.
    expect((await call("GET", `/v1/accounts/${chat.accountID}`)).body.capabilities).toMatchObject({
      chatPictures: false,
      messageExpiry: false,
    });
    expect(chat.imgURL).toBeUndefined();
    expect(chat.messageExpirySeconds).toBeUndefined();
    // The upload was not kept as a picture: it can still be sent.
    expect((await app.context.db.kv.get<AssetRecord>(assetKey(picture.id)))?.usedAt).toBeUndefined();
    // Clearing what is not set changes nothing, so asks nothing of the network; the draft is this device's own.
    const cleared = await call("PATCH", path, {
      imgURL: null,
      messageExpirySeconds: null,
      draft: { text: "kept here", attachments: { a: { uploadID: picture.id } } },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body.draft).toMatchObject({ text: "kept here", attachments: { a: { uploadID: picture.id } } });
  });

  it("a network with them is given the picture's bytes and the timer before the chat shows them", async () => {
    const calls: unknown[][] = [];
    const read = async (file: OutgoingFile) => new Uint8Array(await new Response(file.open()).arrayBuffer());
    const { app, call, chat, path } = await serve((c) => ({
      ...bare(c),
      setChatAvatar: async (id, image) =>
        void calls.push(["avatar", id, image && { mimeType: image.info.mimeType, bytes: await read(image) }]),
      setMessageExpiry: async (id, seconds) => void calls.push(["expiry", id, seconds]),
    }));
    expect((await call("GET", `/v1/accounts/${chat.accountID}`)).body.capabilities).toMatchObject({
      chatPictures: true,
      messageExpiry: true,
    });
    const picture = await uploadPicture(app);
    const res = await call("PATCH", path, { imgURL: picture.id, messageExpirySeconds: 86_400 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ imgURL: `localmxc://inboxd/${picture.id}`, messageExpirySeconds: 86_400 });
    expect(calls).toEqual([
      ["avatar", chat.networkChatID, { mimeType: "image/png", bytes: new Uint8Array(png(2, 2)) }],
      ["expiry", chat.networkChatID, 86_400],
    ]);
    calls.length = 0;
    expect((await call("PATCH", path, { imgURL: null, messageExpirySeconds: null })).status).toBe(200);
    expect(calls).toEqual([
      ["avatar", chat.networkChatID, null],
      ["expiry", chat.networkChatID, 0],
    ]);
    // Unchanged values ask nothing of the network.
    calls.length = 0;
    expect((await call("PATCH", path, { imgURL: null, messageExpirySeconds: null })).status).toBe(200);
    expect(calls).toEqual([]);
  });

  it("notify-anyway: 422 NOT_SUPPORTED on a network without it (its capability false); the chat, after the network took it, on one with it", async () => {
    const without = await serve(bare);
    expect((await without.call("GET", `/v1/accounts/${without.chat.accountID}`)).body.capabilities).toMatchObject({
      notifyAnyway: false,
    });
    const refused = await without.call("POST", `${without.path}/notify-anyway`);
    expect(refused).toMatchObject({
      status: 422,
      body: { code: "NOT_SUPPORTED", message: "notify-anyway is not supported by this network" },
    });
    const calls: string[] = [];
    const withIt = await serve((c) => ({ ...bare(c), notifyAnyway: async (id) => void calls.push(id) }));
    expect((await withIt.call("GET", `/v1/accounts/${withIt.chat.accountID}`)).body.capabilities).toMatchObject({
      notifyAnyway: true,
    });
    const done = await withIt.call("POST", `${withIt.path}/notify-anyway`);
    expect(done).toMatchObject({ status: 200, body: { id: withIt.chat.id } });
    expect(calls).toEqual([withIt.chat.networkChatID]);
  });

  it("editing, deleting for everyone and reactions on a network without them: 422 NOT_SUPPORTED, as every missing feature", async () => {
    const { call, path } = await serve(bare);
    const sent = await call("POST", `${path}/messages`, { text: "mine" });
    expect(sent.status).toBe(200);
    const message = `${path}/messages/${encodeURIComponent(sent.body.pendingMessageID)}`;
    await vi.waitFor(async () => expect((await call("GET", message)).body.sendStatus).not.toBe("pending"));
    for (const [method, at, body] of [
      ["PUT", message, { text: "edited" }],
      ["DELETE", message, undefined],
      ["POST", `${message}/reactions`, { reactionKey: "👍" }],
    ] as const) {
      const res = await call(method, at, body);
      expect(res, `${method} ${at}`).toMatchObject({
        status: 422,
        body: { code: "NOT_SUPPORTED", message: expect.stringMatching(/not supported by this network/) },
      });
    }
  });

  it("a network that refuses: its error, and nothing stored", async () => {
    const { app, call, chat, path } = await serve((c) => ({
      ...bare(c),
      setChatAvatar: () => Promise.reject(new NetworkError("rejected", "only admins may change the picture")),
      setMessageExpiry: () => Promise.reject(new NetworkError("unavailable", "try later")),
    }));
    const picture = await uploadPicture(app);
    const refused = await call("PATCH", path, { imgURL: picture.id, isPinned: true });
    expect(refused).toMatchObject({
      status: 422,
      body: { code: "NETWORK_REJECTED", message: "only admins may change the picture" },
    });
    expect((await call("PATCH", path, { messageExpirySeconds: 60 })).status).toBe(503);
    expect([chat.imgURL, chat.messageExpirySeconds, chat.isPinned]).toEqual([undefined, undefined, false]);
    expect((await app.context.db.kv.get<AssetRecord>(assetKey(picture.id)))?.usedAt).toBeUndefined();
  });
});
