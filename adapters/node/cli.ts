import { parseArgs, type ParseArgsConfig } from "node:util";
import { createDataDir, databasePath, defaultDataDir, explainDatabaseError, resolveDataDir } from "./data-dir.ts";
import { VERSION } from "../../src/version.ts";
import { isLoopbackHost } from "../../src/util/hosts.ts";
import { startServer } from "./serve.ts";
import { parseToolSelection, type ToolSelection } from "../../src/mcp/index.ts";
import { BURST_SECONDS, DEFAULT_RATE_LIMIT, parseRateLimit, type RateLimitOptions } from "../../src/http/rate-limit.ts";
import { eventLogSettings } from "../../src/events/log.ts";
import { runSeed } from "./seed-command.ts";
import { runToken } from "./token-command.ts";
import { runOpen } from "./open-command.ts";
import { runWebhook } from "./webhook-command.ts";
import { type InboxFlags, runInbox } from "./inbox-command.ts";
import { UsageError } from "./usage-error.ts";
import { announceURL, lockDataDir } from "./daemon-lock.ts";
import { stopSignal } from "./stop-signal.ts";
import { relayOptions, remoteAccessNotice, remoteAccessOptions, type RemoteAccessFlags } from "./remote-access.ts";

/** The options every command takes, last in each command's help. */
const COMMON = `  --data-dir DIR     the data directory (env INBOXD_DATA_DIR; default ${defaultDataDir()})${
  process.env.INBOXD_DATA_DIR ? `\n                     now ${process.env.INBOXD_DATA_DIR}, from INBOXD_DATA_DIR` : ""
}
  -h, --help         print this help`;

