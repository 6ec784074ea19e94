import { DurableObject } from "cloudflare:workers";
import type { DurableObjectNamespace, DurableObjectState, R2Bucket } from "@cloudflare/workers-types/index.ts";
import { createStorage, type Storage } from "unstorage";
import { LIMITS, utf8Length } from "../../src/schema/limits.ts";
import r2Driver from "unstorage/drivers/cloudflare-r2-binding";
import { createApp, type App } from "../../src/app.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import { seedDataset, type SeedOptions } from "../../src/seed/dataset.ts";
import {
  ensureToken,
  hashToken,
  listTokens,
  removeTokenByID,
  verifyToken,
  type Scope,
} from "../../src/services/tokens.ts";
import { durableObjectDriver } from "./durable-object-driver.ts";
import { withFixedLength } from "./fixed-length.ts";
import { parseToolSelection } from "../../src/mcp/index.ts";
import { parseRateLimit } from "../../src/http/rate-limit.ts";
import { frameFor, handleClientFrame, readyMessage, type ConnectionState } from "../../src/events/protocol.ts";
import type { DomainEvent } from "../../src/schema/events.ts";
import { replayLog } from "../../src/events/replay.ts";
import { eventLogSettings } from "../../src/events/log.ts";
import { loadMatrixCrypto } from "#worker-matrix-crypto";
import { openUpstreamSocket } from "./upstream-socket.ts";
import { ApiError } from "../../src/errors.ts";
import { OAuthStore } from "../../src/oauth/index.ts";
import { DEVICE_INBOX, inboxOf, type Tenancy } from "../../src/tenancy.ts";
import { SESSION_COOKIE } from "../../src/oauth/authorize.ts";
import { RELAY_PATH } from "../../src/relay/protocol.ts";
import { sameSecret } from "../../src/util/encoding.ts";
import { publicAnswer } from "./public-app.ts";
import type { InboxControl, InboxRecord, InboxUsage } from "./inbox-control.ts";

/** What a socket carries across hibernation (see upgrade()). */
interface SocketAttachment {
  id: string;
  seq: number;
  /** The newest logged event the socket has been handed (see ConnectionState.cursor). */
  cursor?: number;
}

/** The parts of workerd's WebSocket used here (its full type clashes with the DOM one in this tsconfig). */
interface HibernatingSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  serializeAttachment(value: unknown): void;
  deserializeAttachment(): unknown;
}
declare const WebSocketPair: { new (): { 0: HibernatingSocket; 1: HibernatingSocket } };

/** The vars and secrets the object reads (see wrangler.toml). */
export interface InboxEnv {
  /** R2 bucket for asset bytes (see wrangler.toml). */
  ASSETS?: unknown;
  /** A secret: accepted as a read+write token, so a deployed Worker is reachable without a CLI to mint one. */
  INBOXD_ADMIN_TOKEN?: string;
  /** A secret: accepted as a read-only token (dashboards, scripts that must not write). */
  INBOXD_READ_TOKEN?: string;
  /** Test tuning: idle login sessions expire after this many ms; the sandbox QR login completes after this many. */
  INBOXD_LOGIN_SESSION_TTL_MS?: string;
  INBOXD_SANDBOX_QR_DELAY_MS?: string;
  /** Lifetime of OAuth access tokens in seconds (default 3600), as the daemon's --token-ttl. */
  INBOXD_TOKEN_TTL?: string;
  /** Test tuning: how many messages of each XMPP archive a first connect reads (default 10,000). */
  INBOXD_XMPP_FIRST_BACKFILL?: string;
  /** "off": let the object sleep while accounts are connected (they catch up when it wakes); default: keep it awake. */
  INBOXD_KEEP_AWAKE?: string;
  /** Test tuning: how many messages of each Matrix room a first sync loads (default 50). */
  INBOXD_MATRIX_FIRST_BACKFILL?: string;
  INBOXD_DESKTOP_API_FIRST_BACKFILL?: string;
  /** JSON `{"chats":40,"messages":800,"accounts":2,"seed":7}`: fill an empty store with a sandbox dataset. */
  INBOXD_SEED?: string;
  /** MCP tools offered: all (default), read-only, or tool names separated by commas (as `serve --mcp-tools`). */
  INBOXD_MCP_TOOLS?: string;
  /** Requests per second per token (bursts of 4×), 0 or off for no rate limits; as `serve --rate-limit`. */
  INBOXD_RATE_LIMIT?: string;
  /** "multi": many inboxes, one object each, reached by credential (src/tenancy.ts); default one device. */
  INBOXD_TENANCY?: string;
  /** Where there are many inboxes: the registry, told when the single-device deployment's inbox is adopted. */
  REGISTRY?: DurableObjectNamespace;
  /** Where there are many inboxes: the relays, one per inbox that fronts its person's daemon. */
  RELAY?: DurableObjectNamespace;
}

