import type { Storage } from "unstorage";
import type { NetworkConnector } from "./bridges/connector.ts";
import type { DesktopApiOptions } from "./connectors/desktop-api/index.ts";
import type { MatrixOptions } from "./connectors/matrix/index.ts";
import type { XmppOptions } from "./connectors/xmpp/index.ts";
import type { EventLogOptions } from "./events/log.ts";
import type { GuardOptions } from "./http/guard.ts";
import type { RateLimitOptions } from "./http/rate-limit.ts";
import type { McpOptions } from "./mcp/index.ts";
import type { ServerInfo } from "./routes/info.ts";
import type { AssetOptions } from "./services/assets.ts";
import type { FetchClientMetadata } from "./oauth/client-metadata.ts";
import type { Tenancy } from "./tenancy.ts";

/**
 * Everything a runtime hands `createApp` (src/app.ts): the storage, what only it can do (timers, transports, the
 * client's address), and the settings its command line or bindings chose. Every field but `storage` has a default.
 */
export interface AppOptions extends GuardOptions {
  storage: Storage;
  connectors?: NetworkConnector[];
  info?: Partial<ServerInfo>;
  /** Called once per request with a log line (no secrets, no query values). */
  log?: (line: string) => void;
  now?: () => number;
  cacheBytes?: number;
  /** How a commit waits for the writes of concurrent requests to join it (KvOptions.gatherWrites; default: no wait). */
  gatherWrites?: () => Promise<void>;
  /**
   * How start-up lets requests in between the parts of a big chat snapshot it reads after answering the first chat
   * pages (Db.reload's `early`): one turn of the event loop (default: a zero timeout).
   */
  nextTurn?: () => Promise<void>;
  /** Idle login sessions expire after this long (default 10 minutes). */
  loginSessionTtlMs?: number;
  /** How long the sandbox QR login waits before completing on its own (default 1.5 s). */
  sandboxQrDelayMs?: number;
  /** How long the sandbox's Echo takes to answer (default 20–60 ms at random; benchmarks set a fixed one). */
  sandboxEchoDelayMs?: number;
  /**
   * Asks the runtime to call `App.wake()` at the given time (ms since epoch), replacing any earlier request;
   * undefined cancels it. The daemon uses a timer, the Worker a Durable Object alarm.
   */
  schedule?: (at: number | undefined) => void;
  /** The fetch webhooks are delivered with (default: the global one). */
  fetch?: typeof fetch;
  /**
   * Where asset bytes go (raw items; default: memory) and, on the daemon, the directory whose file:// URLs name
   * them. Uploads never sent are deleted after `uploadTtlMs` (default 24 h).
   */
  assets?: AssetOptions;
  /**
   * XMPP: transports besides WebSocket (the daemon adds TCP with STARTTLS, adapters/node/xmpp-tcp.ts), and how many
   * messages of each archive a first connect reads (default 10,000; older ones load when a client pages back).
   */
  xmpp?: XmppOptions;
  /** Matrix: how many messages of each room a first sync loads (default 50). */
  matrix?: MatrixOptions;
  /** Another Desktop API server as a network: how the runtime opens its WebSocket, and the first load's size. */
  desktopApi?: DesktopApiOptions;
  /** MCP tools offered: "all" (default), "read-only", or tool names (src/mcp/options.ts). */
  mcp?: Pick<McpOptions, "tools">;
  /** How long an OAuth access token lives (default 1 hour). */
  accessTokenTtlMs?: number;
  /** How an OAuth client's metadata URL is fetched (the daemon pins checked addresses); default fetch. */
  fetchClientMetadata?: FetchClientMetadata;
  /** Per-token request budgets and failed-authentication throttling (src/http/rate-limit.ts); false turns them off. */
  rateLimit?: RateLimitOptions | false;
  /** The client's network address, as the runtime knows it (for throttling failed authentication). */
  clientAddress?: (request: Request) => string | undefined;
  /**
   * Remote access through a proxy or tunnel (the daemon reads forwarded headers, adapters/node/forwarded.ts): the OAuth
   * discovery documents are readable cross-origin and /v1/info says `remote_access: true`. Default: on where any Host
   * is answered (the Worker), off otherwise.
   */
  remoteAccess?: boolean;
  /** Where one deployment holds many inboxes (src/tenancy.ts); absent on a single device. */
  tenancy?: Tenancy;
  /** Retention of the durable event log (default 7 days and 1,000,000 events). */
  eventLog?: Pick<EventLogOptions, "maxAgeMs" | "maxEvents" | "enabled">;
}
