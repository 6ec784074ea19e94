import { createStorage } from "unstorage";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type App } from "../app.ts";
import { seedDataset } from "../seed/dataset.ts";
import { Db } from "../store/db.ts";
import { updateChat } from "./chats.ts";
import { searchMessages, searchMessagesJSON, type MessageSearch } from "./message-search.ts";

/** GET /v1/messages/search answers searchMessagesJSON: the same page as searchMessages, with chats' JSON cached. */

const apps: App[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function seededApp(): Promise<App> {
  const storage = createStorage();
  await seedDataset(await Db.open(storage), { chats: 30, messages: 3000, accounts: 2, seed: 5 });
  const app = await createApp({ storage });
  apps.push(app);
  return app;
}

const text = async (app: App, q: MessageSearch) => {
  const json = (await searchMessagesJSON(app.context, q)).text;
  return typeof json === "string" ? json : new TextDecoder().decode(json);
};

describe("searchMessagesJSON", () => {
  it("is byte for byte the JSON of searchMessages, for words, filters, pages in both directions and no match", async () => {
    const app = await seededApp();
    const newest = await searchMessages(app.context, {});
    const words = [...new Set(newest.items.flatMap((m) => (m.text ?? "").toLowerCase().match(/\p{L}+/gu) ?? []))];
    expect(words.length).toBeGreaterThan(3);
    const queries: MessageSearch[] = [
      {},
      { query: words[0] },
      { query: `${words[1]} ${words[2]}` },
      { query: words[3], chatType: "group" },
      { query: words[0], accountIDs: [newest.items[0].accountID], limit: 5 },
      { query: "nowordlikethis" },
    ];
    for (const q of queries) {
      const page = await searchMessages(app.context, q);
      expect(await text(app, q), JSON.stringify(q)).toBe(JSON.stringify(page));
      if (page.oldestCursor) {
        const older = { ...q, cursor: page.oldestCursor, direction: "before" as const };
        expect(await text(app, older)).toBe(JSON.stringify(await searchMessages(app.context, older)));
        const newer = { ...q, cursor: page.oldestCursor, direction: "after" as const };
        expect(await text(app, newer)).toBe(JSON.stringify(await searchMessages(app.context, newer)));
      }
    }
  });

  it("shows a chat as it is now, not as it was when first shown beside a result", async () => {
    const app = await seededApp();
    const first = JSON.parse(await text(app, {}));
    const chatID = Object.keys(first.chats)[0];
    await updateChat(app.context, chatID, { title: "Renamed since" });
    const again = JSON.parse(await text(app, {}));
    expect(again.chats[chatID].title).toBe("Renamed since");
    expect(await text(app, {})).toBe(JSON.stringify(await searchMessages(app.context, {})));
  });
});