/** A relayed page's policy: scripts and forms run, but in an opaque origin (no `allow-same-origin`). */
const RELAYED_PAGE_POLICY = "sandbox allow-scripts allow-forms allow-popups allow-downloads";

/** Set by the Worker on every request it routes to an inbox (worker.ts): the inbox's name, whatever a client sent. */
export const INBOX_HEADER = "x-inboxd-routed-inbox";

/** Where the object keeps its inbox's record and request count (outside the app's keys, like `wssubs:`). */
const RECORD_KEY = "tenancy:inbox";
const REQUESTS_KEY = "tenancy:requests";
const REQUESTS_SAVE_MS = 10_000;
/** R2 keys of an inbox other than the single-device one: `inboxes:<id>:<asset>_<n>`. */
const ASSET_BASE = "inboxes";

/**
 * The client's address, for throttling failed authentication: Cloudflare's edge sets CF-Connecting-IP on every
 * request and overwrites one a client sent. Local workerd (wrangler dev, Miniflare) sets it to 127.0.0.1 but keeps one
 * the client sent, which only matters to someone testing on their own machine.
 */
const connectingIP = (request: Request) => request.headers.get("cf-connecting-ip") ?? undefined;

/**
 * One device's inbox: the whole API over this object's storage. The constructor stays light because it re-runs on
 * every wake; the app (which reads meta, accounts and chats) is built on the first request after a wake.
 */
export class InboxObject extends DurableObject<InboxEnv> implements InboxControl {
  private app?: Promise<App>;
  private booted?: App;
  private readonly state: DurableObjectState;

  constructor(state: DurableObjectState, env: InboxEnv) {
    super(state, env);
    this.state = state;
  }

  /** Many inboxes per deployment (src/tenancy.ts): then each object is one inbox, created by the registry. */
  private get multi() {
    return this.env.INBOXD_TENANCY === "multi";
  }

  /** This object's inbox where there are many: undefined until read, null for an object that is no inbox. */
  private record?: InboxRecord | null;
  /** What the app reads its inbox's ID and limits from; changed in place when the operator changes them. */
  private tenancy?: Tenancy;
  private requests?: { count: number; savedAt: number };
  /** The inbox the Worker routed this object's requests to (INBOX_HEADER). */
  private routedName?: string;
  /** Set while the inbox is being deleted: nothing boots, every request is answered as by no inbox. */
  private closing = false;

  async fetch(request: Request): Promise<Response> {
    if (this.multi) {
      this.routedName ??= request.headers.get(INBOX_HEADER) ?? undefined;
      const record = this.closing ? null : await this.inboxRecord();
      // Answered as for a token no inbox knows: a request cannot tell a missing inbox from a wrong secret.
      if (!record) return publicAnswer(this.env, request);
      await this.countRequest();
      // A relay's daemon checks its tokens itself (only its pairing is checked here), so a suspended relay, whose
      // tokens cannot be told from others here, answers as no inbox does.
      if (record.relay)
        return record.status === "suspended"
          ? publicAnswer(this.env, request)
          : this.relayed(record.id, record.relay.secretHash, request);
      // What the operator set is said only to a caller with one of the inbox's tokens: to anyone else the inbox
      // answers as one that does not exist (a suspended inbox) or as usual (a token the app then refuses).
      if (record.status === "suspended" || record.limits.maxStorageBytes !== undefined) {
        const holder = await this.holdsToken(request);
        if (record.status === "suspended" && !holder) return publicAnswer(this.env, request);
        const refused = holder ? this.refusal(record, request) : undefined;
        if (refused) return toErrorResponse(refused);
      }
    }
    let app: App;
    try {
      app = await this.ready();
    } catch (error) {
      console.error("inboxd: boot failed:", error);
      return toErrorResponse(error);
    }
    if (request.headers.get("upgrade")?.toLowerCase() === "websocket") return this.upgrade(app, request);
    const response = withFixedLength(await app.fetch(request));
    // An account connected by this request (a finished login) starts the keep-awake alarm; checked in memory only.
    if (this.alarmAt === undefined && this.keepsAwake(app)) this.setAlarm(app);
    return response;
  }

