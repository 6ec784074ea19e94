import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../app.ts";
import { directChatID, ECHO_ID } from "../connectors/sandbox/contacts.ts";
import { seedDataset } from "../seed/dataset.ts";
import { Db } from "../store/db.ts";
import type { DomainEvent } from "../schema/events.ts";
import { announceTyping } from "./typing.ts";

describe("announceTyping", () => {
  let app: App;
  const heard: DomainEvent[] = [];

  beforeAll(async () => {
    const storage = createStorage();
    await seedDataset(await Db.open(storage), { chats: 4, messages: 20, accounts: 1, seed: 3 });
    app = await createApp({ storage });
    app.events.add({ deliver: (events) => void heard.push(...events) });
  });
  afterAll(() => app.close());

  const account = () => app.context.db.accounts[0];

  it("sends a known chat's typing notice to the live connections, as the protocol documents it", () => {
    heard.length = 0;
    const echo = app.context.db.chats.findNetwork(account().accountID, directChatID(ECHO_ID))!;
    announceTyping(app.context, account(), {
      type: "typing",
      networkChatID: echo.networkChatID,
      senderID: ECHO_ID,
      state: "typing",
      timeoutMs: 4000,
    });
    announceTyping(app.context, account(), {
      type: "typing",
      networkChatID: echo.networkChatID,
      senderID: ECHO_ID,
      state: "paused",
    });
    expect(heard.map((e) => e.chatID)).toEqual([echo.id, echo.id]);
    const [typing, paused] = heard.map((e) => JSON.parse(`{${e.body}`));
    expect(typing).toEqual({
      type: "typing",
      ts: typing.ts,
      chatID: echo.id,
      ids: [echo.id],
      typing: { participantID: ECHO_ID, state: "typing", timeoutMs: 4000 },
    });
    expect(Date.parse(typing.ts)).not.toBeNaN();
    // Without a timeout from the network, none is made up.
    expect(paused.typing).toEqual({ participantID: ECHO_ID, state: "paused" });
  });

  it("shows nothing for a chat this device does not know, and creates no chat for it", () => {
    heard.length = 0;
    const chats = app.context.db.chats.size;
    announceTyping(app.context, account(), {
      type: "typing",
      networkChatID: "dm:@stranger:sandbox.invalid",
      senderID: "@stranger:sandbox.invalid",
      state: "typing",
    });
    expect(heard).toEqual([]);
    expect(app.context.db.chats.size).toBe(chats);
  });
});
