import { createStorage, type Storage } from "unstorage";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, type App } from "../app.ts";
import { directChatID, ECHO_ID } from "../connectors/sandbox/contacts.ts";
import type { DomainEvent } from "../schema/events.ts";
import { seedDataset } from "../seed/dataset.ts";
import { Db } from "../store/db.ts";
import { keys } from "../store/records.ts";
import { ingest } from "./ingest.ts";
import { sendMessage } from "./messages.ts";

/**
 * What a connector reports becomes stored state and live events together: every inbound change is announced (and
 * logged, for resumes and webhooks) in the commit that stores it, from the account's first connect on.
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

const typeOf = (event: DomainEvent) => /^"type":"([^"]+)"/.exec(event.body)![1];

describe("ingest", () => {
  it("logs what an account's first connect delivers while the app starts", async () => {
    const storage = await seeded();
    // An account whose first sync has not run: the sandbox delivers its chats and their history as it connects.
    const db = await Db.open(storage);
    db.accounts[0].state = { ...db.accounts[0].state, synced: false };
    db.saveAccounts();
    await db.commit();
    const app = await createApp({ storage });
    apps.push(app);
    const page = await app.events.log.read(0);
    if ("gone" in page) throw new Error("the log is gone");
    const messages = page.events
      .filter((e) => typeOf(e) === "message.upserted")
      .flatMap((e) => JSON.parse(`{${e.body}`).entries as { id: string }[]);
    // Six direct chats and two groups with five messages each (src/connectors/sandbox/sandbox.ts initialSync).
    expect(messages).toHaveLength(40);
    for (const chat of new Set(messages.map((m) => m.id.split(".")[0]))) {
      const stored = app.context.db.chats.get(Number(chat))!;
      expect(
        page.events.some((e) => typeOf(e) === "chat.upserted" && e.chatID === stored.id),
        `chat.upserted for ${stored.title}`,
      ).toBe(true);
    }
    expect(
      page.events.some((e) => typeOf(e) === "account.upserted"),
      "the account's status changes",
    ).toBe(true);
  });

  it("writes and announces an inbound message whose commit failed, with no other write after it", async () => {
    const storage = await seeded();
    const app = await createApp({ storage });
    apps.push(app);
    const heard: DomainEvent[] = [];
    let failNext = false;
    const setItems = storage.setItems.bind(storage);
    storage.setItems = (items, options) => {
      if (!failNext) return setItems(items, options);
      failNext = false;
      return Promise.reject(new Error("storage unavailable"));
    };
    app.events.add({
      deliver(events) {
        heard.push(...events);
        // Echo is seen typing just before it answers: the commit that stores the answer is the one to fail.
        if (events.some((e) => typeOf(e) === "typing" && e.body.includes('"state":"typing"'))) failNext = true;
      },
    });
    const account = app.context.db.accounts[0];
    const echo = app.context.db.chats.findNetwork(account.accountID, directChatID(ECHO_ID))!;
    await sendMessage(app.context, echo.id, { text: "answer me" });
    const answered = (e: DomainEvent) =>
      typeOf(e) === "message.upserted" && e.chatID === echo.id && e.body.includes('"text":"Echo: answer me"');
    await vi.waitFor(() => expect(heard.some(answered)).toBe(true), { timeout: 5_000 });
    expect(failNext, "the answer's first commit failed").toBe(false);
    const logged = await app.events.log.read(0);
    expect("events" in logged && logged.events.some(answered), "in the event log").toBe(true);
  });

  it("applies a message's whole set of reactions, and an edit repeated with later changes only once", async () => {
    const app = await createApp({ storage: await seeded() });
    apps.push(app);
    const account = app.context.db.accounts[0];
    const echo = app.context.db.chats.findNetwork(account.accountID, directChatID(ECHO_ID))!;
    const networkChatID = echo.networkChatID;
    const emit = (event: Parameters<typeof ingest>[2]) => ingest(app.context, account, event);
    await emit({
      type: "message",
      networkChatID,
      message: { networkMessageID: "whole-1", senderID: ECHO_ID, timestamp: Date.now(), text: "first" },
    });
    const stored = async () =>
      (await app.context.db.message(
        echo.no,
        (await app.context.db.kv.get<number>(keys.networkMessage(echo.no, "whole-1")))!,
      ))!;
    const set = (reactions: { senderID: string; reactionKey: string }[]) =>
      emit({ type: "message-reactions", networkChatID, networkMessageID: "whole-1", reactions });
    await set([
      { senderID: ECHO_ID, reactionKey: "👍" },
      { senderID: "@bob:x", reactionKey: "🎉" },
      { senderID: "@bob:x", reactionKey: "👍" },
    ]);
    expect((await stored()).reactions!.map((r) => [r.participantID, r.reactionKey]).sort()).toEqual(
      [
        ["@bob:x", "🎉"],
        ["@bob:x", "👍"],
        [ECHO_ID, "👍"],
      ].sort(),
    );
    await set([{ senderID: "@bob:x", reactionKey: "👍" }]);
    expect((await stored()).reactions!.map((r) => [r.participantID, r.reactionKey])).toEqual([["@bob:x", "👍"]]);
    await set([]);
    expect((await stored()).reactions).toEqual([]);
    // The same edit again (a network that repeats it with every change of the message) changes and announces nothing.
    const heard: DomainEvent[] = [];
    app.events.add({ deliver: (events) => void heard.push(...events) });
    await emit({
      type: "edit",
      networkChatID,
      networkMessageID: "whole-1",
      text: "second",
      timestamp: 5,
      senderID: ECHO_ID,
    });
    expect((await stored()).text).toBe("second");
    const announced = heard.length;
    expect(announced).toBeGreaterThan(0);
    await emit({
      type: "edit",
      networkChatID,
      networkMessageID: "whole-1",
      text: "second",
      timestamp: 5,
      senderID: ECHO_ID,
    });
    await set([]);
    expect(heard.length).toBe(announced);
  });
});