  /** Memoised boot: concurrent first requests share one; a failed boot is retried by the next request. */
  private ready(): Promise<App> {
    // An inbox being deleted boots nothing more (closeApp awaits, and other events may come in meanwhile).
    if (this.closing) return Promise.reject(new ApiError(503, "UNAVAILABLE", "this inbox is being changed; retry"));
    this.app ??= this.boot().catch((error: unknown) => {
      this.app = undefined;
      throw error;
    });
    return this.app;
  }

  /**
   * /v1/ws with the hibernation API: the runtime holds the sockets while the object sleeps. A socket's attachment
   * (at most 16 KiB) keeps only its ID and `seq`; its subscription list, which can be far larger, is stored under
   * `wssubs:<id>` and cached in memory, reloaded for every open socket when the object boots after a wake.
   */
  private readonly subscriptions = new Map<string, string[]>();

  private async upgrade(app: App, request: Request): Promise<Response> {
    const verdict = await app.checkUpgrade(request);
    if (!verdict.ok) return verdict.response;
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.state.acceptWebSocket(server as never);
    const attachment: SocketAttachment = { id: crypto.randomUUID(), seq: 0 };
    server.serializeAttachment(attachment);
    this.subscriptions.set(attachment.id, []);
    server.send(readyMessage());
    const headers = verdict.protocol ? { "sec-websocket-protocol": verdict.protocol } : undefined;
    return new Response(null, { status: 101, webSocket: client, headers } as ResponseInit);
  }

  async alarm(): Promise<void> {
    this.alarmAt = undefined;
    // A deleted or suspended inbox has nothing to wake for (a suspension's networks were let go).
    if (this.multi) {
      const record = await this.inboxRecord();
      if (record?.status !== "active" || record.relay) return;
    }
    const app = await this.ready();
    await app.wake();
    this.setAlarm(app);
  }

  /** What the app asked to be woken for (reminders, retries…), kept to combine with the keep-awake alarm. */
  private wakeAt?: number;

  /**
   * One alarm serves both the app's wake-ups and keeping the object awake: while an account holds a network
   * connection (a Matrix sync, an XMPP socket), the object is woken every KEEP_AWAKE_MS, as Cloudflare evicts an object
   * that has had no event for about 70 s or more, which would leave the network unheard until the next request.
   * INBOXD_KEEP_AWAKE=off lets it sleep instead (the account then catches up from its saved position when the
   * object wakes).
   */
  private setAlarm(app: App | undefined) {
    const keepAwake = app && this.keepsAwake(app) ? Date.now() + KEEP_AWAKE_MS : undefined;
    const at = [this.wakeAt, keepAwake].filter((t): t is number => t !== undefined);
    this.alarmAt = at.length === 0 ? undefined : Math.min(...at);
    void (this.alarmAt === undefined ? this.state.storage.deleteAlarm() : this.state.storage.setAlarm(this.alarmAt));
  }

  private alarmAt?: number;

  private keepsAwake(app: App): boolean {
    return this.env.INBOXD_KEEP_AWAKE !== "off" && app.context.bridges.clientsList().some((c) => c.holdsConnection);
  }

