/**
 * Events that are never lost, through real sockets on both runtimes: every logged event carries its `eventID`;
 * a WebSocket that reconnects with `since` gets what it missed and then the live events, with no gap and no
 * duplicate; GET /v1/events serves the same log as Server-Sent Events (Last-Event-ID) and as a long-poll page; a
 * cursor older than the log is told to resync.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Chat } from "../../src/schema/wire.ts";
import { randomToken, waitFor } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { connect, type Conn } from "./kit.ts";

export interface ResumeServer {
  url: string;
  stop(): Promise<void>;
}

export type StartResume = (options: {
  seed: { chats: number; messages: number; accounts?: number; seed?: number };
  tokens: { token: string; scopes: ("read" | "write")[] }[];
  maxEvents?: number;
}) => Promise<ResumeServer>;

/** Reads a Server-Sent Events response until `enough` says stop (or the time runs out), then aborts it. */
async function readStream(
  url: string,
  token: string,
  headers: Record<string, string>,
  enough: (events: { id?: number; data: any }[]) => boolean,
  timeoutMs = 10_000,
) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: "text/event-stream", ...headers },
    signal: controller.signal,
  });
  const events: { id?: number; data: any }[] = [];
  let buffer = "";
  try {
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const id = /^id: (\d+)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (data !== undefined) events.push({ id: id === undefined ? undefined : Number(id), data: JSON.parse(data) });
      }
      if (enough(events)) break;
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return { response, events };
}

const logged = (frames: { eventID?: number }[]) =>
  frames.filter((f) => typeof f.eventID === "number").map((f) => f.eventID!);

