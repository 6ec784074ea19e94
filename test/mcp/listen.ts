/**
 * subscriptions/listen, the 2026-07-28 way to hear of changes without a session: a v2 SDK client opens a listen
 * stream for the unread overview and the resource list, a message arrives through REST, and the stream says which
 * resources changed; reading them again shows the message. On its own server, so its writes meet no other suite.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Chat, Page } from "../../src/schema/wire.ts";
import { randomToken, waitFor, type Start } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { endpoint } from "./kit.ts";

export function listenSuite(runtime: string, start: Start) {
  describe(`MCP 2026-07-28 subscriptions/listen on ${runtime}`, () => {
    let server: Awaited<ReturnType<Start>>;
    let client: Client;
    const token = randomToken("listen");
    beforeAll(async () => {
      server = await start({
        seed: { chats: 4, messages: 20, accounts: 1, seed: 21 },
        tokens: [{ token, scopes: ["read", "write"] }],
      });
      client = new Client({ name: "listen-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
      await client.connect(
        new StreamableHTTPClientTransport(endpoint(server.url, "streamable"), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
    }, 120_000);
    afterAll(async () => {
      await client?.close();
      await server?.stop();
    });

    it("announces the unread overview, the chat's messages and the resource list when a message arrives", async () => {
      const updated: string[] = [];
      let listChanged = 0;
      client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
      client.setNotificationHandler("notifications/resources/list_changed", () => void listChanged++);
      const chat = (await new Api(server.url, token).get<Page<Chat>>("/v1/chats?limit=1")).items[0];
      const chatURI = `inboxd://chats/${encodeURIComponent(chat.id)}/messages`;
      const subscription = await client.listen({
        resourcesListChanged: true,
        resourceSubscriptions: ["inboxd://unread", chatURI],
      });
      try {
        expect(subscription.honoredFilter).toMatchObject({
          resourcesListChanged: true,
          resourceSubscriptions: ["inboxd://unread", chatURI],
        });
        expect(await new Api(server.url, token).send(chat.id, "heard on the listen stream")).toBeTruthy();
        await waitFor(
          "the listen stream's notifications",
          () => updated.includes(chatURI) && updated.includes("inboxd://unread") && listChanged > 0,
          10_000,
        );
        const read = await client.readResource({ uri: chatURI });
        expect(JSON.stringify(read.contents)).toContain("heard on the listen stream");
      } finally {
        await subscription.close();
      }
      expect(await subscription.closed).toBe("local");
    });
  });
}
