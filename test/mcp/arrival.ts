/** Inbound messages as an MCP session meets them: wait_for_message returns only what came after the call began. */
import { afterAll, beforeAll, expect, it } from "vitest";
import { connect as connectWs, ECHO_ID, enc, sleep, type Chat, type Conn, type Page } from "../events/kit.ts";
import { ok, type Message } from "./kit.ts";
import type { McpEnv } from "./suite.ts";

export function arrivalTests(env: McpEnv) {
  let ws: Conn;
  beforeAll(async () => {
    ws = await connectWs(env.url, env.rw, ["*"]);
  });
  afterAll(() => ws?.close());

  const laneChats = async (): Promise<{ echo: Chat }> => {
    const accountID = (await env.api.get("/v1/accounts"))[env.lane].accountID;
    const chats = (await env.api.get<Page<Chat>>(`/v1/chats/search?accountIDs=${enc(accountID)}&limit=200`)).items;
    return { echo: chats.find((c) => c.participants.items.some((p) => p.id === ECHO_ID))! };
  };
  const announced = (chatID: string, text: string, from: number) =>
    ws.event("message.upserted", chatID, { from, where: (e) => e.entries!.some((m: Message) => m.text === text) });

  it("wait_for_message returns what was stored after the call began, never an older message that changes meanwhile", async () => {
    const { echo } = await laneChats();
    const from = ws.mark();
    const old = `old ${env.kind} ${Date.now()}`;
    await env.api.send(echo.id, old);
    const earlier = (await announced(echo.id, `Echo: ${old}`, from)).entries!.find((m: Message) => m.text === `Echo: ${old}`) as Message;
    for (const chatIDs of [undefined, [echo.id]]) {
      const fresh = `fresh ${env.kind} ${chatIDs ? "in the chat" : "anywhere"} ${Date.now()}`;
      const waiting = ok(env.client, "wait_for_message", { ...(chatIDs ? { chatIDs } : {}), timeoutSeconds: 10 });
      // While the call waits, the earlier answer changes (a reaction: a message.upserted carrying it, stamped
      // seconds ago at most), then a new message comes in: only the new one was stored after the call began.
      const meanwhile = sleep(300).then(async () => {
        await ok(env.client, "add_reaction", { chatID: echo.id, messageID: earlier.id, reactionKey: "👀" });
        await env.api.send(echo.id, fresh);
      });
      const [{ structured }] = await Promise.all([waiting, meanwhile]);
      expect(structured.message, chatIDs ? "in the Echo chat" : "in any chat").toMatchObject({ text: `Echo: ${fresh}`, senderID: ECHO_ID });
      await ok(env.client, "remove_reaction", { chatID: echo.id, messageID: earlier.id, reactionKey: "👀" });
    }
  });
}