export function resumeSuite(name: string, start: StartResume) {
  describe(`the event log on ${name}`, () => {
    const rw = randomToken("rw");
    let server: ResumeServer;
    let api: Api;
    let chats: Chat[];
    const conns: Conn[] = [];
    const conn = async (chatIDs?: string[]) => {
      const c = await connect(server.url, rw, chatIDs);
      conns.push(c);
      return c;
    };
    /** The log's head, as the long-poll page reports it. */
    const head = async () => (await api.get("/v1/events?limit=1")).latestEventID as number;

    beforeAll(async () => {
      server = await start({
        seed: { chats: 6, messages: 60, accounts: 1, seed: 8 },
        tokens: [{ token: rw, scopes: ["read", "write"] }],
      });
      api = new Api(server.url, rw);
      chats = await api.quietChats((await api.get("/v1/accounts"))[0].accountID, 2);
    });
    afterAll(async () => {
      for (const c of conns) c.close();
      await server.stop();
    });

    it("gives every logged event an eventID, increasing by one across chats", async () => {
      const c = await conn(["*"]);
      const from = c.mark();
      await api.send(chats[0]!.id, "one");
      await api.send(chats[1]!.id, "two");
      await c.next((f) => f.type === "message.upserted" && f.entries?.[0]?.text === "two", { from });
      await waitFor("the log's head", async () => logged(c.frames.slice(from)).at(-1) === (await head()));
      // Each send logs its message and its chat (the preview), at least.
      const ids = logged(c.frames.slice(from));
      expect(ids.length).toBeGreaterThanOrEqual(4);
      expect(ids).toEqual(ids.map((_, i) => ids[0]! + i));
    });

    it("a WebSocket that reconnects with since gets what it missed, then live events: no gap, no duplicate", async () => {
      const first = await conn(["*"]);
      const from = first.mark();
      await api.send(chats[0]!.id, "before the blip");
      const seen = await first.next(
        (f) => f.type === "message.upserted" && f.entries?.[0]?.text === "before the blip",
        { from },
      );
      await waitFor("the chat's event too", () => logged(first.frames).at(-1)! > seen.eventID);
      const last = logged(first.frames).at(-1)!;
      first.close();
      // Missed while away: three sends, in two chats.
      for (const text of ["missed 1", "missed 2", "missed 3"])
        await api.send(chats[text.endsWith("2") ? 1 : 0]!.id, text);
      const missedUpTo = await head();
      const again = await conn();
      const answer = await again.request({ type: "subscriptions.set", chatIDs: ["*"], since: last });
      expect(answer).toMatchObject({ type: "subscriptions.updated", chatIDs: ["*"], since: last });
      await again.next((f) => f.eventID === missedUpTo);
      await api.send(chats[1]!.id, "live again");
      await again.next((f) => f.type === "message.upserted" && f.entries?.[0]?.text === "live again");
      await waitFor("the log's head", async () => logged(again.frames).at(-1) === (await head()));
      const ids = logged(again.frames);
      expect(ids[0]).toBe(last + 1);
      expect(ids).toEqual(ids.map((_, i) => last + 1 + i));
      expect(again.frames.filter((f) => f.type === "message.upserted").map((f) => f.entries[0].text)).toEqual([
        "missed 1",
        "missed 2",
        "missed 3",
        "live again",
      ]);
      const seqs = again.events().map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i));
    });

    it("replays only the subscribed chats, tells a cursor ahead of the log to resync, and refuses a since that is not an eventID", async () => {
      const before = await head();
      await api.send(chats[0]!.id, "for chat 0");
      await api.send(chats[1]!.id, "for chat 1");
      const c = await conn();
      await c.request({ type: "subscriptions.set", chatIDs: [chats[1]!.id], since: before });
      await c.next((f) => f.type === "message.upserted" && f.entries?.[0]?.text === "for chat 1");
      expect(c.events().every((e) => e.chatID === chats[1]!.id)).toBe(true);
      // A cursor ahead of the log (data restored from an older copy): told to resync, never silently skipped ahead.
      const now = await head();
      const ahead = await conn();
      await ahead.request({ type: "subscriptions.set", chatIDs: ["*"], since: now + 1000 });
      expect(await ahead.next((f) => f.type === "resync.required")).toMatchObject({ latestEventID: now });
      await api.send(chats[0]!.id, "after the reset");
      await ahead.next((f) => f.type === "message.upserted" && f.entries?.[0]?.text === "after the reset");
      expect(logged(ahead.frames)[0]).toBe(now + 1);
      expect((await api.raw("GET", `/v1/events?after=${now + 1000}`)).body).toMatchObject({ code: "RESYNC_REQUIRED" });
      expect(await c.request({ type: "subscriptions.set", chatIDs: ["*"], since: "yesterday" })).toMatchObject({
        type: "error",
        code: "INVALID_PAYLOAD",
      });
      expect(await c.request({ type: "subscriptions.set", chatIDs: ["*"], since: -1 })).toMatchObject({
        type: "error",
        code: "INVALID_PAYLOAD",
      });
    });

    it("GET /v1/events pages through the log and waits for the next event when asked", async () => {
      const before = await head();
      await api.send(chats[0]!.id, "paged");
      const page = await api.get(`/v1/events?after=${before}&limit=1`);
      expect(page.items).toHaveLength(1);
      expect(page.items[0]).toMatchObject({ eventID: before + 1, type: "message.upserted" });
      expect(page.items[0].seq).toBeUndefined();
      expect(page).toMatchObject({ nextAfter: before + 1, hasMore: true });
      const rest = await api.get(`/v1/events?after=${page.nextAfter}`);
      expect(rest.items.map((e: { eventID: number }) => e.eventID)[0]).toBe(before + 2);
      // A filter moves the cursor past other chats' events.
      const filtered = await api.get(`/v1/events?after=${before}&chatIDs=${encodeURIComponent(chats[1]!.id)}`);
      expect(filtered.items).toEqual([]);
      expect(filtered.nextAfter).toBe(rest.nextAfter);
      // Long-poll: nothing yet, so it waits; a send ends the wait with that send's events.
      const waiting = api.get(`/v1/events?after=${rest.nextAfter}&wait=30`);
      await new Promise((r) => setTimeout(r, 300));
      await api.send(chats[1]!.id, "woke the poll");
      const woke = await waiting;
      expect(woke.items.find((e: { type: string }) => e.type === "message.upserted").entries[0].text).toBe(
        "woke the poll",
      );
      const empty = await api.get(`/v1/events?after=${await head()}&wait=0`);
      expect(empty.items).toEqual([]);
      expect((await api.raw("GET", "/v1/events?after=soon")).status).toBe(400);
      expect((await api.raw("GET", "/v1/events?wait=600")).status).toBe(400);
      // /v1/ws's name for the cursor is refused with the one that works, not ignored (a stream from now).
      const since = await api.raw("GET", "/v1/events?since=0");
      expect(since.status).toBe(400);
      expect(since.text).toContain("with `after`");
    });

    it("GET /v1/events as Server-Sent Events resumes from Last-Event-ID and then streams live events", async () => {
      const before = await head();
      await api.send(chats[0]!.id, "streamed 1");
      const upTo = await head();
      const stream = readStream(`${server.url}/v1/events`, rw, { "last-event-id": String(before) }, (events) =>
        events.some((e) => e.data.entries?.[0]?.text === "streamed 2"),
      );
      await new Promise((r) => setTimeout(r, 300));
      await api.send(chats[1]!.id, "streamed 2");
      const { response, events } = await stream;
      expect(response.headers.get("content-type")).toContain("text/event-stream");
      const ids = events.map((e) => e.id);
      expect(ids[0]).toBe(before + 1);
      expect(ids).toEqual(ids.map((_, i) => before + 1 + i));
      expect(ids).toContain(upTo);
      expect(events.every((e) => e.data.eventID === e.id)).toBe(true);
      // chatIDs filter on the stream.
      const only = await readStream(
        `${server.url}/v1/events?chatIDs=${encodeURIComponent(chats[1]!.id)}&after=${before}`,
        rw,
        {},
        (evs) => evs.some((e) => e.data.type === "message.upserted"),
      );
      expect(only.events.length).toBeGreaterThan(0);
      expect(only.events.every((e) => e.data.chatID === chats[1]!.id)).toBe(true);
      // A Last-Event-ID that is not one.
      expect(
        (
          await fetch(`${server.url}/v1/events`, {
            headers: { authorization: `Bearer ${rw}`, accept: "text/event-stream", "last-event-id": "x" },
          })
        ).status,
      ).toBe(400);
    });

    it("needs a token like every route", async () => {
      expect((await api.raw("GET", "/v1/events", { token: null })).status).toBe(401);
    });
  });

  describe(`retention on ${name}`, () => {
    const rw = randomToken("rw");
    let server: ResumeServer;
    let api: Api;
    let chat: Chat;
    const conns: Conn[] = [];

    beforeAll(async () => {
      server = await start({
        seed: { chats: 4, messages: 20, accounts: 1, seed: 9 },
        tokens: [{ token: rw, scopes: ["read", "write"] }],
        maxEvents: 10,
      });
      api = new Api(server.url, rw);
      [chat] = await api.quietChats((await api.get("/v1/accounts"))[0].accountID, 1);
    });
    afterAll(async () => {
      for (const c of conns) c.close();
      await server.stop();
    });

    it("a cursor older than the log is told to resync on every channel, never handed a gap", async () => {
      for (let i = 0; i < 12; i++) await api.send(chat!.id, `filler ${i}`);
      const page = await waitFor("compaction", async () => {
        const p = await api.get("/v1/events?limit=1");
        return p.oldestEventID > 1 && p;
      });
      expect(page.latestEventID - page.oldestEventID + 1).toBeLessThanOrEqual(10 + 1);
      const gone = await api.raw("GET", "/v1/events?after=0");
      expect(gone.status).toBe(410);
      expect(gone.body).toMatchObject({ code: "RESYNC_REQUIRED", details: { oldestEventID: page.oldestEventID } });
      const c = await connect(server.url, rw);
      conns.push(c);
      await c.request({ type: "subscriptions.set", chatIDs: ["*"], since: 1 });
      const resync = await c.next((f) => f.type === "resync.required");
      expect(resync).toMatchObject({ seq: 0, oldestEventID: expect.any(Number), latestEventID: expect.any(Number) });
      // Then live, from the head it named.
      await api.send(chat!.id, "after the resync");
      await c.next((f) => f.type === "message.upserted" && f.entries?.[0]?.text === "after the resync");
      expect(logged(c.frames)[0]).toBe(resync.latestEventID + 1);
      const sse = await readStream(`${server.url}/v1/events`, rw, { "last-event-id": "1" }, (evs) => evs.length > 0);
      expect(sse.events[0]!.data).toMatchObject({ type: "resync.required" });
    });
  });
}
