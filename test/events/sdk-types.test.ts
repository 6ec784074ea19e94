/**
 * The event log added one field to the events: `eventID`. Clients built on the official SDK 5.0.0 must still read
 * every event. One of each event type the server makes is produced through the API (on both runtimes) and read on
 * /v1/ws (with `since`), as Server-Sent Events and as JSON pages; each must be the shape it had before the log plus
 * `eventID` and nothing else, its envelope must be the official document's WSDomainEventMessage once that field is
 * set aside (for the four types the document names), and its entries must be the SDK's Message, Chat and Account —
 * checked at compile time through the SDK's TypeScript types and at run time against both the official 5.0.0
 * document and the one the server serves (GET /v1/spec), with the scenario suite's checker.
 */
import { readFileSync } from "node:fs";
import type BeeperDesktop from "@beeper/desktop-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Account, Chat, Message } from "../../src/schema/wire.ts";
import { startNode } from "../harness/node.ts";
import { startWorkerd } from "../harness/workerd.ts";
import { ResponseChecker } from "../scenario/openapi-check.ts";
import { openSse, readLog, readSse } from "./crash.ts";
import { enc, messagePath, randomToken, waitFor } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { connect, type Conn, type Frame } from "./kit.ts";

// ---------------------------------------------------------------------------------------------------------------
// Compile time

/** The envelope every event has had on /v1/ws since before the log (README "Live events"). */
interface Envelope<T extends string> {
  type: T;
  seq: number;
  ts: string;
  chatID: string;
  ids: string[];
}

/** Every event type as a client on the official SDK 5.0.0 reads it: entries are the SDK's own types. */
type SdkEvent =
  | (Envelope<"message.upserted"> & {
      entries: BeeperDesktop.Message[];
      transactionID?: string;
      transactionIDs?: string[];
    })
  | Envelope<"message.deleted">
  | (Envelope<"chat.upserted"> & { entries: BeeperDesktop.Chat[] })
  | Envelope<"chat.deleted">
  | (Envelope<"focus"> & { focus: BeeperDesktop.FocusParams })
  | (Envelope<"typing"> & { typing: { participantID: string; state: "typing" | "paused"; timeoutMs?: number } })
  | (Envelope<"account.upserted"> & { entries: BeeperDesktop.Account[] })
  | Envelope<"account.deleted">
  // New with the log: a resuming client whose cursor is older than the log keeps.
  | (Envelope<"resync.required"> & { oldestEventID: number; latestEventID: number; message: string });

type EventType = SdkEvent["type"];
type FieldsOf<T extends EventType> = keyof Extract<SdkEvent, { type: T }>;

/** The fields of each type, at run time; the check below keeps this table and the types above the same. */
const FIELDS = {
  "message.upserted": ["type", "seq", "ts", "chatID", "ids", "entries", "transactionID", "transactionIDs"],
  "message.deleted": ["type", "seq", "ts", "chatID", "ids"],
  "chat.upserted": ["type", "seq", "ts", "chatID", "ids", "entries"],
  "chat.deleted": ["type", "seq", "ts", "chatID", "ids"],
  focus: ["type", "seq", "ts", "chatID", "ids", "focus"],
  typing: ["type", "seq", "ts", "chatID", "ids", "typing"],
  "account.upserted": ["type", "seq", "ts", "chatID", "ids", "entries"],
  "account.deleted": ["type", "seq", "ts", "chatID", "ids"],
  "resync.required": ["type", "seq", "ts", "chatID", "ids", "oldestEventID", "latestEventID", "message"],
} as const satisfies { [T in EventType]: readonly FieldsOf<T>[] };
/** Compiles only when T is true. */
type Assert<T extends true> = T;
type Unlisted = { [T in EventType]: Exclude<FieldsOf<T>, (typeof FIELDS)[T][number]> }[EventType];
export type CompileTimeChecks = [
  // Every field of each type is in its row of FIELDS (`satisfies` above keeps the rows from naming others).
  Assert<[Unlisted] extends [never] ? true : false>,
  // What the hub puts in `entries` (src/services/present.ts, accounts.ts) is what the SDK's types describe.
  Assert<Message extends BeeperDesktop.Message ? true : false>,
  Assert<Chat extends BeeperDesktop.Chat ? true : false>,
  Assert<Account extends BeeperDesktop.Account ? true : false>,
];