const HELP: Record<string, string> = {
  main: `inboxd ${VERSION} — the Desktop Messaging API as a daemon

Usage: inboxd <command> [options]
       inboxd --version | -v

Commands:
  serve            run the API server (default 127.0.0.1:23373)
  token            create, list and revoke access tokens (OAuth apps' too)
  open             print (and open) a one-time link that signs your browser in: the web inbox, approving apps
  seed             fill the data directory with a deterministic sandbox dataset
  webhook          add, list and remove webhooks (signed POSTs of every live event)
  inbox            an operator's inboxes on a Worker that holds many: create, list, limit, suspend, delete

'inboxd <command> --help' (or 'inboxd help <command>') lists a command's options. Every command takes:
${COMMON}`,
  serve: `Usage: inboxd serve [--port 23373] [--host 127.0.0.1] [--data-dir DIR] [--allow-host NAME]... [--mcp-tools LIST]
                   [--rate-limit N|off] [--token-ttl SECONDS] [--verbose]
                   [--remote-access [--public-url URL] [--trusted-proxy CIDR]...] [--relay URL]

Runs the API. On the first start with no token it creates one and prints it once. At every start it prints a
one-time link that signs your browser in as the owner, to approve apps that ask for access (OAuth). One daemon
serves a data directory at a time: a second serve (or a seed) on it is refused while this one runs.
  --port N           port to listen on (default 23373; 0 picks a free one; env INBOXD_PORT)
  --host ADDR        address to bind (default 127.0.0.1, loopback only)
  --allow-host NAME  also answer requests whose Host is NAME (remote access; repeatable); without it only loopback
                     names (localhost, 127.0.0.1, [::1]) are answered, whatever --host binds
  --remote-access    behind a reverse proxy or tunnel agent: believe its Forwarded / X-Forwarded-Host, -Proto, -Port
                     and -For headers (from trusted proxies only) and build every absolute URL from the public
                     origin; the OAuth discovery documents become readable cross-origin; /v1/info says
                     remote_access: true. Without it forwarded headers are ignored (env INBOXD_REMOTE_ACCESS=1)
  --public-url URL   (with --remote-access) the public origin, e.g. https://inbox.example.com: proxied requests are
                     answered as it, and a forwarded host other than its own (or an --allow-host name) is refused
                     (env INBOXD_PUBLIC_URL)
  --trusted-proxy CIDR
                     (with --remote-access) also believe proxies connecting from this range or address; loopback
                     peers always are; repeatable (env INBOXD_TRUSTED_PROXIES=a,b)
  --relay URL        dial out to a relay Worker (INBOXD_MODE=relay) and answer the requests it forwards: remote
                     access with no open port and no third-party tunnel. Needs INBOXD_RELAY_SECRET in the
                     environment, the same as the Worker's; reconnects by itself (env INBOXD_RELAY_URL)
  --mcp-tools LIST   MCP tools offered at /v0/mcp and /v0/sse: all (default), read-only, or tool names separated
                     by commas (env INBOXD_MCP_TOOLS)
  --rate-limit N     requests per second each token may make on average, in bursts of up to ${BURST_SECONDS}×N
                     (default ${DEFAULT_RATE_LIMIT.perSecond}: bursts of ${DEFAULT_RATE_LIMIT.burst}); over it the answer is 429 with retry-after.
                     0 or off turns rate limits off, also the throttling of failed authentication (default
                     ${DEFAULT_RATE_LIMIT.failedAuthPerMinute} a minute per client address, loopback exempt). Env INBOXD_RATE_LIMIT; the flag wins
  --token-ttl S      lifetime of OAuth access tokens in seconds (default 3600; env INBOXD_TOKEN_TTL); apps renew
                     them with their refresh token
  --verbose          log one line per request to stderr (env INBOXD_LOG=debug)
${COMMON}
Environment: INBOXD_SQLITE_SYNC=FULL (fsync every commit), INBOXD_EVENT_LOG_MAX_AGE=SECONDS and
INBOXD_EVENT_LOG_MAX_EVENTS=N (how long and how many events the event log keeps for resuming clients and webhooks;
default 7 days and 1000000), INBOXD_EVENT_LOG=off (no log: only for measuring its cost; resume, GET /v1/events and
webhooks then have nothing to read). SQLite is node:sqlite on Node 22.13+ and 24, better-sqlite3 on Node 20; the
startup line says which.
Stops cleanly on SIGINT or SIGTERM (exit 0); a shutdown that takes over 10 s gives up with exit 1.`,
  token: `Usage: inboxd token create [--scope read] [--scope write] [--name NAME]
       inboxd token list
       inboxd token revoke ID-PREFIX|NAME

create prints the new token alone on the last line of stdout.
list shows every token: made here, or issued to an app through OAuth (named after the app, with its expiry).
revoke ends a token (give at least 6 characters of its ID), or all tokens of that name (an app's name ends every
token it was given).
Only a hash of each token is stored; a lost token cannot be shown again, revoke it and create another.
Works beside a running daemon (it sees a revocation within a second). list and revoke never create a data
directory: on one without inboxd data they say so.
  --scope SCOPE      what the new token may do: read (look only) or write (change things); repeat it for both
                     (default: read and write)
  --name NAME        a name for the new token, shown by list and accepted by revoke (default "token")
${COMMON}`,
  open: `Usage: inboxd open [--port 23373] [--host 127.0.0.1] [--print]

Prints a one-time link that signs your browser in to the daemon serving this data directory as its owner, so you
can approve apps that ask for access (OAuth); it lands on the web inbox, which asks you to approve it the same
way. The link works once, for 10 minutes. Where a desktop is available it is also opened in your browser. Works
beside the running daemon; on a data directory without inboxd data it says so.
  --port N           the port the daemon listens on, for the link (default 23373, or env INBOXD_PORT)
  --host ADDR        the address the daemon listens on, for the link (default 127.0.0.1)
  --print            only print the link, never open a browser
${COMMON}`,
  webhook: `Usage: inboxd webhook add URL [--chat CHAT-ID]...
       inboxd webhook list
       inboxd webhook remove WEBHOOK-ID

add prints the signing secret alone on the last line of stdout (shown once). Each delivery is a POST of the event
as JSON with the headers x-inboxd-event, x-inboxd-delivery (the idempotency ID), x-inboxd-timestamp and
x-inboxd-signature: sha256=HMAC-SHA256(secret, "<timestamp>.<body>") in hex. Failed deliveries are retried with
backoff (10 attempts), across restarts.
list shows each webhook's delivered and failed counts, its cursor in the event log, the events after it (at most)
and the last error, as last stored by the daemon.
remove takes the ID, or its first 6 or more characters if no other webhook's ID starts with them.
A running daemon picks changes up within 2 seconds. list and remove never create a data directory: on one
without inboxd data they say so.
  --chat CHAT-ID     (add) send only the events of this chat; repeatable (default: every chat)
${COMMON}`,
  inbox: `Usage: inboxd inbox create [ID] [--name NAME] [--max-accounts N] [--max-storage-bytes N]
                           [--requests-per-second N]
       inboxd inbox list [--limit N] [--after ID]
       inboxd inbox show ID
       inboxd inbox suspend ID
       inboxd inbox resume ID
       inboxd inbox limits ID [--max-accounts N|none] [--max-storage-bytes N|none]
                              [--requests-per-second N|none]
       inboxd inbox sign-in-link ID
       inboxd inbox relay ID [--off]
       inboxd inbox delete ID --yes
Each takes --url URL and --json.

The operator's side of a Worker that holds many inboxes (INBOXD_TENANCY=multi), through its admin API at
URL/admin/v1/inboxes. The operator token is read from the environment variable INBOXD_OPERATOR_TOKEN only (the
Worker's secret of that name), never from a flag: there it would land in shell history and the process list.
create makes an inbox (ID: 1–32 lower-case letters, digits or inner hyphens; default a random one) and prints its
one-time sign-in link alone on the last line of stdout: send it to the person the inbox is for; it signs their
browser in as the inbox's owner, works once, and expires after 10 minutes (the time is printed).
sign-in-link makes another such link (the last one may have expired or been used).
relay makes the inbox front its person's own daemon (docs/many-inboxes.md) and prints the pairing secret, once: on
their machine, INBOXD_RELAY_SECRET=<it> inboxd serve --relay URL. A new one replaces the last; --off ends the relay.
list shows every inbox in ID order (or --limit N of them, from the one after --after ID): its ID, name, status,
creation time and limits; a listing cut short by --limit ends by saying where the next begins. show adds what it holds and has served:
accounts, chats, messages, storage and requests.
suspend refuses every request to the inbox (403) and lets go of its networks and live connections; its data is
kept. resume serves it again.
limits sets the limits given and keeps the others: it reads the inbox's limits and sends back the whole set with
the changes (the API replaces the set as a whole; a change made by someone else in between is lost). none removes
a limit. With no limit option it prints the inbox's limits.
delete deletes the inbox's storage (accounts, chats, messages, tokens) and its assets (files) for good; without
--yes it only says what it would delete.
  --url URL          the Worker's origin, e.g. https://inboxd.example.net (env INBOXD_OPERATOR_URL): https,
                     or http only to a loopback address (wrangler dev)
  --json             print the API's JSON answer as it came, instead of text (list: its pages joined, as
                     {items, hasMore, nextAfter})
  --name NAME        (create) a name for the inbox, shown by list and show
  --max-accounts N   (create, limits) how many accounts the inbox may hold: a login past it is refused
  --max-storage-bytes N
                     (create, limits) how much the inbox may store, in bytes or with a unit (500MB, 2GiB): past it,
                     requests that add data are refused (507)
  --requests-per-second N
                     (create, limits) requests per second each token may make, in bursts of 4×N; 0 turns rate
                     limits off for this inbox, even the deployment's; without it (or none) the deployment's
                     applies (INBOXD_RATE_LIMIT)
  --yes              (delete) delete for good
  -h, --help         print this help
A create without limit options gives the deployment's default limits (the Worker's INBOXD_INBOX_LIMITS); with any,
the inbox has only those (none: not that one).
Exit status: 0 done, 2 a usage error (or a delete without --yes), 1 the Worker refused (its message and HTTP status
are printed) or could not be reached.`,
  seed: `Usage: inboxd seed --chats N --messages M [--accounts K] [--seed S]

Fills an empty data directory with a deterministic sandbox dataset (same options, same data). Refuses while a
daemon serves the directory: stop it first. Interrupted (Ctrl-C), it leaves the directory as it was, so the next
seed starts over.
  --chats N          how many chats to create (at least 1): about 70 % direct chats, the rest groups
  --messages M       how many messages in all, spread over the chats (a few busy chats, many quiet ones) and
                     over the last two years
  --accounts K       how many sandbox accounts the chats are shared among (default 1)
  --seed S           the random seed: another S gives other data of the same size (default 1)
${COMMON}`,
};

