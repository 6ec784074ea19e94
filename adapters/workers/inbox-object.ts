import type { DurableObjectState } from "@cloudflare/workers-types/index.ts";
import { createStorage, type Storage } from "unstorage";
import { createApp, type App } from "../../src/app.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import { seedDataset, type SeedOptions } from "../../src/seed/dataset.ts";
import { ensureToken } from "../../src/services/tokens.ts";
import { durableObjectDriver } from "./durable-object-driver.ts";

/** The vars and secrets the object reads (see wrangler.toml). */
export interface InboxEnv {
  /** A secret: accepted as a read+write token, so a deployed Worker is reachable without a CLI to mint one. */
  INBOXD_ADMIN_TOKEN?: string;
  /** A secret: accepted as a read-only token (dashboards, scripts that must not write). */
  INBOXD_READ_TOKEN?: string;
  /** Test tuning: idle login sessions expire after this many ms; the sandbox QR login completes after this many. */
  INBOXD_LOGIN_SESSION_TTL_MS?: string;
  INBOXD_SANDBOX_QR_DELAY_MS?: string;
  /** JSON `{"chats":40,"messages":800,"accounts":2,"seed":7}`: fill an empty store with a sandbox dataset. */
  INBOXD_SEED?: string;
}

/**
 * One device's inbox: the whole API over this object's storage. The constructor stays light because it re-runs on
 * every wake; the app (which reads meta, accounts and chats) is built on the first request after a wake.
 */
export class InboxObject {
  private app?: Promise<App>;

  constructor(
    private readonly state: DurableObjectState,
    private readonly env: InboxEnv,
  ) {}

  async fetch(request: Request): Promise<Response> {
    // Memoised promise: concurrent first requests share one boot; a failed boot is retried by the next request.
    this.app ??= this.boot().catch((error: unknown) => {
      this.app = undefined;
      throw error;
    });
    let app: App;
    try {
      app = await this.app;
    } catch (error) {
      console.error("inboxd: boot failed:", error);
      return toErrorResponse(error);
    }
    return app.fetch(request);
  }

  private async boot(): Promise<App> {
    const storage: Storage = createStorage({ driver: durableObjectDriver(this.state.storage) });
    const token = this.env.INBOXD_ADMIN_TOKEN;
    if (token) await ensureToken(storage, token, { name: "admin", scopes: ["read", "write"] });
    const readToken = this.env.INBOXD_READ_TOKEN;
    if (readToken) await ensureToken(storage, readToken, { name: "read-only", scopes: ["read"] });
    const app = await createApp({
      storage,
      allowedHosts: "*",
      loginSessionTtlMs: optionalNumber(this.env.INBOXD_LOGIN_SESSION_TTL_MS),
      sandboxQrDelayMs: optionalNumber(this.env.INBOXD_SANDBOX_QR_DELAY_MS),
      info: { platform: { os: "workerd", arch: "unknown" } },
      // Workers logs record every request already; forward only the unexpected errors the core reports.
      log: (line) => {
        if (line.startsWith("error:")) console.error(line);
      },
    });
    if (this.env.INBOXD_SEED && app.context.db.accounts.length === 0) {
      const { db, bridges } = app.context;
      await seedDataset(db, parseSeed(this.env.INBOXD_SEED));
      await db.reload();
      for (const account of db.accounts) await bridges.attach(account);
    }
    return app;
  }
}

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