  async webSocketMessage(ws: HibernatingSocket, message: string | ArrayBuffer): Promise<void> {
    // The same bound as the daemon's (ws maxPayload): close with 1009, "message too big".
    if ((typeof message === "string" ? utf8Length(message) : message.byteLength) > LIMITS.webSocketMessageBytes) {
      await this.forget(ws);
      ws.close(1009, "message too big");
      return;
    }
    if (this.multi) {
      const record = await this.inboxRecord();
      if (record?.status !== "active" || this.closing) {
        await this.forget(ws);
        ws.close(1008, record ? "inbox suspended" : "inbox deleted");
        return;
      }
    }
    const app = await this.ready();
    const attachment = ws.deserializeAttachment() as SocketAttachment;
    const before = this.connectionState(attachment);
    const { state, replies, replayFrom } = handleClientFrame(before, message);
    this.states.set(attachment.id, state);
    if (state.chatIDs !== before.chatIDs) {
      await this.state.storage.put(`wssubs:${attachment.id}`, state.chatIDs);
      this.subscriptions.set(attachment.id, state.chatIDs);
    }
    for (const reply of replies) ws.send(reply);
    if (replayFrom !== undefined) {
      // Resume: what the log holds after `since`, then live (the object stays awake while it replays).
      await replayLog(
        app.events.log,
        state,
        () => this.states.get(attachment.id),
        (frame) => ws.send(frame),
      );
    }
    // A newer subscriptions.set (during the replay) has its own state to keep.
    if (this.states.get(attachment.id) === state) this.remember(ws, attachment.id, state);
  }

  /**
   * A socket's protocol state: kept in memory while the object is awake, rebuilt from the attachment (`seq`, the
   * event cursor) and the stored subscription list after a wake.
   */
  private readonly states = new Map<string, ConnectionState>();

  private connectionState(attachment: SocketAttachment): ConnectionState {
    let state = this.states.get(attachment.id);
    if (!state) {
      state = {
        chatIDs: this.subscriptions.get(attachment.id) ?? [],
        seq: attachment.seq,
        ...(attachment.cursor !== undefined ? { cursor: attachment.cursor } : {}),
      };
      this.states.set(attachment.id, state);
    }
    return state;
  }

  private remember(ws: HibernatingSocket, id: string, state: ConnectionState) {
    ws.serializeAttachment({
      id,
      seq: state.seq,
      ...(state.cursor !== undefined ? { cursor: state.cursor } : {}),
    } satisfies SocketAttachment);
  }

  async webSocketClose(ws: HibernatingSocket, code: number): Promise<void> {
    await this.forget(ws);
    ws.close(code === 1005 ? 1000 : code, "closed");
  }

  async webSocketError(ws: HibernatingSocket): Promise<void> {
    await this.forget(ws);
  }

  private async forget(ws: HibernatingSocket) {
    const attachment = ws.deserializeAttachment() as SocketAttachment | null;
    if (!attachment) return;
    this.subscriptions.delete(attachment.id);
    this.states.delete(attachment.id);
    await this.state.storage.delete(`wssubs:${attachment.id}`);
  }

  /** Fans events out to every accepted socket, including those accepted before the object last slept. */
  private deliver(events: DomainEvent[]) {
    for (const ws of this.state.getWebSockets() as unknown as HibernatingSocket[]) {
      try {
        const attachment = ws.deserializeAttachment() as SocketAttachment | null;
        if (!attachment) continue;
        const state = this.connectionState(attachment);
        const seq = state.seq;
        for (const event of events) {
          const frame = frameFor(state, event);
          if (frame !== null) ws.send(frame);
        }
        // Kept across hibernation only when something was sent: a cursor left behind there never causes a duplicate.
        if (state.seq !== seq) this.remember(ws, attachment.id, state);
      } catch {
        // This socket is closing; the others still get their events.
      }
    }
  }

  /** After a wake: the subscription lists of the sockets the runtime kept while the object slept. */
  private async loadSubscriptions() {
    for (const ws of this.state.getWebSockets() as unknown as HibernatingSocket[]) {
      const attachment = ws.deserializeAttachment() as SocketAttachment | null;
      if (!attachment || this.subscriptions.has(attachment.id)) continue;
      this.subscriptions.set(attachment.id, (await this.state.storage.get<string[]>(`wssubs:${attachment.id}`)) ?? []);
    }
  }

  // ---- Many inboxes per deployment (src/tenancy.ts, registry-object.ts) ----

