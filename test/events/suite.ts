/**
 * Live events (/v1/ws), reminders and webhooks, run against any runtime that serves the app. Each entry file
 * (node.test.ts, workerd.test.ts) calls `eventSuite` with its harness and adds what only its runtime has.
 *
 * Negative checks ("this connection got nothing") never sleep: every write's events are handed to the sockets
 * before its HTTP response, in commit order, and one connection's frames arrive in order. So after a later
 * "barrier" write on a chat the connection *is* subscribed to, everything that connection could have received
 * from the earlier writes is already in front of the barrier's event.
 */
import { LIMITS } from "../../src/schema/limits.ts";
import { ECHO_TYPING_TIMEOUT_MS } from "../../src/connectors/sandbox/sandbox.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Chat } from "../../src/schema/wire.ts";
import { chatPath, ECHO_ID, enc, messagePath, randomToken, sleep, type Start, waitFor } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { connect, open, Receiver, refusal, signatureValid, type Conn, type WsEvent } from "./kit.ts";

export const SEED = { chats: 20, messages: 300, accounts: 2, seed: 11 };

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export function eventSuite(name: string, start: Start) {
  describe(`live events, reminders and webhooks on ${name}`, () => {
    let stop: (() => Promise<void>) | undefined;
    let url: string;
    let rw: string;
    let ro: string;
    let api: Api;
    let accounts: { accountID: string }[];
    /** Quiet chats (nobody answers) of account 0: a, b; of account 1: barrier, and spares for the reminder tests. */
    let a: Chat, b: Chat, barrier: Chat, echo: Chat;
    let spare: Chat[];
    /** Every connection opened, to check seq numbering at the end. */
    const opened: Conn[] = [];

    const conn = async (chatIDs?: string[], token = rw) => {
      const c = await connect(url, token, chatIDs);
      opened.push(c);
      return c;
    };

    /** A write that changes nothing visible but produces chat.upserted on the barrier chat. */
    const poke = (chatID = barrier.id) => api.ok("POST", `${chatPath(chatID)}/archive`, { archived: false });

    /**
     * Makes a barrier write and waits until every given connection has its event (each must be subscribed to the
     * barrier chat or to "*"); from then on, whatever those connections got from earlier writes is in `frames`.
     */
    async function fence(...conns: Conn[]) {
      const marks = conns.map((c) => c.mark());
      await poke();
      await Promise.all(conns.map((c, i) => c.event("chat.upserted", barrier.id, { from: marks[i] })));
    }

    /** Chat IDs of the events a connection got since `from`, barrier events left out. */
    const chatsSeen = (c: Conn, from: number) =>
      c
        .events(from)
        .map((e) => e.chatID)
        .filter((id) => id !== barrier.id);

    beforeAll(async () => {
      rw = randomToken("rw");
      ro = randomToken("ro");
      const server = await start({
        seed: SEED,
        tokens: [
          { token: rw, scopes: ["read", "write"] },
          { token: ro, scopes: ["read"] },
        ],
      });
      stop = () => server.stop();
      url = server.url.replace(/\/$/, "");
      api = new Api(url, rw);
      accounts = await api.get("/v1/accounts");
      [a, b] = await api.quietChats(accounts[0].accountID, 2);
      [barrier, ...spare] = await api.quietChats(accounts[1].accountID, 9);
      echo = await api.echoChat(accounts[0].accountID);
    });

    afterAll(async () => {
      for (const c of opened) c.close();
      await stop?.();
    });

    // -------------------------------------------------------------------------------------------------------------
    describe("protocol", () => {
      it("sends the ready frame first, exactly", async () => {
        const c = await open(url, { token: rw });
        opened.push(c);
        const first = await c.next(() => true, { what: "the first frame" });
        expect(first).toEqual({ type: "ready", version: 1, chatIDs: [] });
        expect(c.frames).toHaveLength(1);
      });

      it("answers subscriptions.set with subscriptions.updated, echoing requestID and the chat IDs", async () => {
        const c = await conn();
        c.send({ type: "subscriptions.set", requestID: "r", chatIDs: [a.id, b.id] });
        expect(await c.next((f) => f.requestID === "r")).toEqual({
          type: "subscriptions.updated",
          requestID: "r",
          chatIDs: [a.id, b.id],
        });
        c.send({ type: "subscriptions.set", requestID: "star", chatIDs: ["*"] });
        expect(await c.next((f) => f.requestID === "star")).toEqual({
          type: "subscriptions.updated",
          requestID: "star",
          chatIDs: ["*"],
        });
        c.send({ type: "subscriptions.set", requestID: "pause", chatIDs: [] });
        expect(await c.next((f) => f.requestID === "pause")).toEqual({
          type: "subscriptions.updated",
          requestID: "pause",
          chatIDs: [],
        });
      });

      it("answers without requestID when the command had none", async () => {
        const c = await conn();
        const from = c.mark();
        c.send({ type: "subscriptions.set", chatIDs: [a.id] });
        expect(await c.next((f) => f.type === "subscriptions.updated", { from })).toEqual({
          type: "subscriptions.updated",
          chatIDs: [a.id],
        });
      });

      it('refuses "*" mixed with chat IDs with INVALID_PAYLOAD and keeps the previous subscriptions', async () => {
        const c = await conn([barrier.id]);
        c.send({ type: "subscriptions.set", requestID: "mix", chatIDs: ["*", a.id] });
        const answer = await c.next((f) => f.requestID === "mix");
        expect(answer).toMatchObject({ type: "error", requestID: "mix", code: "INVALID_PAYLOAD" });
        expect(typeof answer.message).toBe("string");
        // Still subscribed to the barrier chat only.
        const from = c.mark();
        await api.ok("PATCH", chatPath(a.id), { isPinned: false });
        await fence(c);
        expect(chatsSeen(c, from)).toEqual([]);
      });

      it("answers an unknown command with INVALID_COMMAND", async () => {
        const c = await conn();
        const answer = await c.request({ type: "subscriptions.add", requestID: "u", chatIDs: [a.id] });
        expect(answer).toMatchObject({ type: "error", requestID: "u", code: "INVALID_COMMAND" });
        expect(typeof answer.message).toBe("string");
        const noType = await c.request({ requestID: "nt", chatIDs: [a.id] });
        expect(noType).toMatchObject({ type: "error", requestID: "nt", code: "INVALID_COMMAND" });
      });

      it("closes a connection that sends a message over 256 KiB with 1009 (message too big)", async () => {
        const c = await conn();
        c.ws.send(
          JSON.stringify({
            type: "subscriptions.set",
            requestID: "big",
            chatIDs: ["x".repeat(LIMITS.webSocketMessageBytes)],
          }),
        );
        expect((await c.waitClosed()).code).toBe(1009);
      });

      it("answers malformed frames with INVALID_PAYLOAD and stays open", async () => {
        const c = await conn();
        const errorAfter = async (frame: string | Buffer, requestID?: string) => {
          const from = c.mark();
          c.ws.send(frame);
          const answer = await c.next((f) => f.type === "error", { from, what: `the error for ${String(frame)}` });
          expect(answer.code, `code for ${String(frame)}`).toBe("INVALID_PAYLOAD");
          if (requestID) expect(answer.requestID).toBe(requestID);
          expect(typeof answer.message).toBe("string");
        };
        await errorAfter("not json{");
        await errorAfter("[1,2]");
        await errorAfter('"subscriptions.set"');
        await errorAfter("null");
        await errorAfter("42");
        await errorAfter(Buffer.from('{"type":"subscriptions.set","chatIDs":["*"]}'));
        await errorAfter(JSON.stringify({ type: "subscriptions.set", requestID: "m" }), "m");
        await errorAfter(JSON.stringify({ type: "subscriptions.set", requestID: "s", chatIDs: a.id }), "s");
        await errorAfter(JSON.stringify({ type: "subscriptions.set", requestID: "n", chatIDs: [1] }), "n");
        await errorAfter(JSON.stringify({ type: "subscriptions.set", requestID: "e", chatIDs: [""] }), "e");
        await errorAfter(JSON.stringify({ type: "subscriptions.set", requestID: "o", chatIDs: { a: 1 } }), "o");
        expect(c.closed).toBeUndefined();
        // Still usable.
        await c.subscribe([barrier.id]);
        await fence(c);
        expect(c.closed).toBeUndefined();
      });

      it("refuses more than 10,000 chat IDs with INVALID_PAYLOAD, and accepts 1,000 real-looking ones", async () => {
        const c = await conn([barrier.id]);
        const many = Array.from({ length: 10_001 }, (_, i) => `!c${i}:x`);
        expect(await c.request({ type: "subscriptions.set", requestID: "many", chatIDs: many })).toMatchObject({
          type: "error",
          requestID: "many",
          code: "INVALID_PAYLOAD",
        });
        // Chat IDs as this server makes them are ~45 characters: 1,000 of them are ~47 KB of JSON.
        const thousand = Array.from(
          { length: 1000 },
          (_, i) => `!${i.toString(36).padStart(8, "0")}:local-sandbox_ba_0f63hnws.inboxd`,
        );
        const answer = await c.request({
          type: "subscriptions.set",
          requestID: "thousand",
          chatIDs: [barrier.id, ...thousand],
        });
        expect(answer).toMatchObject({ type: "subscriptions.updated", requestID: "thousand" });
        expect(answer.chatIDs).toHaveLength(1001);
        await fence(c);
      });

      it("numbers events per connection from 0 in steps of 1, with ISO timestamps", async () => {
        const c1 = await conn(["*"]);
        await fence(c1); // c1: seq 0
        const c2 = await conn(["*"]);
        for (let i = 0; i < 3; i++) await api.ok("PATCH", chatPath(a.id), { description: `seq test ${i}` });
        await fence(c1, c2);
        const e1 = c1.events();
        const e2 = c2.events();
        expect(e1.map((e) => e.seq)).toEqual(e1.map((_, i) => i));
        expect(e2.map((e) => e.seq)).toEqual(e2.map((_, i) => i));
        expect(e1.length).toBe(e2.length + 1);
        for (const e of [...e1, ...e2]) {
          expect(e.ts).toMatch(ISO);
          expect(Math.abs(Date.parse(e.ts) - Date.now())).toBeLessThan(60_000);
          expect(Object.keys(e).sort()).toEqual(expect.arrayContaining(["chatID", "ids", "seq", "ts", "type"]));
        }
      });

      it('delivers every chat to "*", and only the listed chats otherwise', async () => {
        const all = await conn(["*"]);
        const justA = await conn([a.id, barrier.id]);
        const marks = [all.mark(), justA.mark()];
        await api.ok("PATCH", chatPath(b.id), { description: "only for *" });
        await api.ok("PATCH", chatPath(a.id), { description: "for both" });
        await fence(all, justA);
        expect(chatsSeen(all, marks[0])).toEqual([b.id, a.id]);
        expect(chatsSeen(justA, marks[1])).toEqual([a.id]);
      });

      it("replaces subscriptions instead of adding to them", async () => {
        const c = await conn([a.id]);
        await c.subscribe([barrier.id]);
        const from = c.mark();
        await api.ok("PATCH", chatPath(a.id), { description: "not any more" });
        await fence(c);
        expect(chatsSeen(c, from)).toEqual([]);
      });

      it("sends nothing while paused with [], and resumes without a gap in seq", async () => {
        const c = await conn([a.id, barrier.id]);
        await fence(c);
        const before = c.events();
        await c.subscribe([]);
        const paused = c.mark();
        await api.ok("PATCH", chatPath(a.id), { description: "while paused" });
        await poke();
        await c.subscribe([barrier.id]);
        await fence(c);
        const after = c.events(paused);
        expect(after).toHaveLength(1);
        expect(after[0].chatID).toBe(barrier.id);
        expect(after[0].seq).toBe(before[before.length - 1].seq + 1);
      });
    });

    // -------------------------------------------------------------------------------------------------------------
    describe("events of every cause", () => {
      /** all: "*"; one: re-subscribed to each test's chat (plus the barrier); other: the barrier chat only. */
      let all: Conn, one: Conn, other: Conn;

      beforeAll(async () => {
        all = await conn(["*"]);
        one = await conn([]);
        other = await conn([barrier.id]);
      });

      /** Points `one` at the chat, and returns the positions to read each connection's new frames from. */
      async function watch(chatID: string) {
        await one.subscribe([chatID, barrier.id]);
        return { all: all.mark(), one: one.mark(), other: other.mark() };
      }

      /** After the fence, `other` must have got nothing but barrier events since its mark. */
      async function otherGotNothing(marks: { other: number }) {
        await fence(all, one, other);
        expect(chatsSeen(other, marks.other)).toEqual([]);
      }

      const last = (c: Conn, from: number, type: WsEvent["type"], chatID: string) => {
        const list = c.events(from).filter((e) => e.type === type && e.chatID === chatID);
        return list[list.length - 1];
      };

      it("send: message.upserted (pending then confirmed, or directly confirmed) and chat.upserted, with full entries", async () => {
        const marks = await watch(a.id);
        const text = `live send ${Date.now()}`;
        const id = await api.send(a.id, text);
        for (const c of [all, one]) {
          const from = c === all ? marks.all : marks.one;
          const first = await c.event("message.upserted", a.id, { from, where: (e) => e.ids.includes(id) });
          expect(first.entries?.[0]).toMatchObject({ id, chatID: a.id, text, isSender: true });
          expect((await api.message(a.id, id)).text).toBe(text);
          const confirmed = await c.event("message.upserted", a.id, {
            from,
            where: (e) => e.entries?.find((m) => m.id === id)?.sendStatus?.status === "SUCCESS",
          });
          expect(confirmed.ids).toEqual([id]);
          const chat = await c.event("chat.upserted", a.id, { from, where: (e) => e.entries?.[0]?.preview?.id === id });
          expect(chat.ids).toEqual([a.id]);
          // A pending version, if sent, comes before the confirmation.
          const statuses = c
            .events(from)
            .filter((e) => e.type === "message.upserted" && e.ids.includes(id))
            .map((e) => e.entries![0].sendStatus?.status);
          expect(statuses[statuses.length - 1]).toBe("SUCCESS");
          expect(statuses.filter((s) => s !== "PENDING" && s !== "SUCCESS")).toEqual([]);
          if (statuses.includes("PENDING"))
            expect(statuses.indexOf("PENDING")).toBeLessThan(statuses.indexOf("SUCCESS"));
          // message.upserted comes before the chat.upserted whose preview points at it.
          expect(first.seq).toBeLessThan(chat.seq);
        }
        await otherGotNothing(marks);
        // The entries are the objects GET answers (once nothing is in flight any more).
        expect(last(all, marks.all, "message.upserted", a.id).entries![0]).toEqual(await api.message(a.id, id));
        expect(last(all, marks.all, "chat.upserted", a.id).entries![0]).toEqual(await api.chat(a.id));
        expect(last(one, marks.one, "chat.upserted", a.id).entries![0]).toEqual(await api.chat(a.id));
      });

      it("inbound: Echo's reply arrives as message.upserted from the network", async () => {
        const marks = await watch(echo.id);
        const text = `hello echo ${Date.now()}`;
        const id = await api.send(echo.id, text);
        for (const [c, from] of [
          [all, marks.all],
          [one, marks.one],
        ] as const) {
          const reply = await c.event("message.upserted", echo.id, {
            from,
            where: (e) => e.entries?.some((m) => m.senderID === ECHO_ID && m.linkedMessageID === id) ?? false,
          });
          const entry = reply.entries!.find((m) => m.senderID === ECHO_ID)!;
          expect(entry).toMatchObject({ chatID: echo.id, text: `Echo: ${text}`, isSender: false });
          // Visible to GET by the time the event is.
          expect((await api.message(echo.id, entry.id)).text).toBe(`Echo: ${text}`);
          await c.event("chat.upserted", echo.id, { from, where: (e) => e.entries?.[0]?.preview?.id === entry.id });
        }
        await otherGotNothing(marks);
        const reply = last(all, marks.all, "message.upserted", echo.id);
        expect(reply.entries![0]).toEqual(await api.message(echo.id, reply.ids[0]));
      });

      it("edit (PUT): message.upserted with the new text", async () => {
        const id = await api.send(a.id, "before the edit");
        await api.settled(a.id, id);
        const marks = await watch(a.id);
        const edited = await api.ok("PUT", messagePath(a.id, id), { text: "after the edit" });
        for (const [c, from] of [
          [all, marks.all],
          [one, marks.one],
        ] as const) {
          const e = await c.event("message.upserted", a.id, { from, where: (x) => x.ids.includes(id) });
          expect(e.ids).toEqual([id]);
          expect(e.entries![0]).toMatchObject({ id, text: "after the edit" });
          expect(e.entries![0].editedTimestamp).toMatch(ISO);
        }
        await otherGotNothing(marks);
        const entry = last(all, marks.all, "message.upserted", a.id).entries![0];
        expect(entry).toEqual(await api.message(a.id, id));
        expect(entry.editedTimestamp).toBe(edited.editedTimestamp);
      });

      it("delete: message.deleted with the ID (no entries), then the chat with its new preview", async () => {
        const keep = await api.send(a.id, "stays");
        await api.settled(a.id, keep);
        const gone = await api.send(a.id, "goes away");
        await api.settled(a.id, gone);
        const marks = await watch(a.id);
        expect((await api.raw("DELETE", messagePath(a.id, gone))).status).toBe(204);
        for (const [c, from] of [
          [all, marks.all],
          [one, marks.one],
        ] as const) {
          const e = await c.event("message.deleted", a.id, { from });
          expect(e.ids).toEqual([gone]);
          expect(e.entries).toBeUndefined();
          const chat = await c.event("chat.upserted", a.id, { from });
          expect(chat.entries![0].preview?.id).toBe(keep);
          expect(chat.seq).toBeGreaterThan(e.seq);
        }
        expect((await api.raw("GET", messagePath(a.id, gone))).status).toBe(404);
        await otherGotNothing(marks);
        expect(last(all, marks.all, "chat.upserted", a.id).entries![0]).toEqual(await api.chat(a.id));
      });

      it("reaction add: message.upserted carrying the response's transactionID (server-made and client-given)", async () => {
        const id = await api.send(a.id, "react to me");
        await api.settled(a.id, id);
        const marks = await watch(a.id);
        const made = await api.ok("POST", `${messagePath(a.id, id)}/reactions`, { reactionKey: "👍" });
        expect(typeof made.transactionID).toBe("string");
        expect(made.transactionID.length).toBeGreaterThan(0);
        for (const [c, from] of [
          [all, marks.all],
          [one, marks.one],
        ] as const) {
          const e = await c.event("message.upserted", a.id, { from, where: (x) => x.ids.includes(id) });
          expect(e.transactionID).toBe(made.transactionID);
          expect(e.entries![0].reactions).toEqual(
            expect.arrayContaining([expect.objectContaining({ reactionKey: "👍" })]),
          );
        }
        const mine = `client-txn-${Date.now()}`;
        const from = [all.mark(), one.mark()];
        const given = await api.ok("POST", `${messagePath(a.id, id)}/reactions`, {
          reactionKey: "🎉",
          transactionID: mine,
        });
        expect(given.transactionID).toBe(mine);
        for (const [c, f] of [
          [all, from[0]],
          [one, from[1]],
        ] as const) {
          const e = await c.event("message.upserted", a.id, { from: f, where: (x) => x.ids.includes(id) });
          expect(e.transactionID).toBe(mine);
          expect(e.entries![0].reactions.map((r: { reactionKey: string }) => r.reactionKey)).toEqual(
            expect.arrayContaining(["👍", "🎉"]),
          );
        }
        await otherGotNothing(marks);
        expect(last(all, marks.all, "message.upserted", a.id).entries![0]).toEqual(await api.message(a.id, id));
      });

      it("reaction remove: message.upserted without the reaction", async () => {
        const id = await api.send(a.id, "react and take it back");
        await api.settled(a.id, id);
        await api.ok("POST", `${messagePath(a.id, id)}/reactions`, { reactionKey: "❤️" });
        const marks = await watch(a.id);
        await api.ok("DELETE", `${messagePath(a.id, id)}/reactions?reactionKey=${enc("❤️")}`, undefined, 200);
        for (const [c, from] of [
          [all, marks.all],
          [one, marks.one],
        ] as const) {
          const e = await c.event("message.upserted", a.id, { from, where: (x) => x.ids.includes(id) });
          expect((e.entries![0].reactions ?? []).some((r: { reactionKey: string }) => r.reactionKey === "❤️")).toBe(
            false,
          );
        }
        await otherGotNothing(marks);
        expect(last(all, marks.all, "message.upserted", a.id).entries![0]).toEqual(await api.message(a.id, id));
      });

      /** A chat action with one chat.upserted; `check` looks at the chat entry. */
      async function chatAction(
        what: string,
        chatID: string,
        act: () => Promise<unknown>,
        check: (chat: Chat) => void,
      ) {
        const marks = await watch(chatID);
        await act();
        for (const [c, from] of [
          [all, marks.all],
          [one, marks.one],
        ] as const) {
          const e = await c.event("chat.upserted", chatID, { from });
          expect(e.ids, what).toEqual([chatID]);
          expect(e.entries, what).toHaveLength(1);
          check(e.entries![0]);
        }
        check(await api.chat(chatID));
        await otherGotNothing(marks);
        expect(last(all, marks.all, "chat.upserted", chatID).entries![0], what).toEqual(await api.chat(chatID));
      }

      it("focus (POST /v1/focus): a focus event with what was asked, to the chat's subscribers; nothing stored", async () => {
        const marks = await watch(b.id);
        const message = (await api.get(`${chatPath(b.id)}/messages`)).items[0];
        expect(
          await api.ok("POST", "/v1/focus", { chatID: b.id, messageID: message.id, draftText: "half-typed" }),
        ).toEqual({ success: true });
        for (const [c, from] of [
          [all, marks.all],
          [one, marks.one],
        ] as const) {
          const e = (await c.next((f) => f.type === "focus" && f.chatID === b.id, {
            from,
            what: "the focus event",
          })) as Record<string, any>;
          expect(e).toMatchObject({
            ids: [b.id],
            focus: { chatID: b.id, messageID: message.id, draftText: "half-typed" },
          });
          expect(typeof e.seq).toBe("number");
        }
        await otherGotNothing(marks);
        // Without a chat, only connections subscribed to every chat hear it.
        const bare = all.mark();
        await api.ok("POST", "/v1/focus", {});
        expect(
          await all.next((f) => f.type === "focus", { from: bare, what: "the chat-less focus event" }),
        ).toMatchObject({ chatID: "", ids: [] });
      });

      /** The typing events of a chat since `from`, in order. */
      const typingOn = (c: Conn, from: number, chatID: string) =>
        c.events(from).filter((e) => e.type === "typing" && e.chatID === chatID);

      it("typing (inbound): Echo is seen typing before it answers and paused after; only the chat's subscribers hear it", async () => {
        const marks = await watch(echo.id);
        const id = await api.send(echo.id, `typing first ${Date.now()}`);
        for (const [c, from] of [
          [all, marks.all],
          [one, marks.one],
        ] as const) {
          const reply = await c.event("message.upserted", echo.id, {
            from,
            where: (e) => e.entries?.some((m) => m.senderID === ECHO_ID && m.linkedMessageID === id) ?? false,
          });
          const paused = await c.event("typing", echo.id, {
            from,
            where: (e) => e.seq > reply.seq && e.typing?.state === "paused",
          });
          const before = typingOn(c, from, echo.id).filter((e) => e.seq < reply.seq);
          expect(
            before.map((e) => e.typing?.state),
            "typing notices before the reply",
          ).toEqual(["typing"]);
          // The whole event, exactly: the chat, and who is typing for how long.
          expect(before[0]).toEqual({
            type: "typing",
            seq: before[0].seq,
            ts: before[0].ts,
            chatID: echo.id,
            ids: [echo.id],
            typing: { participantID: ECHO_ID, state: "typing", timeoutMs: ECHO_TYPING_TIMEOUT_MS },
          });
          expect(before[0].ts).toMatch(ISO);
          expect(paused).toEqual({
            type: "typing",
            seq: paused.seq,
            ts: paused.ts,
            chatID: echo.id,
            ids: [echo.id],
            typing: { participantID: ECHO_ID, state: "paused" },
          });
        }
        await otherGotNothing(marks);
      });

      it("typing (outbound): POST …/typing answers {chatID, state} and reaches the network (Echo mirrors it); nothing is stored", async () => {
        const marks = await watch(echo.id);
        const chatBefore = await api.chat(echo.id);
        for (const state of ["typing", "paused"] as const) {
          const from = { all: all.mark(), one: one.mark() };
          expect(await api.ok("POST", `${chatPath(echo.id)}/typing`, { state })).toEqual({ chatID: echo.id, state });
          for (const [c, at] of [
            [all, from.all],
            [one, from.one],
          ] as const) {
            const e = await c.event("typing", echo.id, { from: at });
            expect(e.typing).toEqual({
              participantID: ECHO_ID,
              state,
              ...(state === "typing" ? { timeoutMs: ECHO_TYPING_TIMEOUT_MS } : {}),
            });
          }
        }
        await otherGotNothing(marks);
        // Typing changed nothing stored: no chat.upserted or message event for the chat, and the chat reads the same.
        expect(
          all
            .events(marks.all)
            .filter((e) => e.chatID === echo.id)
            .map((e) => e.type),
        ).toEqual(["typing", "typing"]);
        expect(await api.chat(echo.id)).toEqual(chatBefore);
        // In a chat where nobody mirrors it, it goes out and nothing comes back.
        const quiet = all.mark();
        expect(await api.ok("POST", `${chatPath(a.id)}/typing`, { state: "typing" })).toEqual({
          chatID: a.id,
          state: "typing",
        });
        await fence(all);
        expect(typingOn(all, quiet, a.id)).toEqual([]);
      });

      it("archive and unarchive: chat.upserted with isArchived", async () => {
        await chatAction(
          "archive",
          b.id,
          () => api.ok("POST", `${chatPath(b.id)}/archive`, { archived: true }),
          (c) => expect(c.isArchived).toBe(true),
        );
        await chatAction(
          "unarchive",
          b.id,
          () => api.ok("POST", `${chatPath(b.id)}/archive`, { archived: false }),
          (c) => expect(c.isArchived).toBe(false),
        );
      });

      it("unread and read: chat.upserted with isMarkedUnread / unreadCount", async () => {
        await chatAction(
          "unread",
          b.id,
          () => api.ok("POST", `${chatPath(b.id)}/unread`, {}),
          (c) => expect(c.isMarkedUnread).toBe(true),
        );
        await chatAction(
          "read",
          b.id,
          () => api.ok("POST", `${chatPath(b.id)}/read`, {}),
          (c) => {
            expect(c.isMarkedUnread).toBe(false);
            expect(c.unreadCount).toBe(0);
          },
        );
      });

      it("PATCH: chat.upserted with the new fields", async () => {
        const title = `Renamed ${Date.now()}`;
        await chatAction(
          "patch",
          b.id,
          () => api.ok("PATCH", chatPath(b.id), { title, isPinned: true, isMuted: true }),
          (c) => {
            expect(c.title).toBe(title);
            expect(c.isPinned).toBe(true);
            expect(c.isMuted).toBe(true);
          },
        );
        await chatAction(
          "patch back",
          b.id,
          () => api.ok("PATCH", chatPath(b.id), { title: null, isPinned: false, isMuted: false }),
          (c) => {
            expect(c.title).not.toBe(title);
            expect(c.isPinned).toBe(false);
          },
        );
      });

      it("reminder set and clear: chat.upserted with and without the reminder", async () => {
        const at = Date.now() + 3_600_000;
        await chatAction(
          "set reminder",
          b.id,
          () => api.ok("POST", `${chatPath(b.id)}/reminders`, { reminder: { remindAtMs: at } }),
          (c) => expect(c.reminder).toMatchObject({ remindAtMs: at, isFired: false, dismissOnIncomingMessage: false }),
        );
        await chatAction(
          "clear reminder",
          b.id,
          () => api.ok("DELETE", `${chatPath(b.id)}/reminders`),
          (c) => expect(c.reminder ?? undefined).toBeUndefined(),
        );
      });

      it("chat creation (POST /v1/chats): chat.upserted for the new chat", async () => {
        const contacts: { items: { id: string }[] } = await api.get(
          `/v1/accounts/${enc(accounts[0].accountID)}/contacts/list?limit=50`,
        );
        const people = contacts.items
          .filter((u) => u.id !== ECHO_ID)
          .slice(0, 2)
          .map((u) => u.id);
        const marks = { all: all.mark(), other: other.mark() };
        const created = await api.ok("POST", "/v1/chats", {
          accountID: accounts[0].accountID,
          type: "group",
          participantIDs: people,
          title: `Live group ${Date.now()}`,
        });
        const e = await all.event("chat.upserted", created.chatID, { from: marks.all });
        expect(e.ids).toEqual([created.chatID]);
        expect(e.entries![0]).toEqual(await api.chat(created.chatID));
        await otherGotNothing(marks);
      });

      it("login added then removed: chat.upserted for its chats, then chat.deleted for each", async () => {
        const marks = { all: all.mark(), other: other.mark() };
        const bridge = "/v1/bridges/local-sandbox";
        const session = await api.ok("POST", `${bridge}/login-sessions`, { flowID: "password" });
        const sid = session.loginSessionID as string;
        const username = `live${Date.now().toString(36)}`;
        await api.ok("POST", `${bridge}/login-sessions/${enc(sid)}/steps/sandbox.password.credentials`, {
          type: "user_input",
          fields: { username, password: "sandbox" },
        });
        const done = await api.ok("POST", `${bridge}/login-sessions/${enc(sid)}/steps/sandbox.password.code`, {
          type: "user_input",
          fields: { code: "123456" },
        });
        const loginID = done.loginID as string;
        const accountID = done.accountID as string;
        expect(loginID).toBeTruthy();
        expect(accountID).toBeTruthy();
        // The account's first chats arrive from the network (8 in the sandbox).
        const chats = await waitFor(
          "the new account's chats",
          async () => {
            const list = await api.chats(`accountIDs=${enc(accountID)}`);
            return list.length >= 8 && list;
          },
          10_000,
        );
        for (const chat of chats) await all.event("chat.upserted", chat.id, { from: marks.all });
        const watched = chats[0].id;
        const sub = await conn([watched]);
        const subFrom = sub.mark();
        const fromAll = all.mark();
        const removed = await api.ok("POST", `${bridge}/logins/${enc(loginID)}/remove`, { scope: "current-device" });
        expect(removed.success).toBe(true);
        for (const chat of chats) {
          const e = await all.event("chat.deleted", chat.id, { from: fromAll });
          expect(e.ids).toEqual([chat.id]);
          expect(e.entries).toBeUndefined();
          expect((await api.raw("GET", chatPath(chat.id))).status).toBe(404);
        }
        const own = await sub.event("chat.deleted", watched, { from: subFrom });
        expect(own.ids).toEqual([watched]);
        await otherGotNothing(marks);
        // The subscribed connection got only its chat's deletion.
        expect(sub.events(subFrom).map((e) => `${e.type} ${e.chatID}`)).toEqual([`chat.deleted ${watched}`]);
      });
    });

    // -------------------------------------------------------------------------------------------------------------
    describe("auth on upgrade", () => {
      it("refuses a connection without a token with 401 before upgrading", async () => {
        const r = await refusal(url, { token: null });
        expect(r.status).toBe(401);
        expect(JSON.parse(r.body)).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      });

      it("refuses Origin: null (sandboxed iframes, file:// pages) with 403 before upgrading", async () => {
        expect((await refusal(url, { token: rw, origin: "null" })).status).toBe(403);
      });

      it("refuses a bad token with 401", async () => {
        expect((await refusal(url, { token: randomToken("bad") })).status).toBe(401);
        expect((await refusal(url, { token: null, headers: { authorization: "Basic dXNlcjpwYXNz" } })).status).toBe(
          401,
        );
      });

      it("accepts a read-only token, which then gets events", async () => {
        const c = await conn([barrier.id], ro);
        await fence(c);
        expect(c.events().length).toBeGreaterThan(0);
      });

      it("accepts the token as a Sec-WebSocket-Protocol entry bearer.<token> and selects inboxd.v1", async () => {
        const c = await open(url, { token: null, protocols: ["inboxd.v1", `bearer.${ro}`] });
        opened.push(c);
        expect(c.ws.protocol).toBe("inboxd.v1");
        await c.next((f) => f.type === "ready");
        await c.subscribe([barrier.id]);
        await fence(c);
        expect(c.events()).toHaveLength(1);
      });

      it("refuses a bad token in Sec-WebSocket-Protocol with 401", async () => {
        expect(
          (await refusal(url, { token: null, protocols: ["inboxd.v1", `bearer.${randomToken("bad")}`] })).status,
        ).toBe(401);
      });

      it("refuses an upgrade a browser marks Sec-Fetch-Site: cross-site with 403", async () => {
        expect((await refusal(url, { token: rw, headers: { "sec-fetch-site": "cross-site" } })).status).toBe(403);
      });

      it("answers GET /v1/ws without an upgrade with 426 and a JSON error", async () => {
        const res = await api.raw("GET", "/v1/ws");
        expect(res.status).toBe(426);
        expect(res.headers.get("content-type")).toMatch(/application\/json/);
        expect(res.body).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      });
    });

    // -------------------------------------------------------------------------------------------------------------
    describe("reminders", () => {
      it("fires at its time: GET shows isFired and firedAt, and a chat.upserted announces it", async () => {
        const chat = spare[0];
        const c = await conn([chat.id]);
        const at = Date.now() + 1500;
        expect(
          (await api.raw("POST", `${chatPath(chat.id)}/reminders`, { json: { reminder: { remindAtMs: at } } })).status,
        ).toBe(204);
        const set = await api.chat(chat.id);
        expect(set.reminder).toMatchObject({
          remindAtMs: at,
          remindAt: new Date(at).toISOString(),
          isFired: false,
          dismissOnIncomingMessage: false,
        });
        expect(set.reminder?.firedAt).toBeUndefined();
        const fired = await c.event("chat.upserted", chat.id, {
          timeoutMs: 10_000,
          where: (e) => e.entries?.[0]?.reminder?.isFired === true,
        });
        expect(Date.now()).toBeGreaterThanOrEqual(at);
        const now = await api.chat(chat.id);
        expect(now.reminder).toMatchObject({ remindAtMs: at, isFired: true });
        expect(now.reminder?.firedAt).toMatch(ISO);
        expect(Date.parse(now.reminder!.firedAt!)).toBeGreaterThanOrEqual(at);
        expect(fired.entries![0]).toEqual(now);
        await api.ok("DELETE", `${chatPath(chat.id)}/reminders`);
      });

      it("accepts remindAt as an ISO date (5.0.0 clients) and fires it too", async () => {
        const chat = spare[1];
        const at = new Date(Date.now() + 1000).toISOString();
        await api.ok("POST", `${chatPath(chat.id)}/reminders`, { reminder: { remindAt: at } });
        expect((await api.chat(chat.id)).reminder?.remindAt).toBe(at);
        await waitFor("the reminder to fire", async () => (await api.chat(chat.id)).reminder?.isFired, 10_000, 100);
        await api.ok("DELETE", `${chatPath(chat.id)}/reminders`);
      });

      it("a reminder already in the past fires at once; setting a new one resets isFired", async () => {
        const chat = spare[2];
        const c = await conn([chat.id]);
        const past = Date.now() - 60_000;
        await api.ok("POST", `${chatPath(chat.id)}/reminders`, { reminder: { remindAtMs: past } });
        await c.event("chat.upserted", chat.id, { where: (e) => e.entries?.[0]?.reminder?.isFired === true });
        expect((await api.chat(chat.id)).reminder).toMatchObject({ remindAtMs: past, isFired: true });
        const later = Date.now() + 3_600_000;
        await api.ok("POST", `${chatPath(chat.id)}/reminders`, { reminder: { remindAtMs: later } });
        const reset = (await api.chat(chat.id)).reminder;
        expect(reset).toMatchObject({ remindAtMs: later, isFired: false });
        expect(reset?.firedAt).toBeUndefined();
        await api.ok("DELETE", `${chatPath(chat.id)}/reminders`);
      });

      it("several reminders each fire at their own time; clearing the earliest keeps the others", async () => {
        const [x, y, z] = spare.slice(3, 6);
        const c = await conn([x.id, y.id, z.id]);
        const now = Date.now();
        await api.ok("POST", `${chatPath(x.id)}/reminders`, { reminder: { remindAtMs: now + 2400 } });
        await api.ok("POST", `${chatPath(y.id)}/reminders`, { reminder: { remindAtMs: now + 1500 } });
        await api.ok("POST", `${chatPath(z.id)}/reminders`, { reminder: { remindAtMs: now + 900 } });
        await api.ok("DELETE", `${chatPath(z.id)}/reminders`);
        const firedY = await c.event("chat.upserted", y.id, {
          timeoutMs: 10_000,
          where: (e) => e.entries?.[0]?.reminder?.isFired === true,
        });
        const firedX = await c.event("chat.upserted", x.id, {
          timeoutMs: 10_000,
          where: (e) => e.entries?.[0]?.reminder?.isFired === true,
        });
        expect(Date.parse(firedY.entries![0].reminder.firedAt)).toBeGreaterThanOrEqual(now + 1500);
        expect(Date.parse(firedX.entries![0].reminder.firedAt)).toBeGreaterThanOrEqual(now + 2400);
        expect(firedY.seq).toBeLessThan(firedX.seq);
        expect((await api.chat(x.id)).reminder?.isFired).toBe(true);
        expect((await api.chat(z.id)).reminder ?? undefined).toBeUndefined();
        expect(c.events().filter((e) => e.chatID === z.id && e.entries?.[0]?.reminder)).toHaveLength(1); // only the set
        for (const chat of [x, y]) await api.ok("DELETE", `${chatPath(chat.id)}/reminders`);
      });

      it("DELETE clears it: no reminder on GET, and it does not fire later", async () => {
        const c = await conn([b.id]);
        const at = Date.now() + 800;
        await api.ok("POST", `${chatPath(b.id)}/reminders`, { reminder: { remindAtMs: at } });
        expect((await api.raw("DELETE", `${chatPath(b.id)}/reminders`)).status).toBe(204);
        expect((await api.chat(b.id)).reminder ?? undefined).toBeUndefined();
        const from = c.mark();
        await sleep(at - Date.now() + 700); // past its time: nothing may fire
        await api.ok("POST", `${chatPath(b.id)}/archive`, { archived: false }); // a barrier on b
        const next = await c.event("chat.upserted", b.id, { from });
        expect(next.entries![0].reminder ?? undefined).toBeUndefined();
        expect(c.events(from)).toHaveLength(1);
        expect((await api.chat(b.id)).reminder ?? undefined).toBeUndefined();
      });

      it("dismissOnIncomingMessage: an incoming message (Echo's reply) clears the reminder", async () => {
        const c = await conn([echo.id]);
        await api.ok("POST", `${chatPath(echo.id)}/reminders`, {
          reminder: { remindAtMs: Date.now() + 3_600_000, dismissOnIncomingMessage: true },
        });
        expect((await api.chat(echo.id)).reminder).toMatchObject({ dismissOnIncomingMessage: true, isFired: false });
        const from = c.mark();
        const id = await api.send(echo.id, "please dismiss my reminder");
        // My own message does not dismiss it...
        const mine = await c.event("chat.upserted", echo.id, {
          from,
          where: (e) => e.entries?.[0]?.preview?.id === id,
        });
        expect(mine.entries![0].reminder).toMatchObject({ dismissOnIncomingMessage: true });
        // ...Echo's reply does.
        const after = await c.event("chat.upserted", echo.id, {
          from,
          where: (e) => e.entries?.[0]?.preview?.senderID === ECHO_ID,
        });
        expect(after.entries![0].reminder ?? undefined).toBeUndefined();
        expect((await api.chat(echo.id)).reminder ?? undefined).toBeUndefined();
      });

      it("without dismissOnIncomingMessage an incoming message keeps the reminder", async () => {
        const c = await conn([echo.id]);
        const at = Date.now() + 3_600_000;
        await api.ok("POST", `${chatPath(echo.id)}/reminders`, { reminder: { remindAtMs: at } });
        const from = c.mark();
        await api.send(echo.id, "keep my reminder");
        await c.event("chat.upserted", echo.id, { from, where: (e) => e.entries?.[0]?.preview?.senderID === ECHO_ID });
        expect((await api.chat(echo.id)).reminder).toMatchObject({ remindAtMs: at, isFired: false });
        await api.ok("DELETE", `${chatPath(echo.id)}/reminders`);
      });
    });

    // -------------------------------------------------------------------------------------------------------------
    describe("webhooks", () => {
      const receivers: Receiver[] = [];
      const hooks: string[] = [];

      async function receiver() {
        const r = await new Receiver().start();
        receivers.push(r);
        return r;
      }
      async function addHook(hookURL: string, chatIDs?: string[]) {
        const res = await api.raw("POST", "/v1/webhooks", { json: { url: hookURL, ...(chatIDs ? { chatIDs } : {}) } });
        expect(res.status, res.text).toBe(200);
        hooks.push(res.body.id);
        return res.body as {
          id: string;
          url: string;
          chatIDs: string[];
          secret: string;
          pending: number;
          delivered: number;
        };
      }
      const stats = (id: string) => api.get(`/v1/webhooks/${enc(id)}`);
      /** Makes the receiver answer 500 to the first `failures` attempts of each delivery, then 200. */
      function failFirst(r: Receiver, failures: number) {
        const attempts = new Map<string, number>();
        r.answer = ({ headers }) => {
          const id = String(headers["x-inboxd-delivery"]);
          const n = (attempts.get(id) ?? 0) + 1;
          attempts.set(id, n);
          return n <= failures ? 500 : 200;
        };
      }

      afterAll(async () => {
        for (const id of hooks) await api.raw("DELETE", `/v1/webhooks/${enc(id)}`);
        for (const r of receivers) await r.stop();
      });

      it("POST /v1/webhooks answers the secret once; GET never shows it", async () => {
        const r = await receiver();
        const hook = await addHook(r.url);
        expect(hook).toMatchObject({ url: r.url, chatIDs: ["*"], pending: 0, delivered: 0 });
        expect(hook.id).toMatch(/\S/);
        expect(hook.secret).toMatch(/\S{16,}/);
        const list = await api.raw("GET", "/v1/webhooks");
        expect(list.status).toBe(200);
        const item = list.body.items.find((h: { id: string }) => h.id === hook.id);
        expect(item).toMatchObject({ id: hook.id, url: r.url });
        expect(item.secret).toBeUndefined();
        expect(list.text).not.toContain(hook.secret);
        const one = await api.raw("GET", `/v1/webhooks/${enc(hook.id)}`);
        expect(one.status).toBe(200);
        expect(one.body.secret).toBeUndefined();
        expect(one.text).not.toContain(hook.secret);
      });

      it("refuses bad input with 400, and writes with a read-only token with 403", async () => {
        expect((await api.raw("POST", "/v1/webhooks", { json: { url: "not a url" } })).status).toBe(400);
        expect((await api.raw("POST", "/v1/webhooks", { json: { url: "ftp://127.0.0.1/x" } })).status).toBe(400);
        expect(
          (await api.raw("POST", "/v1/webhooks", { json: { url: "http://127.0.0.1:9/x", chatIDs: ["*", a.id] } }))
            .status,
        ).toBe(400);
        expect((await api.raw("POST", "/v1/webhooks", { json: {} })).status).toBe(400);
        expect(
          (await api.raw("POST", "/v1/webhooks", { json: { url: "http://127.0.0.1:9/x" }, token: ro })).status,
        ).toBe(403);
        expect((await api.raw("GET", "/v1/webhooks/wh_doesnotexist")).status).toBe(404);
        expect((await api.raw("DELETE", "/v1/webhooks/wh_doesnotexist")).status).toBe(404);
      });

      it("POSTs each event, signed: headers, HMAC-SHA256 over `<timestamp>.<body>`, body = event + deliveryID + webhookID", async () => {
        const r = await receiver();
        const hook = await addHook(r.url);
        const description = `webhook ${Date.now()}`;
        await api.ok("PATCH", chatPath(a.id), { description });
        const d = await r.waitFor(
          "the chat.upserted delivery",
          (x) => x.json?.type === "chat.upserted" && x.json?.entries?.[0]?.description === description,
        );
        expect(d.headers["content-type"]).toMatch(/application\/json/);
        expect(d.headers["x-inboxd-event"]).toBe("chat.upserted");
        expect(d.headers["x-inboxd-delivery"]).toBe(d.json.deliveryID);
        expect(d.headers["x-inboxd-timestamp"]).toMatch(/^\d+$/);
        expect(Math.abs(Number(d.headers["x-inboxd-timestamp"]) - Date.now() / 1000)).toBeLessThan(60);
        expect(d.headers["x-inboxd-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
        expect(signatureValid(d, hook.secret)).toBe(true);
        expect(signatureValid(d, `${hook.secret}x`)).toBe(false);
        expect(d.json).toMatchObject({
          deliveryID: expect.any(String),
          webhookID: hook.id,
          type: "chat.upserted",
          chatID: a.id,
          ids: [a.id],
        });
        expect(d.json.ts).toMatch(ISO);
        expect(d.json.seq).toBeUndefined();
        expect(d.json.entries[0]).toEqual(await api.chat(a.id));
        const s = await waitFor("delivered to show", async () => {
          const x = await stats(hook.id);
          return x.delivered >= 1 && x.pending === 0 && x;
        });
        expect(s.lastSuccessAt).toMatch(ISO);
        expect(s.secret).toBeUndefined();
      });

      it("delivers message events too, each with its own deliveryID", async () => {
        const r = await receiver();
        const hook = await addHook(r.url);
        const id = await api.send(a.id, "for the webhook");
        const msg = await r.waitFor(
          "message.upserted",
          (x) => x.json?.type === "message.upserted" && x.json.ids.includes(id),
        );
        expect(msg.headers["x-inboxd-event"]).toBe("message.upserted");
        expect(msg.json.entries[0]).toMatchObject({ id, text: "for the webhook" });
        await r.waitFor("chat.upserted", (x) => x.json?.type === "chat.upserted" && x.json.chatID === a.id);
        const ids = r.deliveries.map((x) => x.headers["x-inboxd-delivery"]);
        expect(new Set(ids).size).toBe(ids.length);
        for (const x of r.deliveries) expect(signatureValid(x, hook.secret)).toBe(true);
      });

      it("filters by chatIDs", async () => {
        const r = await receiver();
        const hook = await addHook(r.url, [a.id]);
        expect(hook.chatIDs).toEqual([a.id]);
        await api.ok("PATCH", chatPath(b.id), { description: `not for the filter ${Date.now()}` });
        await api.ok("PATCH", chatPath(a.id), { description: `for the filter ${Date.now()}` });
        await r.waitFor("the event on a", (x) => x.json?.chatID === a.id);
        // The webhook reads the log in order: once nothing is pending, it has passed every event so far.
        await waitFor("nothing pending", async () => (await stats(hook.id)).pending === 0);
        expect(r.deliveries.map((x) => x.json.chatID)).toEqual(r.deliveries.map(() => a.id));
      });

      it("does not deliver typing, which is live only: the reply Echo typed is delivered, its typing notices are not", async () => {
        const r = await receiver();
        const hook = await addHook(r.url, [echo.id]);
        const id = await api.send(echo.id, `typed for a webhook ${Date.now()}`);
        await r.waitFor(
          "Echo's reply",
          (x) =>
            x.json?.type === "message.upserted" &&
            x.json.entries?.some(
              (m: { senderID: string; linkedMessageID?: string }) => m.senderID === ECHO_ID && m.linkedMessageID === id,
            ),
        );
        // The webhook reads the log in order: once nothing is pending, it has passed every event so far.
        await waitFor("nothing pending", async () => (await stats(hook.id)).pending === 0);
        const types = r.deliveries.map((x) => x.json?.type);
        expect(types).toContain("chat.upserted");
        expect(types.filter((t) => t !== "message.upserted" && t !== "chat.upserted")).toEqual([]);
      });

      it("retries a failing receiver with the same delivery ID, then counts it delivered", async () => {
        const r = await receiver();
        failFirst(r, 2);
        const hook = await addHook(r.url);
        const description = `retry ${Date.now()}`;
        await api.ok("PATCH", chatPath(a.id), { description });
        const first = await r.waitFor("the first attempt", (x) => x.json?.entries?.[0]?.description === description);
        const deliveryID = first.headers["x-inboxd-delivery"];
        expect(first.status).toBe(500);
        const failing = await waitFor("lastError", async () => {
          const s = await stats(hook.id);
          return s.lastError && s;
        });
        expect(failing.lastError).toMatchObject({
          deliveryID,
          message: expect.stringContaining("500"),
          attempts: expect.any(Number),
        });
        expect(failing.lastError.at).toMatch(ISO);
        expect(failing.pending).toBe(1);
        expect(failing.delivered).toBe(0);
        const accepted = await r.waitFor("the accepted retry", (x) => x.status === 200, 15_000);
        const tries = r.deliveries.filter((x) => x.headers["x-inboxd-delivery"] === deliveryID);
        expect(tries.map((x) => x.status)).toEqual([500, 500, 200]);
        expect(accepted.headers["x-inboxd-delivery"]).toBe(deliveryID);
        // Same payload each time; the signature is fresh (it covers the timestamp).
        for (const x of tries) {
          expect(x.body).toBe(first.body);
          expect(signatureValid(x, hook.secret)).toBe(true);
        }
        // Backoff: the retries are spaced out (1 s, then 2 s, each ±20 %).
        expect(tries[1].at - tries[0].at).toBeGreaterThanOrEqual(700);
        expect(tries[2].at - tries[1].at).toBeGreaterThanOrEqual(1400);
        const done = await waitFor("delivered", async () => {
          const s = await stats(hook.id);
          return s.pending === 0 && s.delivered === 1 && s;
        });
        expect(done.failed).toBe(0);
        const listed = (await api.get("/v1/webhooks")).items.find((h: { id: string }) => h.id === hook.id);
        expect(listed).toMatchObject({ pending: 0, delivered: 1, failed: 0 });
        expect(listed.lastError).toMatchObject({ deliveryID });
      });

      it("DELETE answers 204, and the webhook gets nothing more (not even its pending retries)", async () => {
        const gone = await receiver();
        gone.answer = () => 503;
        const kept = await receiver();
        // A control that fails twice: once its third attempt came, the deleted webhook's retry was due long ago.
        const control = await receiver();
        failFirst(control, 2);
        const goneHook = await addHook(gone.url);
        await addHook(kept.url);
        const before = `before delete ${Date.now()}`;
        await addHook(control.url, [a.id]);
        await api.ok("PATCH", chatPath(a.id), { description: before });
        await gone.waitFor("a failed attempt", () => true);
        const del = await api.raw("DELETE", `/v1/webhooks/${enc(goneHook.id)}`);
        expect(del.status).toBe(204);
        expect(del.text).toBe("");
        expect((await api.raw("GET", `/v1/webhooks/${enc(goneHook.id)}`)).status).toBe(404);
        expect((await api.get("/v1/webhooks")).items.map((h: { id: string }) => h.id)).not.toContain(goneHook.id);
        const count = gone.deliveries.length;
        const description = `after delete ${Date.now()}`;
        await api.ok("PATCH", chatPath(a.id), { description });
        await kept.waitFor(
          "the later event on the kept webhook",
          (x) => x.json?.entries?.[0]?.description === description,
        );
        const third = await control.waitFor(
          "the control's third attempt (its second retry)",
          (x) => x.status === 200 && x.json?.entries?.[0]?.description === before,
          15_000,
        );
        expect(
          control.deliveries.filter((x) => x.headers["x-inboxd-delivery"] === third.headers["x-inboxd-delivery"]),
        ).toHaveLength(3);
        expect(gone.deliveries.length).toBe(count);
      });
    });

    // -------------------------------------------------------------------------------------------------------------
    describe("a subscriber cannot break writes", () => {
      it("writes keep answering 200 (and other connections keep their events) whatever one connection subscribed to", async () => {
        // The largest subscription the server accepts (a chat ID padded with a long filler ID), found by bisection.
        const probe = await connect(url, ro, []);
        const victimConns: Conn[] = [probe];
        try {
          const accepted = async (length: number) => {
            const answer = await probe
              .request({ type: "subscriptions.set", chatIDs: [a.id, "y".repeat(length)] }, 1000)
              .catch(() => undefined);
            return answer?.type === "subscriptions.updated";
          };
          let lo = 1000;
          let hi = 40_000;
          if (await accepted(hi)) lo = hi;
          else
            while (hi - lo > 1) {
              const mid = (lo + hi) >> 1;
              if (await accepted(mid)) lo = mid;
              else hi = mid;
            }
          await probe.subscribe([]);
          const big = await connect(url, ro, [a.id, "y".repeat(lo)]);
          victimConns.push(big);
          const bystander = await conn([a.id]);
          const from = bystander.mark();
          const statuses: number[] = [];
          for (let i = 0; i < 70; i++)
            statuses.push(
              (await api.raw("PATCH", chatPath(a.id), { json: { description: `big subscriber ${i}` } })).status,
            );
          expect(
            statuses.filter((x) => x !== 200),
            `statuses of 70 PATCHes with a subscriber of ${lo} bytes connected`,
          ).toEqual([]);
          await bystander.event("chat.upserted", a.id, {
            from,
            where: (e) => e.entries?.[0]?.description === "big subscriber 69",
          });
          expect(bystander.events(from)).toHaveLength(70);
          // The big subscriber's own numbering stays sound.
          await big.event("chat.upserted", a.id, { where: (e) => e.entries?.[0]?.description === "big subscriber 69" });
          const seqs = big.events().map((e) => e.seq);
          expect(seqs).toEqual(seqs.map((_, i) => i));
        } finally {
          for (const c of victimConns) {
            c.close();
            await c.waitClosed().catch(() => undefined);
          }
        }
      }, 60_000);
    });

    // -------------------------------------------------------------------------------------------------------------
    it("numbered every connection's events 0, 1, 2, … without gaps", () => {
      for (const c of opened) {
        const seqs = c.events().map((e) => e.seq);
        expect(seqs).toEqual(seqs.map((_, i) => i));
        expect(c.garbage).toEqual([]);
      }
    });
  });
}
