import { createStorage, type Storage } from "unstorage";
import { afterEach, describe, expect, it } from "vitest";
import { png } from "../../test/assets/fixtures.ts";
import { createApp, type App } from "../app.ts";
import { ApiError } from "../http/errors.ts";
import { seedDataset } from "../seed/dataset.ts";
import { Db } from "../store/db.ts";
import { assetKey, uploadBase64, type AssetRecord } from "./assets.ts";
import { updateChat } from "./chats.ts";
import { createLabel, deleteLabel, listLabels } from "./labels.ts";

/** The chat settings of PATCH /v1/chats/{id} that live beyond one request: labels, timed mutes, pictures. */

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
async function open(storage: Storage, clock: { now: number; wakeAt?: number }, uploadTtlMs?: number): Promise<App> {
  const app = await createApp({
    storage,
    now: () => clock.now,
    schedule: (at) => (clock.wakeAt = at),
    assets: { storage: createStorage(), uploadTtlMs },
  });
  apps.push(app);
  return app;
}

const uploadPicture = (app: App) => uploadBase64(app.context, app.context.assets, { content: Buffer.from(png(2, 2)).toString("base64"), mimeType: "image/png" }, ["content"]);

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
    const patching = updateChat(app.context, chat.id, { labelIDs: [label.id], imgURL: picture.id });
    await deleteLabel(app.context, label.id);
    const refused = await patching.catch((error: unknown) => error);
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
