import { BridgeRuntime } from "./bridges/runtime.ts";
import { LoginSessions } from "./bridges/login-sessions.ts";
import { builtInConnectors } from "./connectors/index.ts";
import { EventHub } from "./events/hub.ts";
import { EventLog } from "./events/log.ts";
import { checkUpgrade, type UpgradeVerdict } from "./events/upgrade.ts";
import { WebhookDispatcher } from "./events/webhook-dispatcher.ts";
import { Admission } from "./http/admission.ts";
import { Pipeline } from "./http/pipeline.ts";
import { RateLimiter } from "./http/rate-limit.ts";
import type { Operation } from "./http/route-kit.ts";
import type { AppOptions } from "./options.ts";
import { addRoutes } from "./routes/index.ts";
import type { ServerInfo } from "./routes/info.ts";
import { presentAccount } from "./services/accounts.ts";
import { assetConfig } from "./services/assets.ts";
import { accountRecords, completeLogin, saveAccountState, syncLoginAccounts } from "./services/bridges.ts";
import type { Context } from "./services/context.ts";
import { ingest } from "./services/ingest.ts";
import { TokenVerifier } from "./services/tokens.ts";
import { nextWakeAt, wake } from "./services/wake.ts";
import { Db } from "./store/db.ts";
import { VERSION } from "./version.ts";

export type { AppOptions } from "./options.ts";

export interface App {
  fetch(request: Request): Promise<Response>;
  /** Vets a WebSocket upgrade of /v1/ws (src/events/upgrade.ts): the subprotocol to select, or the refusal. */
  checkUpgrade(request: Request): Promise<UpgradeVerdict>;
  events: EventHub;
  context: Context;
  /** Every operation the app answers (what GET /v1/spec documents). */
  operations: readonly Operation[];
  /** Does what is due (reminders, timed mutes, webhook retries, expired uploads) and schedules the next wake-up. */
  wake(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Builds the whole API as one fetch handler over the given storage. Runtime-free: the Node daemon and the Worker
 * differ only in the storage driver and the listener they wrap around this. This function only composes; what each
 * part does is in its own module (docs/architecture.md walks through them).
 *
 * @example
 * const app = await createApp({ storage: createStorage() });
 * const res = await app.fetch(new Request("http://127.0.0.1/v1/accounts", { headers: { authorization: `Bearer ${token}` } }));
 */
export async function createApp(options: AppOptions): Promise<App> {
  const now = options.now ?? Date.now;
  // A big store answers its first chat pages before every chat is read (Db.reload's `early`): `db.loading` reads
  // the rest, and every request that needs it waits for it (route-kit.ts), as do the networks and timed work below.
  const db = await Db.open(options.storage, {
    cacheBytes: options.cacheBytes,
    gatherWrites: options.gatherWrites,
    early: { pause: options.nextTurn ?? (() => new Promise((resolve) => setTimeout(resolve, 0))) },
  });
  const loaded = () => db.loading ?? Promise.resolve();
  db.loading?.catch((error) => options.log?.(`error: reading the chats at start-up: ${messageOf(error)}`));
  // The app is the store's one writer, so it keeps the chat snapshot that makes the next start fast. Its identity
  // (how another inboxd tells this one apart) is made on first start and written with this commit.
  db.keepsChatSnapshot = true;
  void db.instanceID;
  await db.commit();

  // The event path, in the order a change takes it: a network's client emits → BridgeRuntime → services/ingest
  // stores it → the store's commit → EventHub turns the commit's changes into events → EventLog logs them in that
  // same commit → once it is durable, every sink: log compaction, webhook delivery, then the runtime's /v1/ws and
  // SSE connections, long-polls and MCP waits (hub.nextCommit). Live-only events (typing) take context.announce to
  // the same sinks, unlogged. The context every service works with is made first: the hub presents accounts with it.
  const log = new EventLog(db.kv, { ...options.eventLog, now });
  await log.load();
  const webhooks = new WebhookDispatcher(db.kv, { fetch: options.fetch, onIdleUntil: () => context.rearm() });
  const context: Context = {
    db,
    webhooks,
    now,
    bridges: new BridgeRuntime(options.connectors ?? builtInConnectors(options, () => db.instanceID), {
      emit: (account, event) => ingest(context, account, event),
      saveState: (account, state) => saveAccountState(context, account, state),
      setLoginAccounts: (account, accounts) => syncLoginAccounts(context, account, accounts),
      records: (account) => accountRecords(context, account),
    }),
    sessions: new LoginSessions({
      ttlMs: options.loginSessionTtlMs,
      complete: (session, result) => completeLogin(context, session, result),
    }),
    assets: assetConfig(options.assets),
    announce: (event) => hub.publish([event]),
    tenancy: options.tenancy,
    rearm: () => options.schedule?.(nextWakeAt(context)),
  };
  const hub = new EventHub(db, log, (account) => presentAccount(account, context));
  db.observeCommits(hub);
  const compactLog = () =>
    log.compactWhenDue().catch((error) => options.log?.(`error: event log compaction: ${messageOf(error)}`));
  hub.add({ deliver: () => void compactLog() });
  await webhooks.load(log);
  hub.add(webhooks);

  // The HTTP surface: one pipeline (src/http/pipeline.ts), then every resource's operations.
  const info: ServerInfo = {
    version: VERSION,
    platform: { os: "unknown", arch: "unknown" },
    remoteAccess: options.remoteAccess ?? options.allowedHosts === "*",
    ...options.info,
  };
  const limiter = options.rateLimit === false ? undefined : new RateLimiter(options.rateLimit, now);
  const admission = new Admission(new TokenVerifier(options.storage, undefined, now), limiter, options.clientAddress);
  const pipeline = new Pipeline({
    context,
    admission,
    guard: options,
    remoteAccess: info.remoteAccess,
    log: options.log,
  });
  addRoutes(pipeline.api, {
    info,
    hub,
    assets: context.assets,
    mcp: { ...options.mcp, log: options.log },
    storage: options.storage,
    now,
    accessTokenTtlMs: options.accessTokenTtlMs,
    fetchClientMetadata: options.fetchClientMetadata,
    tenancy: options.tenancy,
  });
  pipeline.seal();

  // Accounts connect once every commit has its events: what a network delivers as the account connects (a first
  // sync, history, messages that waited) is announced and logged like anything later, not stored unannounced.
  const attachAll = async () => {
    for (const account of db.accounts) await context.bridges.attach(account);
    context.rearm();
  };
  if (db.loading)
    void db.loading.then(attachAll).catch((error) => options.log?.(`error: connecting accounts: ${messageOf(error)}`));
  else await attachAll();
  return {
    context,
    events: hub,
    operations: pipeline.api.operations,
    fetch: (request) => pipeline.fetch(request),
    checkUpgrade: async (request) => {
      await loaded();
      return checkUpgrade(request, { guard: options, admission });
    },
    wake: async () => {
      await loaded();
      return wake(context, compactLog);
    },
    async close() {
      await db.loading?.catch(() => undefined);
      await context.bridges.stop();
      // A snapshot half written stays unnamed; the next start's first build removes its parts.
      db.keepsChatSnapshot = false;
      await db.commit();
      db.close();
    },
  };
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