/** The events that go into the log carry an eventID; the live-only typing and the resync notice do not. */
const LOGGED: EventType[] = [
  "message.upserted",
  "message.deleted",
  "chat.upserted",
  "chat.deleted",
  "focus",
  "account.upserted",
  "account.deleted",
];
/** The types the official document lists in WSDomainEventMessage; the others are inboxd's. */
const OFFICIAL: EventType[] = ["message.upserted", "message.deleted", "chat.upserted", "chat.deleted"];
/** Fields the events carried before the log that the official document does not list (README: reactions). */
const PRE_LOG_EXTENSIONS = ["transactionID", "transactionIDs"];
const ENTRY_SCHEMA: Partial<Record<EventType, "Message" | "Chat" | "Account">> = {
  "message.upserted": "Message",
  "chat.upserted": "Chat",
  "account.upserted": "Account",
};

// ---------------------------------------------------------------------------------------------------------------
// Run time

type Json = Record<string, any>;
/**
 * The official 5.0.0 document. It marks some schemas `nullable` in the OpenAPI 3.0 way, a few without a `type`
 * (`{"nullable": true}`: any value), which the validator refuses to compile; those say nothing and are dropped.
 */
const OFFICIAL_DOCUMENT: Json = JSON.parse(
  readFileSync(new URL("../fixtures/desktop-api-v5.openapi.json", import.meta.url), "utf8"),
  (_key, value) => {
    if (value && typeof value === "object" && !Array.isArray(value) && "nullable" in value && !("type" in value))
      delete value.nullable;
    return value;
  },
);

/**
 * Validates a value against one of a document's component schemas, through the scenario suite's ResponseChecker:
 * each schema becomes the 200 answer of a made-up GET /<name>.
 */
function schemaCheck(document: Json) {
  const paths = Object.fromEntries(
    Object.keys(document.components.schemas).map((name) => [
      `/${name}`,
      {
        get: {
          operationId: name,
          responses: {
            200: {
              description: name,
              content: { "application/json": { schema: { $ref: `#/components/schemas/${name}` } } },
            },
          },
        },
      },
    ]),
  );
  const checker = new ResponseChecker({ ...document, paths });
  return (name: string, value: unknown) =>
    checker.check("GET", `http://schemas.invalid/${name}`, 200, "application/json", value);
}

const omit = (value: Json, keys: string[]) =>
  Object.fromEntries(Object.entries(value).filter(([k]) => !keys.includes(k)));

/**
 * Checks one event frame (from /v1/ws or the SSE stream) and hands it back as the SDK-typed event. Throws (with the
 * event in the message) when anything is off.
 */
function asSdkEvent(
  frame: Frame,
  documents: { served: ReturnType<typeof schemaCheck>; official: ReturnType<typeof schemaCheck> },
): SdkEvent {
  const type = frame.type as EventType;
  const what = `${type} ${JSON.stringify(frame).slice(0, 300)}`;
  expect(Object.keys(FIELDS), what).toContain(type);
  const extra = Object.keys(frame).filter((k) => !(FIELDS[type] as readonly string[]).includes(k));
  expect(extra, what).toEqual(LOGGED.includes(type) ? ["eventID"] : []);
  if (LOGGED.includes(type)) expect(Number.isSafeInteger(frame.eventID) && frame.eventID > 0, what).toBe(true);
  expect(frame, what).toMatchObject({
    seq: expect.any(Number),
    ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
    chatID: expect.any(String),
  });
  expect(Array.isArray(frame.ids) && frame.ids.every((id: unknown) => typeof id === "string"), what).toBe(true);
  // The official envelope is strict (additionalProperties: false): it holds once eventID is set aside.
  if (OFFICIAL.includes(type))
    documents.official("WSDomainEventMessage", omit(frame, ["eventID", ...PRE_LOG_EXTENSIONS]));
  const schema = ENTRY_SCHEMA[type];
  expect(schema === undefined ? frame.entries : frame.entries.length, what).toBe(
    schema === undefined ? undefined : frame.ids.length,
  );
  for (const entry of schema ? frame.entries : []) {
    documents.served(schema!, entry);
    documents.official(schema!, entry);
  }
  return frame as SdkEvent;
}

/** Reads an event the way an SDK 5.0.0 client would, through the SDK's types: the fields it uses most. */
function read(event: SdkEvent): string {
  switch (event.type) {
    case "message.upserted": {
      const message: BeeperDesktop.Message = event.entries[0]!;
      return `${message.chatID} ${message.id} ${message.sortKey} ${message.text ?? ""} ${event.transactionID ?? ""}`;
    }
    case "chat.upserted": {
      const chat: BeeperDesktop.Chat = event.entries[0]!;
      return `${chat.id} ${chat.title} ${chat.participants.items.length} ${chat.unreadCount}`;
    }
    case "account.upserted": {
      const account: BeeperDesktop.Account = event.entries[0]!;
      return `${account.accountID} ${account.user.id}`;
    }
    case "focus":
      return `${event.focus.chatID ?? ""} ${event.focus.draftText ?? ""}`;
    case "typing":
      return `${event.typing.participantID} ${event.typing.state}`;
    case "resync.required":
      return `${event.oldestEventID}..${event.latestEventID}`;
    default:
      return `${event.type} ${event.ids.join(",")}`;
  }
}

