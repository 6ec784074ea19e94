import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { Miniflare, type MiniflareOptions } from "miniflare";

export interface WorkerdServer {
  /** Loopback base URL (no trailing slash) for real clients: the SDK, fetch, WebSocket. */
  url: string;
  /** Miniflare's in-process fetch, for when a socket is not the point. */
  dispatchFetch: Miniflare["dispatchFetch"];
  /**
   * Restarts workerd on the same port and storage: objects are rebuilt from what they stored (durability tests).
   * `bindings` changes vars and secrets for the new run (undefined removes one), as a redeploy would.
   */
  restart(bindings?: Record<string, string | undefined>): Promise<void>;
  /** Every key in the ASSETS bucket (R2), to see what an inbox left behind. */
  assetKeys(): Promise<string[]>;
  stop(): Promise<void>;
}

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Miniflare's options for the bundle in `outdir` as wrangler.toml binds it, on a free loopback port. */
export async function workerOptions(outdir: string) {
  return {
    modules: true,
    scriptPath: join(outdir, "worker.js"),
    // Module names are paths relative to modulesRoot (default: cwd); one outside it ("../tmp/…") kills workerd.
    modulesRoot: outdir,
    compatibilityDate: await wranglerSetting("compatibility_date"),
    durableObjects: {
      INBOX: { className: "InboxObject", useSQLite: true },
      RELAY: { className: "RelayObject", useSQLite: true },
      REGISTRY: { className: "RegistryObject", useSQLite: true },
    },
    r2Buckets: ["ASSETS"],
    r2Persist: false,
    // A .wasm import is a compiled module, as wrangler's default rules make it (bundleWorker copies the file).
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    host: "127.0.0.1",
    port: 0,
  } satisfies MiniflareOptions;
}

/** Bundles the Worker as wrangler does into `outdir/worker.js` (also used by the benchmark's Worker sections). */
export async function bundleWorker(outdir: string): Promise<void> {
  await build({
    entryPoints: [join(root, "adapters/workers/worker.ts")],
    outfile: join(outdir, "worker.js"),
    bundle: true,
    format: "esm",
    // The workerd conditions pick packages' Workers builds; no node:* is marked external, so a core import of
    // a Node builtin fails here instead of at deploy time.
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    target: "es2022",
    external: ["cloudflare:*"],
    plugins: [wasmBeside(outdir)],
    logLevel: "silent",
  });
}

/** A .wasm import stays an import of a file beside the bundle (workerd compiles it at load), as wrangler does it. */
function wasmBeside(outdir: string): Plugin {
  return {
    name: "wasm-beside",
    setup(b) {
      b.onResolve({ filter: /\.wasm$/ }, async (args) => {
        const source = join(args.resolveDir, args.path);
        const name = basename(source);
        await copyFile(source, join(outdir, name));
        return { path: `./${name}`, external: true };
      });
    },
  };
}

/**
 * Bundles adapters/workers/worker.ts and runs it in workerd (Miniflare 4) on a free 127.0.0.1 port, with the
 * Durable Object binding of wrangler.toml and the admin token / seed vars. Storage belongs to this instance and is
 * thrown away by `stop()`, so every start is a clean device.
 *
 * @example
 * const server = await startWorkerd({ token: "test-token", seed: { chats: 10, messages: 100 } });
 * await fetch(`${server.url}/v1/accounts`, { headers: { authorization: "Bearer test-token" } });
 * await server.stop();
 */
