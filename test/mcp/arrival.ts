/**
 * Inbound messages as an MCP session meets them: Echo's answers are listed and announced on /v1/ws as they arrive,
 * whatever the session asked for meanwhile, and wait_for_message returns only what came after the call began.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Chat, Page } from "../../src/schema/wire.ts";
import { ECHO_ID, enc, sleep } from "../kit/common.ts";
import { connect as connectWs, type Conn, type WsEvent } from "../events/kit.ts";
import { png } from "../assets/fixtures.ts";
import { ok, type Message } from "./kit.ts";
import type { McpEnv } from "./suite.ts";

/** The bound the issue sets from a message's arrival at inboxd to its being stored and announced. */
const ARRIVAL_BOUND_MS = 100;

export function arrivalTests(env: McpEnv) {
  let ws: Conn;
  beforeAll(async () => {
    ws = await connectWs(env.url, env.rw, ["*"]);
  });
  afterAll(() => ws?.close());

  const laneChats = async (): Promise<{ echo: Chat; group: Chat }> => {
    const accountID = (await env.api.get("/v1/accounts"))[env.lane].accountID;
    const chats = (await env.api.get<Page<Chat>>(`/v1/chats/search?accountIDs=${enc(accountID)}&limit=200`)).items;
    return {
      echo: chats.find((c) => c.participants.items.some((p) => p.id === ECHO_ID))!,
      group: chats.find((c) => c.type === "group")!,
    };
  };
  const announced = (chatID: string, text: string, from: number) =>
    ws.event("message.upserted", chatID, { from, where: (e) => e.entries!.some((m: Message) => m.text === text) });
  /**
   * How long after its arrival a message was stored and announced, from times inboxd itself wrote down: the message's
   * timestamp (Echo stamps it as it hands the message over) and the event's `ts` (taken as the commit that stores it
   * takes its batch; the event goes out once that batch is written). A busy machine delays the test's own reading of
   * the event, never these two; only a daemon that holds the message back widens the gap.
   */
  const lagOf = (event: WsEvent, text: string) => {
    const message = event.entries!.find((m: Message) => m.text === text) as Message & { timestamp: string };
    return Date.parse(event.ts) - Date.parse(message.timestamp);
  };

  it("lists and announces Echo's answer to a picture as it arrives, with no write after it (the whole session)", async () => {
    const { echo, group } = await laneChats();
    const from = ws.mark();
    const stamp = `${env.kind} ${Date.now()}`;
    await env.api.ok("POST", "/v0/send-message", { chatID: echo.id, text: `over v0 ${stamp}` });
    const text = await ok(env.client, "send_message", { chatID: echo.id, text: `over MCP ${stamp}` });
    const caption = `a picture ${stamp}`;
    const picture = await ok(env.client, "send_message", {
      chatID: echo.id,
      text: caption,
      attachment: { content: Buffer.from(png(40, 30)).toString("base64"), fileName: "dot.png", mimeType: "image/png" },
    });
    await ok(env.client, "add_reaction", {
      chatID: echo.id,
      messageID: text.structured.pendingMessageID,
      reactionKey: "👍",
    });
    await ok(env.client, "archive_chat", { chatID: group.id });
    await ok(env.client, "set_chat_reminder", { chatID: group.id, reminder: { remindAtMs: Date.now() + 3_600_000 } });
    await ok(env.client, "clear_chat_reminder", { chatID: group.id });
    // Nothing is written from here on: the answer to the picture comes, and is shown, on its own.
    const answer = `Echo: ${caption}`;
    const event = await announced(echo.id, answer, from);
    const listed = (await ok(env.client, "list_messages", { chatID: echo.id })).structured.items as Message[];
    expect(
      listed.find((m) => m.text === answer),
      `"${answer}" listed`,
    ).toMatchObject({ senderID: ECHO_ID, linkedMessageID: picture.structured.pendingMessageID });
    for (const said of [`over v0 ${stamp}`, `over MCP ${stamp}`, caption]) {
      const reply = `Echo: ${said}`;
      const lag = lagOf(said === caption ? event : await announced(echo.id, reply, from), reply);
      expect(lag, `ms from the arrival of "${reply}" to its event`).toBeLessThanOrEqual(ARRIVAL_BOUND_MS);
    }
    await ok(env.client, "archive_chat", { chatID: group.id, archived: false });
  });

  it("wait_for_message returns what was stored after the call began, never an older message that changes meanwhile", async () => {
    const { echo } = await laneChats();
    const from = ws.mark();
    const old = `old ${env.kind} ${Date.now()}`;
    await env.api.send(echo.id, old);
    const earlier = (await announced(echo.id, `Echo: ${old}`, from)).entries!.find(
      (m: Message) => m.text === `Echo: ${old}`,
    ) as Message;
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
      expect(structured.message, chatIDs ? "in the Echo chat" : "in any chat").toMatchObject({
        text: `Echo: ${fresh}`,
        senderID: ECHO_ID,
      });
      await ok(env.client, "remove_reaction", { chatID: echo.id, messageID: earlier.id, reactionKey: "👀" });
    }
  });
}