/** How long `serve` may take to stop after SIGINT/SIGTERM before it gives up (service managers wait ~10–90 s). */
const SHUTDOWN_LIMIT_MS = 10_000;

const common = { "data-dir": { type: "string" }, help: { type: "boolean", short: "h" } } as const;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--version" || command === "-v") {
    console.log(VERSION);
    return 0;
  }
  if (command === "help" && isCommand(rest[0])) return help(rest[0]);
  if (!command) {
    // No command is a usage error like any other (exit 2); the help goes where errors go.
    console.error(HELP.main);
    return 2;
  }
  if (command === "--help" || command === "-h" || command === "help") {
    console.log(HELP.main);
    return 0;
  }
  const parse = <T extends ParseArgsConfig["options"]>(options: T, positionals = false) => {
    swallowedByNpm(Object.keys({ ...common, ...options }), rest);
    return parseArgs({ args: rest, options: { ...common, ...options }, allowPositionals: positionals, strict: true });
  };
  try {
    switch (command) {
      case "serve": {
        const { values } = parse({
          port: { type: "string", default: process.env.INBOXD_PORT ?? "23373" },
          host: { type: "string", default: "127.0.0.1" },
          "allow-host": { type: "string", multiple: true },
          "mcp-tools": { type: "string", default: process.env.INBOXD_MCP_TOOLS },
          "rate-limit": { type: "string", default: process.env.INBOXD_RATE_LIMIT },
          "token-ttl": { type: "string", default: process.env.INBOXD_TOKEN_TTL },
          // No -v: that is --version, before any command.
          verbose: { type: "boolean" },
          "remote-access": { type: "boolean" },
          "public-url": { type: "string" },
          "trusted-proxy": { type: "string", multiple: true },
          relay: { type: "string" },
        });
        if (values.help) return help("serve");
        const port = Number(values.port);
        if (!Number.isInteger(port) || port < 0 || port > 65535)
          throw new UsageError(`--port must be 0–65535, got ${values.port}`);
        let tools: ToolSelection;
        try {
          tools = parseToolSelection(values["mcp-tools"] as string | undefined);
        } catch (error) {
          throw new UsageError(`--mcp-tools: ${(error as Error).message}`);
        }
        let rateLimit: RateLimitOptions | false | undefined;
        try {
          rateLimit = parseRateLimit(values["rate-limit"] as string | undefined);
        } catch (error) {
          throw new UsageError(`--rate-limit: ${(error as Error).message}`);
        }
        const ttl = values["token-ttl"] === undefined ? undefined : Number(values["token-ttl"]);
        if (ttl !== undefined && (!Number.isInteger(ttl) || ttl < 60 || ttl > 30 * 86_400))
          throw new UsageError(`--token-ttl must be seconds from 60 to 2592000 (30 days), got ${values["token-ttl"]}`);
        const remoteAccess = remoteAccessOptions(values as RemoteAccessFlags);
        const relay = relayOptions(values as RemoteAccessFlags);
        let eventLog: ReturnType<typeof eventLogSettings>;
        try {
          eventLog = eventLogSettings(process.env);
        } catch (error) {
          throw new UsageError((error as Error).message);
        }
        const dataDir = resolveDataDir(values["data-dir"] as string | undefined);
        let unlock = () => {};
        const host = values.host as string;
        const allowHosts = (values["allow-host"] as string[] | undefined) ?? [];
        // Listen before starting: a supervisor may signal as soon as it sees the "listening" line (or earlier), and
        // a signal with no listener yet would kill the process outright. One that comes during start-up stops the
        // daemon cleanly once it is up.
        const stopping = stopSignal();
        const server = await startServer({
          port,
          host,
          dbPath: databasePath(dataDir),
          allowHosts,
          remoteAccess,
          relay,
          mcp: { tools },
          rateLimit,
          accessTokenTtlMs: ttl === undefined ? undefined : ttl * 1000,
          eventLog,
          verbose: Boolean(values.verbose || process.env.INBOXD_LOG === "debug"),
          print: (line) => console.log(line),
          // Once the port is ours: a port in use leaves no data dir behind. The kernel drops the lock if we die.
          claimDataDir() {
            createDataDir(dataDir);
            const release = lockDataDir(dataDir, "serve");
            unlock = release;
          },
        }).catch((error) => {
          throw explainDatabaseError(error, databasePath(dataDir));
        });
        const unannounce = announceURL(dataDir, server.url);
        console.log(
          `inboxd listening on ${server.url} (data: ${dataDir}; SQLite through ${server.sqlite} on Node ${process.versions.node})`,
        );
        console.log(
          `Web inbox: ${server.url}/ — sign your browser in once with this link (it works once, for 10 minutes; inboxd open makes another): ${server.signInLink}`,
        );
        if (remoteAccess) console.log(remoteAccessNotice(remoteAccess, allowHosts));
        else if (!isLoopbackHost(host.includes(":") ? `[${host}]` : host) && allowHosts.length === 0)
          console.error(
            `inboxd: listening on ${host}, but answering only requests whose Host is a loopback name (localhost, 127.0.0.1, [::1]); add --allow-host NAME for each name clients use to reach it`,
          );
        await stopping;
        console.log("inboxd stopping");
        setTimeout(() => {
          console.error(`inboxd: shutdown did not finish within ${SHUTDOWN_LIMIT_MS / 1000} s; exiting`);
          process.exit(1);
        }, SHUTDOWN_LIMIT_MS).unref();
        await server.close();
        unannounce();
        unlock();
        return 0;
      }
      case "token": {
        const { values, positionals } = parse(
          { scope: { type: "string", multiple: true }, name: { type: "string" } },
          true,
        );
        if (values.help) return help("token");
        return await runToken(
          resolveDataDir(values["data-dir"] as string | undefined),
          positionals,
          values as { scope?: string[]; name?: string },
        );
      }
      case "open": {
        const { values } = parse({ port: { type: "string" }, host: { type: "string" }, print: { type: "boolean" } });
        if (values.help) return help("open");
        const port = values.port === undefined ? undefined : Number(values.port);
        if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535))
          throw new UsageError(`--port must be 1–65535, got ${values.port}`);
        return await runOpen(resolveDataDir(values["data-dir"] as string | undefined), {
          port,
          host: values.host as string | undefined,
          print: Boolean(values.print),
        });
      }
      case "webhook": {
        const { values, positionals } = parse({ chat: { type: "string", multiple: true } }, true);
        if (values.help) return help("webhook");
        return await runWebhook(
          resolveDataDir(values["data-dir"] as string | undefined),
          positionals,
          values as { chat?: string[] },
        );
      }
      case "inbox": {
        const options = {
          ...common,
          url: { type: "string" },
          json: { type: "boolean" },
          name: { type: "string" },
          "max-accounts": { type: "string" },
          "max-storage-bytes": { type: "string" },
          "requests-per-second": { type: "string" },
          limit: { type: "string" },
          after: { type: "string" },
          yes: { type: "boolean" },
          off: { type: "boolean" },
          // Only to refuse it with the reason (inbox-command.ts): the token is read from the environment.
          token: { type: "string" },
        } as const;
        // Not --yes: `npx --yes inboxd inbox list` has npm_config_yes set, which is no mistake there. A --yes npm
        // took for itself leaves a delete refused, which says so (inbox-command.ts).
        swallowedByNpm(
          Object.keys(options).filter((name) => name !== "yes"),
          rest,
        );
        const { values, positionals } = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
        if (values.help) return help("inbox");
        if (values["data-dir"] !== undefined)
          throw new UsageError("inbox works on a Worker's inboxes (--url), not a data directory: drop --data-dir");
        return await runInbox(positionals, values as InboxFlags);
      }
      case "seed": {
        const { values } = parse({
          chats: { type: "string" },
          messages: { type: "string" },
          accounts: { type: "string", default: "1" },
          seed: { type: "string", default: "1" },
        });
        if (values.help) return help("seed");
        const num = (name: string, min: number) => {
          const raw = values[name as keyof typeof values] as string | undefined;
          const n = Number(raw);
          if (raw === undefined || !Number.isInteger(n) || n < min)
            throw new UsageError(`--${name} must be an integer ≥ ${min}`);
          return n;
        };
        return await runSeed(resolveDataDir(values["data-dir"] as string | undefined), {
          chats: num("chats", 1),
          messages: num("messages", 0),
          accounts: num("accounts", 1),
          seed: num("seed", 0),
        });
      }
      default: {
        const near = nearest(command, Object.keys(HELP).filter(isCommand));
        throw new UsageError(`unknown command ${command}${near ? ` (did you mean ${near}?)` : ""}`);
      }
    }
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      const hint =
        error instanceof UsageError && !error.pointToHelp
          ? ""
          : `\nRun 'inboxd ${isCommand(command) ? `${command} ` : ""}--help' for usage.`;
      console.error(`inboxd: ${(error as Error).message}${hint}`);
      return 2;
    }
    throw error;
  }
}