const SEED = { chats: 5, messages: 30, accounts: 1, seed: 21 };
type Start = (token: string, maxEvents?: number) => Promise<{ url: string; stop(): Promise<void> }>;
const runtimes: [string, Start][] = [
  [
    "node",
    (token, maxEvents) =>
      startNode({
        seed: SEED,
        tokens: [{ token, scopes: ["read", "write"] }],
        eventLog: maxEvents ? { maxEvents } : undefined,
      }),
  ],
  [
    "workerd",
    (token, maxEvents) =>
      startWorkerd({
        seed: SEED,
        token,
        vars: maxEvents ? { INBOXD_EVENT_LOG_MAX_EVENTS: String(maxEvents) } : undefined,
      }),
  ],
];

/** Every SSE event after `lastEventID` until `enough` says so. */
async function sseEvents(
  url: string,
  token: string,
  lastEventID: number,
  enough: (events: { id?: number; data: Frame }[]) => boolean,
) {
  const events: { id?: number; data: Frame }[] = [];
  const response = await openSse(url, token, lastEventID, AbortSignal.timeout(15_000));
  expect(response.headers.get("content-type")).toContain("text/event-stream");
  await readSse(response.body!, (data, id) => {
    events.push({ id, data: JSON.parse(data) });
    return enough(events);
  });
  return events;
}