export async function startWorkerd(options: {
  seed?: { chats: number; messages: number; accounts?: number; seed?: number };
  /** A read+write token (INBOXD_ADMIN_TOKEN). */
  token?: string;
  /** The same shape as the Node harness: at most one read+write and one read-only token. */
  tokens?: { token: string; scopes: ("read" | "write")[] }[];
  tuning?: {
    loginSessionTtlMs?: number;
    sandboxQrDelayMs?: number;
    xmppFirstBackfill?: number;
    matrixFirstBackfill?: number;
    desktopApiFirstBackfill?: number;
  };
  /** INBOXD_RATE_LIMIT (default "off": suites load one token far beyond a person's use). */
  rateLimit?: string;
  /** Other vars, as wrangler.toml's [vars] would set them (INBOXD_EVENT_LOG_MAX_EVENTS, …). */
  vars?: Record<string, string>;
  /** Many inboxes (INBOXD_TENANCY=multi), with the operator's admin API behind this token. */
  operatorToken?: string;
  /** Receives what the Worker logs (console.warn…, as workerd's structured logs), which is then not printed. */
  onLog?: (log: { level: string; message: string }) => void;
}): Promise<WorkerdServer> {
  const admin = options.token ?? options.tokens?.find((t) => t.scopes.includes("write"))?.token;
  const reader = options.tokens?.find((t) => !t.scopes.includes("write"))?.token;
  const outdir = await mkdtemp(join(tmpdir(), "inboxd-workerd-"));
  try {
    await bundleWorker(outdir);
    const config: MiniflareOptions = {
      ...(await workerOptions(outdir)),
      bindings: {
        ...(admin ? { INBOXD_ADMIN_TOKEN: admin } : {}),
        ...(reader ? { INBOXD_READ_TOKEN: reader } : {}),
        ...(options.tuning?.loginSessionTtlMs
          ? { INBOXD_LOGIN_SESSION_TTL_MS: String(options.tuning.loginSessionTtlMs) }
          : {}),
        ...(options.tuning?.sandboxQrDelayMs
          ? { INBOXD_SANDBOX_QR_DELAY_MS: String(options.tuning.sandboxQrDelayMs) }
          : {}),
        ...(options.tuning?.xmppFirstBackfill
          ? { INBOXD_XMPP_FIRST_BACKFILL: String(options.tuning.xmppFirstBackfill) }
          : {}),
        ...(options.tuning?.matrixFirstBackfill
          ? { INBOXD_MATRIX_FIRST_BACKFILL: String(options.tuning.matrixFirstBackfill) }
          : {}),
        ...(options.tuning?.desktopApiFirstBackfill
          ? { INBOXD_DESKTOP_API_FIRST_BACKFILL: String(options.tuning.desktopApiFirstBackfill) }
          : {}),
        ...(options.seed ? { INBOXD_SEED: JSON.stringify(options.seed) } : {}),
        INBOXD_RATE_LIMIT: options.rateLimit ?? "off",
        ...(options.operatorToken ? { INBOXD_TENANCY: "multi", INBOXD_OPERATOR_TOKEN: options.operatorToken } : {}),
        ...options.vars,
      },
      // false = a temporary directory of this Miniflare instance: kept across restart(), deleted by dispose().
      durableObjectsPersist: false,
      // Miniflare checks that the handler returns nothing.
      ...(options.onLog
        ? { handleStructuredLogs: (log: { level: string; message: string }) => void options.onLog!(log) }
        : {}),
    };
    const mf = new Miniflare(config);
    const url = await mf.ready.then(
      (u) => u.toString().replace(/\/$/, ""),
      async (error: unknown) => {
        await mf.dispose();
        throw error;
      },
    );
    return {
      url,
      dispatchFetch: mf.dispatchFetch.bind(mf),
      async restart(bindings) {
        if (bindings) {
          const next = { ...(config.bindings as Record<string, string>), ...bindings };
          for (const [k, v] of Object.entries(next)) if (v === undefined) delete next[k];
          config.bindings = next;
        }
        await mf.setOptions(config);
        await mf.ready;
      },
      async assetKeys() {
        const bucket = await mf.getR2Bucket("ASSETS");
        const keys: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await bucket.list({ cursor });
          keys.push(...page.objects.map((o) => o.key));
          cursor = page.truncated ? page.cursor : undefined;
        } while (cursor);
        return keys;
      },
      async stop() {
        await mf.dispose();
        await rm(outdir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(outdir, { recursive: true, force: true });
    throw error;
  }
}

/** Reads one string setting from wrangler.toml, so the harness and a deployment share the same runtime date. */
async function wranglerSetting(name: string): Promise<string> {
  const toml = await readFile(join(root, "wrangler.toml"), "utf8");
  const match = new RegExp(`^${name}\\s*=\\s*"([^"]+)"`, "m").exec(toml);
  if (!match) throw new Error(`wrangler.toml has no ${name}`);
  return match[1];
}