  /**
   * This object's inbox record, read once per wake. An object the registry never made is no inbox — except the
   * single-device deployment's object, named "device" (its ID's name, which the runtime gives the object), when it
   * holds data: it is adopted as the inbox "device" the first time it serves a request in a deployment of many.
   */
  private async inboxRecord(): Promise<InboxRecord | null> {
    if (this.record !== undefined) return this.record;
    let record = (await this.state.storage.get<InboxRecord>(RECORD_KEY)) ?? null;
    // The runtime gives an object its ID's name, but not always to one an alarm woke: the Worker says it too.
    const name = (this.state.id as { name?: string }).name ?? this.routedName;
    if (record && name !== undefined && record.id !== name) throw new Error(`object ${name} holds inbox ${record.id}`);
    const holdsData = !record && (await this.state.storage.list({ limit: 1 })).size > 0;
    // Not known yet which object this is (woken by an alarm): asked again at the next request.
    if (holdsData && name === undefined) return null;
    if (holdsData && name === DEVICE_INBOX) {
      const registry = this.env.REGISTRY;
      record = registry
        ? await (registry.get(registry.idFromName("registry")) as unknown as { adopt(): Promise<InboxRecord> }).adopt()
        : { id: DEVICE_INBOX, createdAt: new Date().toISOString(), status: "active", limits: {}, adopted: true };
      await this.state.storage.put(RECORD_KEY, record);
    }
    this.keepRecord(record);
    return record;
  }

  private keepRecord(record: InboxRecord | null) {
    this.record = record;
    if (!record) this.tenancy = undefined;
    else if (this.tenancy) this.tenancy.limits = record.limits;
    else this.tenancy = { inbox: record.id, limits: record.limits, writesRefused: () => this.storageFull() };
  }