for (const [name, start] of runtimes) {
  describe(`every event parses as the official SDK 5.0.0 types, plus eventID (${name})`, () => {
    const token = randomToken("rw");
    let server: Awaited<ReturnType<Start>>;
    let api: Api;
    let spec: Json;
    let documents: Parameters<typeof asSdkEvent>[1];
    const conns: Conn[] = [];

    beforeAll(async () => {
      server = await start(token);
      api = new Api(server.url, token);
      spec = await api.get("/v1/spec");
      documents = { served: schemaCheck(spec), official: schemaCheck(OFFICIAL_DOCUMENT) };
    });
    afterAll(async () => {
      for (const c of conns) c.close();
      await server?.stop();
    });

    it("one of every type, made through the API, on /v1/ws, as Server-Sent Events and as JSON pages", async () => {
      const ws = await connect(server.url, token);
      conns.push(ws);
      await ws.request({ type: "subscriptions.set", chatIDs: ["*"], since: 0 });
      const accountID = (await api.get("/v1/accounts"))[0].accountID as string;
      const [quiet] = await api.quietChats(accountID, 1);
      const echo = await api.echoChat(accountID);

      // message.upserted and chat.upserted; a reaction's message.upserted with its transactionID; message.deleted.
      const messageID = await api.send(quiet!.id, "parse me");
      await api.settled(quiet!.id, messageID);
      await api.ok("POST", `${messagePath(quiet!.id, messageID)}/reactions`, { reactionKey: "👍" });
      await api.ok("DELETE", messagePath(quiet!.id, messageID));
      // focus, with a chat and without.
      await api.ok("POST", "/v1/focus", { chatID: quiet!.id, draftText: "half-typed" });
      await api.ok("POST", "/v1/focus", {});
      // typing (live only): Echo types before it answers, and stops right after its answer.
      await api.send(echo.id, "hello Echo");
      await ws.next((f) => f.type === "typing" && f.typing.state === "paused", {
        timeoutMs: 10_000,
        what: "Echo done typing",
      });
      // account.upserted with its chats; removing the login: chat.deleted for them and account.deleted.
      const bridge = "/v1/bridges/local-sandbox";
      const session = await api.ok("POST", `${bridge}/login-sessions`, { flowID: "password" });
      const steps = `${bridge}/login-sessions/${enc(session.loginSessionID)}/steps`;
      await api.ok("POST", `${steps}/sandbox.password.credentials`, {
        type: "user_input",
        fields: { username: `parse${Date.now().toString(36)}`, password: "sandbox" },
      });
      const login = await api.ok("POST", `${steps}/sandbox.password.code`, {
        type: "user_input",
        fields: { code: "123456" },
      });
      await waitFor(
        "the new account's chats",
        async () => (await api.chats(`accountIDs=${enc(login.accountID)}`)).length >= 8,
        15_000,
      );
      await api.ok("POST", `${bridge}/logins/${enc(login.loginID)}/remove`, { scope: "current-device" });
      await ws.next((f) => f.type === "account.deleted" && f.ids[0] === login.accountID, {
        timeoutMs: 10_000,
        what: "account.deleted",
      });
      const head = await waitFor("/v1/ws to reach the log's head", async () => {
        const latest = (await api.get("/v1/events?limit=1")).latestEventID as number;
        return ws.frames.findLast((f) => f.eventID !== undefined)?.eventID === latest && latest;
      });

      // /v1/ws, up to that head: every frame after subscriptions.updated is an event of a known type, and reads as
      // the SDK's.
      const events = ws.frames
        .slice(0, ws.frames.findIndex((f) => f.eventID === head) + 1)
        .filter((f) => typeof f.seq === "number");
      for (const f of events) read(asSdkEvent(f, documents));
      expect(new Set(events.map((e) => e.type))).toEqual(new Set(LOGGED.concat("typing")));
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
      const logged = events.filter((e) => e.eventID !== undefined);
      expect(logged.map((e) => e.eventID)).toEqual(Array.from({ length: head }, (_, i) => i + 1));

      // SSE: the same events (each with its own seq), each with `id:` = eventID; typing comes live, without id.
      const sse = await sseEvents(server.url, token, 0, (got) => got.at(-1)?.id === head);
      expect(sse.length).toBeGreaterThanOrEqual(head);
      for (const e of sse) read(asSdkEvent(e.data, documents));
      const sseLogged = sse.filter((e) => e.id !== undefined);
      expect(sseLogged.map((e) => e.id)).toEqual(sseLogged.map((e) => e.data.eventID));
      expect(sseLogged.map((e) => omit(e.data, ["seq"]))).toEqual(logged.map((e) => omit(e, ["seq"])));

      // JSON pages: the same events without seq; a page is the answer GET /v1/spec documents.
      const page = await api.raw("GET", "/v1/events?after=0&limit=5");
      new ResponseChecker(spec).check(
        "GET",
        `${server.url}/v1/events`,
        page.status,
        page.headers.get("content-type"),
        page.body,
      );
      expect(page.body).toMatchObject({ nextAfter: 5, hasMore: true, oldestEventID: 1, latestEventID: head });
      const log = await readLog(api);
      expect(log.items.filter((e) => e.eventID <= head)).toEqual(logged.map((e) => omit(e, ["seq"])));
    }, 60_000);

    it("resync.required: a cursor older than the log (5 events kept) on /v1/ws, SSE and the JSON page", async () => {
      const small = await start(token, 5);
      try {
        const smallApi = new Api(small.url, token);
        const accountID = (await smallApi.get("/v1/accounts"))[0].accountID as string;
        const [quiet] = await smallApi.quietChats(accountID, 1);
        // Each send logs two events; compaction runs once the log is one event over its count.
        for (let i = 0; i < 4; i++) await smallApi.send(quiet!.id, `overflow ${i}`);
        const page = await waitFor("compaction", async () => {
          const p = await smallApi.get("/v1/events?limit=1");
          return p.oldestEventID > 2 && p;
        });
        const ws = await connect(small.url, token);
        conns.push(ws);
        await ws.request({ type: "subscriptions.set", chatIDs: ["*"], since: 1 });
        const resync = asSdkEvent(
          await ws.next((f) => f.type === "resync.required", { what: "resync.required" }),
          documents,
        );
        expect(resync).toMatchObject({
          seq: 0,
          chatID: "",
          ids: [],
          oldestEventID: page.oldestEventID,
          latestEventID: page.latestEventID,
        });
        expect(read(resync)).toBe(`${page.oldestEventID}..${page.latestEventID}`);
        const [streamed] = await sseEvents(small.url, token, 1, () => true);
        expect(omit(asSdkEvent(streamed!.data, documents), ["seq", "ts"])).toEqual(omit(resync, ["seq", "ts"]));
        // The stream's id is the head it names, so an EventSource carries on from there.
        expect(streamed!.id).toBe(page.latestEventID);
        const gone = await smallApi.raw("GET", "/v1/events?after=1");
        expect(gone.status).toBe(410);
        documents.served("Error", gone.body);
        expect(gone.body).toMatchObject({
          code: "RESYNC_REQUIRED",
          details: { oldestEventID: page.oldestEventID, latestEventID: page.latestEventID },
        });
      } finally {
        await small.stop();
      }
    }, 60_000);
  });
}