/**
 * `npm run -s inboxd token list --data-dir X` (no `--`) hands `--data-dir X` to npm, which keeps it as its own
 * setting (npm_config_data_dir) and runs the command without it: on the default data directory, silently. Under npm,
 * an option of ours found there and not among the arguments is that mistake: refuse it, saying where `--` goes.
 */
function swallowedByNpm(names: string[], args: string[]) {
  if (!process.env.npm_lifecycle_event) return;
  for (const name of names) {
    const value = process.env[`npm_config_${name.replace(/-/g, "_")}`];
    if (value === undefined || args.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`))) continue;
    throw new UsageError(
      `npm took --${name} for itself: put -- before inboxd's options (npm run -s inboxd -- <command> --${name} …, or npm start -- --${name} …)`,
      false,
    );
  }
}

const isCommand = (name: string | undefined): name is string =>
  name !== undefined && name !== "main" && Object.hasOwn(HELP, name);

function help(command: string): number {
  console.log(HELP[command]);
  return 0;
}

/** The candidate nearest to `word` by edit distance, if it is near enough to be what was meant (a typo or two). */
function nearest(word: string, candidates: string[]): string | undefined {
  const scored = candidates.map((candidate) => ({ candidate, distance: editDistance(word.toLowerCase(), candidate) }));
  const best = scored.sort((a, b) => a.distance - b.distance)[0];
  return best && best.distance <= Math.max(1, Math.floor(best.candidate.length / 3)) ? best.candidate : undefined;
}

/** Levenshtein distance: insertions, deletions and substitutions, one row at a time. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length];
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`inboxd: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