  /** Whether the request's bearer token (header, or a WebSocket's `bearer.` subprotocol) is one of this inbox's. */
  private async holdsToken(request: Request): Promise<boolean> {
    const token =
      /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1] ??
      (request.headers.get("sec-websocket-protocol") ?? "")
        .split(",")
        .map((p) => p.trim())
        .find((p) => p.startsWith("bearer."))
        ?.slice("bearer.".length);
    if (!token) return false;
    return (await verifyToken(createStorage({ driver: durableObjectDriver(this.state.storage) }), token)) !== undefined;
  }

  /** Why the inbox does not serve this request now: suspended, or a write past its storage limit. */
  private refusal(record: InboxRecord, request: Request): ApiError | undefined {
    if (record.status === "suspended")
      return new ApiError(403, "FORBIDDEN", "this inbox is suspended by the operator of this deployment");
    const path = new URL(request.url).pathname;
    const full = this.storageFull();
    if (
      full &&
      ["POST", "PUT", "PATCH"].includes(request.method) &&
      /^\/v[01]\//.test(path) &&
      // MCP's one endpoint carries reads as well as writes: its tools that write are held back one by one
      // (src/mcp/server.ts, through Tenancy.writesRefused).
      !/^\/v0\/(mcp|sse)/.test(path)
    )
      return new ApiError(507, "STORAGE_LIMIT_REACHED", full, undefined, { "x-should-retry": "false" });
    return undefined;
  }

  /**
   * An inbox that fronts its person's daemon: everything goes to its relay object, which holds the daemon's
   * connection (relay-object.ts). The daemon's dial-in is checked here, against the pairing secret the admin API
   * gave; the relay object trusts what an inbox sends it, as the Worker routes nothing to it directly.
   */
  private async relayed(inbox: string, secretHash: string, request: Request): Promise<Response> {
    if (new URL(request.url).pathname === RELAY_PATH) {
      const offered = /^Bearer\s+(\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
      if (!sameSecret(await hashToken(offered), secretHash))
        return toErrorResponse(
          new ApiError(401, "UNAUTHORIZED", "wrong relay pairing secret: use the one the operator's admin API gave"),
        );
    }
    const relays = this.env.RELAY;
    if (!relays) return toErrorResponse(new ApiError(503, "RELAY_NOT_CONFIGURED", "no RELAY binding"));
    const answer = (await relays.get(relays.idFromName(inbox)).fetch(request as never)) as unknown as Response;
    if (answer.status === 101) return answer;
    // What the daemon answers is its person's code, served on the origin every inbox shares: a page of it runs
    // sandboxed (an origin of its own: no reach into what other inboxes' pages keep there), and it may set no
    // cookie but its own inbox's session.
    const headers = new Headers(answer.headers);
    headers.set("content-security-policy", RELAYED_PAGE_POLICY);
    headers.set("x-content-type-options", "nosniff");
    headers.delete("set-cookie");
    for (const cookie of answer.headers.getSetCookie())
      if (
        cookie.startsWith(`${SESSION_COOKIE}=`) &&
        inboxOf(cookie.slice(SESSION_COOKIE.length + 1).split(";")[0]) === inbox
      )
        headers.append("set-cookie", cookie);
    return new Response(answer.body, { status: answer.status, statusText: answer.statusText, headers });
  }

  /** Why writes are refused now: the inbox holds as much as its storage limit allows (undefined: they are not). */
  private storageFull(): string | undefined {
    const max = this.record?.limits.maxStorageBytes;
    const size = this.state.storage.sql.databaseSize;
    if (max === undefined || size < max) return undefined;
    return (
      `this inbox holds ${size} bytes, at or past its limit of ${max}: ` +
      "delete chats, messages or accounts to free space, or ask the operator to raise the limit"
    );
  }

  /** Counted in memory, saved at most every 10 s (a row write per request would bill a row per request). */
  private async countRequest() {
    this.requests ??= { count: (await this.state.storage.get<number>(REQUESTS_KEY)) ?? 0, savedAt: Date.now() };
    this.requests.count++;
    if (Date.now() - this.requests.savedAt >= REQUESTS_SAVE_MS) await this.saveRequests();
  }

  private async saveRequests() {
    if (!this.requests) return;
    this.requests.savedAt = Date.now();
    await this.state.storage.put(REQUESTS_KEY, this.requests.count);
  }

  /** The single-device inbox keeps its assets where it always had them; every other inbox under its own prefix. */
  private assetDriver(inbox: string | undefined) {
    return r2Driver({ binding: this.env.ASSETS as never, ...(inbox ? { base: `${ASSET_BASE}:${inbox}` } : {}) });
  }

  async tenancyCreate(record: InboxRecord, seed?: SeedOptions): Promise<boolean> {
    this.routedName ??= record.id;
    if (await this.inboxRecord()) return false;
    // Whatever a request in flight during an earlier deletion wrote is not the new inbox's.
    await this.state.storage.deleteAll();
    await this.state.storage.put(RECORD_KEY, record);
    this.keepRecord(record);
    if (seed) await this.seed(await this.ready(), seed);
    return true;
  }

  async tenancyUpdate(record: InboxRecord): Promise<void> {
    const before = await this.inboxRecord();
    if (!before) throw new Error(`no inbox ${record.id} here`);
    await this.state.storage.put(RECORD_KEY, record);
    this.keepRecord(record);
    // A suspension lets go of the networks and the live sockets; a new request budget needs a new app.
    if (record.status === "suspended" || (record.relay && !before.relay))
      await this.closeApp(record.status === "suspended" ? "inbox suspended" : "the inbox now relays to its daemon");
    else if (record.limits.requestsPerSecond !== before.limits.requestsPerSecond) await this.closeApp();
    if (record.relay && !before.relay) await this.state.storage.deleteAlarm();
    // A new pairing secret, or none: the daemon that dialed in with the old one is let go at once.
    if (before.relay && (record.relay?.secretHash !== before.relay.secretHash || record.status === "suspended"))
      await this.dropRelay(record.id);
  }

  async tenancySignInCode(ttlMs: number): Promise<string> {
    const record = await this.inboxRecord();
    if (!record) throw new Error("this object is no inbox");
    const storage = createStorage({ driver: durableObjectDriver(this.state.storage) });
    return new OAuthStore(storage, Date.now, record.id).createSignIn(ttlMs);
  }

  async tenancyUsage(): Promise<InboxUsage> {
    const record = await this.inboxRecord();
    if (!record) throw new Error("this object is no inbox");
    await this.countRequest().then(() => this.requests!.count--);
    await this.saveRequests();
    // A suspended inbox is counted from what its store holds, without connecting its networks again.
    // Counted from the running app, or from what the store holds, without connecting the networks for it.
    const { db } = this.booted ? this.booted.context : await this.readOnlyDb();
    await db.loading;
    const chats = db.chats.all();
    return {
      accounts: db.accounts.length,
      chats: chats.length,
      messages: chats.reduce((n, c) => n + c.nextSeq - (c.firstSeq ?? 0), 0),
      storageBytes: this.state.storage.sql.databaseSize,
      requests: this.requests!.count,
    };
  }

  async tenancyDelete(): Promise<{ assetsDeleted: number }> {
    const record = await this.inboxRecord();
    if (!record) return { assetsDeleted: 0 };
    this.closing = true;
    try {
      await this.closeApp("inbox deleted");
      if (record.relay) await this.dropRelay(record.id);
      // The assets first: should that fail, the record is still there and a retry finds them.
      const assetsDeleted = await this.deleteAssets(record.id);
      await this.state.storage.deleteAlarm();
      await this.state.storage.deleteAll();
      this.keepRecord(null);
      this.requests = undefined;
      this.subscriptions.clear();
      this.states.clear();
      return { assetsDeleted };
    } finally {
      this.closing = false;
    }
  }

  /** Lets go of the daemon connected to this inbox's relay object (relay-object.ts), if one is. */
  private async dropRelay(inbox: string) {
    const relays = this.env.RELAY;
    if (relays) await (relays.get(relays.idFromName(inbox)) as unknown as { disconnect(): Promise<void> }).disconnect();
  }

  /** Ends the running app (its networks, timers, live sockets); the next request boots a new one. */
  private async closeApp(reason?: string) {
    const running = this.app;
    this.app = undefined;
    this.booted = undefined;
    await (await running?.catch(() => undefined))?.close();
    if (reason) for (const ws of this.state.getWebSockets() as unknown as HibernatingSocket[]) ws.close(1008, reason);
  }

  private async readOnlyDb() {
    const { Db } = await import("../../src/store/db.ts");
    return { db: await Db.open(createStorage({ driver: durableObjectDriver(this.state.storage) }), {}) };
  }

  /** An inbox's R2 objects, a page of 1,000 at a time; the single-device inbox's are those outside every prefix. */
  private async deleteAssets(inbox: string): Promise<number> {
    const bucket = this.env.ASSETS as R2Bucket | undefined;
    if (!bucket) return 0;
    const prefix = inbox === DEVICE_INBOX ? undefined : `${ASSET_BASE}:${inbox}:`;
    let deleted = 0;
    let cursor: string | undefined;
    do {
      const page = await bucket.list({ prefix, cursor, limit: 1000 });
      const keys = page.objects.map((o) => o.key).filter((k) => prefix || !k.startsWith(`${ASSET_BASE}:`));
      if (keys.length) await bucket.delete(keys);
      deleted += keys.length;
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
    return deleted;
  }

  private async boot(): Promise<App> {
    // Said once per boot, in the Worker's logs (wrangler tail, the dashboard, wrangler dev's terminal): otherwise a
    // fresh deployment answers every request 401 and nothing says why.
    const inbox = this.multi ? (await this.inboxRecord())?.id : undefined;
    if (this.multi && !inbox) throw new Error("this object is no inbox");
    const isDevice = inbox === undefined || inbox === DEVICE_INBOX;
    if (isDevice && !this.env.INBOXD_ADMIN_TOKEN && !this.multi) console.warn(MISSING_SECRET_WARNING);
    const storage: Storage = createStorage({ driver: durableObjectDriver(this.state.storage) });
    // The secrets are the Worker's tokens: a changed or removed secret ends the token it replaced. They belong to
    // the single-device inbox only: where there are many, every other inbox's tokens come from its own sign-in.
    if (isDevice)
      await syncSecretTokens(storage, [
        { name: "admin", secret: this.env.INBOXD_ADMIN_TOKEN, scopes: ["read", "write"] },
        { name: "read-only", secret: this.env.INBOXD_READ_TOKEN, scopes: ["read"] },
      ]);
    const rateLimit = parseRateLimit(this.env.INBOXD_RATE_LIMIT);
    const perSecond = this.record?.limits.requestsPerSecond;
    const app = await createApp({
      storage,
      allowedHosts: "*",
      assets: this.env.ASSETS
        ? { storage: createStorage({ driver: this.assetDriver(isDevice ? undefined : inbox) }) }
        : undefined,
      // Reminders wake the object with an alarm, which also survives eviction and restarts.
      schedule: (at) => {
        this.wakeAt = at;
        this.setAlarm(this.booted);
      },
      mcp: { tools: parseToolSelection(this.env.INBOXD_MCP_TOOLS) },
      // The budgets live in this object's memory: one object serves the inbox, so it sees every request to it.
      // An inbox's own budget (its operator's limit) replaces the deployment's, even one turned off.
      // (A budget under one request in 4 s still lets one through at a time: the limiter's bursts are at least 1.)
      rateLimit:
        perSecond === undefined ? rateLimit : perSecond > 0 && { perSecond, burst: Math.max(1, perSecond * 4) },
      tenancy: this.tenancy,
      clientAddress: connectingIP,
      loginSessionTtlMs: optionalNumber(this.env.INBOXD_LOGIN_SESSION_TTL_MS),
      sandboxQrDelayMs: optionalNumber(this.env.INBOXD_SANDBOX_QR_DELAY_MS),
      // XMPP over WebSocket only: a Worker cannot open the TCP connections of xmpp:// servers.
      xmpp: { firstBackfill: optionalNumber(this.env.INBOXD_XMPP_FIRST_BACKFILL) },
      matrix: {
        firstBackfill: optionalNumber(this.env.INBOXD_MATRIX_FIRST_BACKFILL),
        loadCrypto: loadMatrixCrypto,
        // 128 MB of memory: an encrypted file is held about four times over while it is encrypted or opened.
        maxEncryptedMediaBytes: 16 * 1024 * 1024,
      },
      desktopApi: {
        openSocket: openUpstreamSocket,
        firstBackfill: optionalNumber(this.env.INBOXD_DESKTOP_API_FIRST_BACKFILL),
      },
      eventLog: eventLogSettings(this.env as unknown as Record<string, string | undefined>),
      accessTokenTtlMs: (optionalNumber(this.env.INBOXD_TOKEN_TTL) ?? 0) * 1000 || undefined,
      info: { platform: { os: "workerd", arch: "unknown" } },
      // Workers logs record every request already; forward only the unexpected errors the core reports.
      log: (line) => {
        if (line.startsWith("error:")) console.error(line);
      },
    });
    this.booted = app;
    // Accounts attached during boot: arm the keep-awake alarm now that the app is known.
    this.setAlarm(app);
    await this.loadSubscriptions();
    app.events.add({ deliver: (events) => this.deliver(events), wants: () => this.state.getWebSockets().length > 0 });
    if (isDevice && this.env.INBOXD_SEED && app.context.db.accounts.length === 0)
      await this.seed(app, parseSeed(this.env.INBOXD_SEED));
    return app;
  }

  private async seed(app: App, options: SeedOptions) {
    const { db, bridges } = app.context;
    await seedDataset(db, options);
    await db.reload();
    for (const account of db.accounts) await bridges.attach(account);
  }
}

/** Well inside the ~70 s of inactivity after which Cloudflare may evict an object. */
const KEEP_AWAKE_MS = 30_000;

const MISSING_SECRET_WARNING =
  "inboxd: no INBOXD_ADMIN_TOKEN secret: every request without another valid token is answered 401; " +
  "set it with wrangler secret put INBOXD_ADMIN_TOKEN (or .dev.vars for wrangler dev)";

function parseSeed(text: string): SeedOptions {
  const options = JSON.parse(text) as Partial<SeedOptions>;
  if (!Number.isInteger(options.chats) || !Number.isInteger(options.messages))
    throw new Error(`INBOXD_SEED must be JSON like {"chats":40,"messages":800,"accounts":2,"seed":7}; got ${text}`);
  return { chats: options.chats!, messages: options.messages!, accounts: options.accounts, seed: options.seed };
}

function optionalNumber(text: string | undefined): number | undefined {
  const n = text === undefined ? NaN : Number(text);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** Makes the tokens named after the secrets be exactly the secrets' (where set): stale ones are revoked. */
async function syncSecretTokens(storage: Storage, secrets: { name: string; secret?: string; scopes: Scope[] }[]) {
  const wanted = new Map<string, string | undefined>();
  for (const s of secrets) wanted.set(s.name, s.secret ? await hashToken(s.secret) : undefined);
  for (const t of await listTokens(storage))
    if (wanted.has(t.name) && t.clientID === undefined && t.id !== wanted.get(t.name))
      await removeTokenByID(storage, t.id);
  for (const s of secrets) if (s.secret) await ensureToken(storage, s.secret, { name: s.name, scopes: s.scopes });
}
