import type { DurableObjectState } from "@cloudflare/workers-types/index.ts";
import { createStorage, type Storage } from "unstorage";
import { LIMITS, utf8Length } from "../../src/schema/limits.ts";
import r2Driver from "unstorage/drivers/cloudflare-r2-binding";
import { createApp, type App } from "../../src/app.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import { seedDataset, type SeedOptions } from "../../src/seed/dataset.ts";
import { ensureToken, hashToken, listTokens, removeTokenByID, type Scope } from "../../src/services/tokens.ts";
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
}

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
export class InboxObject {
  private app?: Promise<App>;
  private booted?: App;

  constructor(
    private readonly state: DurableObjectState,
    private readonly env: InboxEnv,
  ) {}

  async fetch(request: Request): Promise<Response> {
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

  private async boot(): Promise<App> {
    // Said once per boot, in the Worker's logs (wrangler tail, the dashboard, wrangler dev's terminal): otherwise a
    // fresh deployment answers every request 401 and nothing says why.
    if (!this.env.INBOXD_ADMIN_TOKEN) console.warn(MISSING_SECRET_WARNING);
    const storage: Storage = createStorage({ driver: durableObjectDriver(this.state.storage) });
    // The secrets are the Worker's tokens: a changed or removed secret ends the token it replaced.
    await syncSecretTokens(storage, [
      { name: "admin", secret: this.env.INBOXD_ADMIN_TOKEN, scopes: ["read", "write"] },
      { name: "read-only", secret: this.env.INBOXD_READ_TOKEN, scopes: ["read"] },
    ]);
    const app = await createApp({
      storage,
      allowedHosts: "*",
      assets: this.env.ASSETS
        ? { storage: createStorage({ driver: r2Driver({ binding: this.env.ASSETS as never }) }) }
        : undefined,
      // Reminders wake the object with an alarm, which also survives eviction and restarts.
      schedule: (at) => {
        this.wakeAt = at;
        this.setAlarm(this.booted);
      },
      mcp: { tools: parseToolSelection(this.env.INBOXD_MCP_TOOLS) },
      // The budgets live in this object's memory: one object serves the device, so it sees every request.
      rateLimit: parseRateLimit(this.env.INBOXD_RATE_LIMIT),
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
    if (this.env.INBOXD_SEED && app.context.db.accounts.length === 0) {
      const { db, bridges } = app.context;
      await seedDataset(db, parseSeed(this.env.INBOXD_SEED));
      await db.reload();
      for (const account of db.accounts) await bridges.attach(account);
    }
    return app;
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
