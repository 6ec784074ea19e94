import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../bench/daemon.ts";
import {
  aptInstall,
  delay,
  readLog,
  run,
  startServer,
  tail,
  type Running,
  type ServerControl,
} from "./server-process.ts";

/** A real Prosody server on loopback ports, with its own config, data and log in a temp dir. */
export interface ProsodyServer extends ServerControl {
  domain: "localhost";
  /** The MUC component (XEP-0045, with MUC MAM). */
  mucDomain: string;
  /** The HTTP upload component (XEP-0363). */
  uploadDomain: string;
  host: "127.0.0.1";
  /** Client-to-server port: the service `xmpp://127.0.0.1:PORT`. */
  port: number;
  /** Serves the WebSocket, BOSH and upload routes. */
  httpPort: number;
  websocketURL: string;
  /** Creates (or re-passwords) an account, running or not; resolves with its bare JID. */
  register(user: string, password: string): Promise<string>;
  /** Stops gracefully and starts again on the same ports and data: sessions drop, accounts and archives stay. */
  restart(): Promise<void>;
}

const DOMAIN = "localhost";
const HOST = "127.0.0.1";
const READY_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 5_000;

/**
 * Starts Prosody in the foreground on free loopback ports and resolves once it answers an XMPP stream.
 * `extraConfig` is Lua appended to the global section (it may also open further VirtualHost/Component sections).
 */
export async function startProsody(options: { extraConfig?: string } = {}): Promise<ProsodyServer> {
  await ensureProsodyInstalled();
  const dir = mkdtempSync(join(tmpdir(), "inboxd-prosody-"));
  mkdirSync(join(dir, "data"));
  mkdirSync(join(dir, "certs"));
  const configPath = join(dir, "prosody.cfg.lua");
  const logPath = join(dir, "prosody.log");
  let ports = { c2s: 0, http: 0 };
  const server = await startServer({
    name: "Prosody",
    dir,
    bindFailed: BIND_FAILED,
    graceMs: STOP_GRACE_MS,
    async configure() {
      ports = { c2s: await freePort(), http: await freePort() };
      writeFileSync(configPath, prosodyConfig(dir, ports, options.extraConfig ?? ""));
    },
    spawn: () => ({ command: ["prosody", "--config", configPath, "-F"] }),
    ready: (running) => waitUntilReady(running, ports.c2s, logPath),
    logTail: (output) => tail(logPath, output),
  });

  return {
    domain: DOMAIN,
    mucDomain: `conference.${DOMAIN}`,
    uploadDomain: `upload.${DOMAIN}`,
    host: HOST,
    port: ports.c2s,
    httpPort: ports.http,
    websocketURL: `ws://${HOST}:${ports.http}/xmpp-websocket`,
    register: (user, password) => register(configPath, user, password),
    ...server,
  };
}

/** Every option is checked against Prosody 0.12's module sources (/usr/lib/prosody/modules). */
function prosodyConfig(dir: string, ports: { c2s: number; http: number }, extraConfig: string): string {
  const path = (name: string) => JSON.stringify(join(dir, name));
  return `-- Written by test/harness/prosody.ts for one test server.
run_as_root = true
pidfile = ${path("prosody.pid")}
data_path = ${path("data")}
certificates = ${path("certs")} -- an empty dir: no TLS, and no warning about a missing one
log = { { levels = { min = "info" }, to = "file", filename = ${path("prosody.log")} } }

interfaces = { "${HOST}" }
c2s_ports = { ${ports.c2s} }
s2s_ports = {}
http_ports = { ${ports.http} }
http_interfaces = { "${HOST}" }
https_ports = {}
-- Listeners read 4 KiB at a time and pause ~1 ms whenever more is pending: uploads crawl at ~4 MB/s. 256 KiB
-- reads take a 20 MB upload from ~5 s to ~0.4 s.
network_default_read_size = 256 * 1024

-- Plain TCP on loopback: no TLS, and PLAIN allowed so that test clients can skip SCRAM's slow PBKDF2.
c2s_require_encryption = false
allow_unencrypted_plain_auth = true
consider_websocket_secure = true
authentication = "internal_hashed"

modules_enabled = {
  "roster", "saslauth", "disco", "carbons", "pep", "private", "blocklist", "vcard4", "vcard_legacy",
  "register", "mam", "smacks", "websocket", "bosh", "ping", "time", "version",
}
modules_disabled = { "s2s", "tls" }
-- mod_limits (the c2s rate limit) is not enabled, so fast test traffic is never throttled.

-- Keep every archived message: the default expires them after a week and caps an archive at 10,000 items.
default_archive_policy = true
archive_expires_after = "never"
muc_log_expires_after = "never"
max_archive_query_results = 1000
storage_archive_item_limit = 1000000

muc_room_default_persistent = true
muc_room_default_public_jids = true

http_file_share_size_limit = 50 * 1024 * 1024
http_file_share_daily_quota = 1024 * 1024 * 1024

${extraConfig}

VirtualHost "${DOMAIN}"

Component "conference.${DOMAIN}" "muc"
  modules_enabled = { "muc_mam" }

Component "upload.${DOMAIN}" "http_file_share"
  -- Without http_host the upload routes are served for Host "upload.localhost", which loopback requests never carry.
  http_host = "${HOST}"
  http_external_url = "http://${HOST}:${ports.http}/"
`;
}

/**
 * Prosody logs a port it cannot bind and keeps running without it, so startServer() retries a first start on fresh
 * ports when its log says this.
 */
const BIND_FAILED = "Failed to open server port";

/** Resolves once Prosody answers a stream header with its features: every host and component is loaded then. */
async function waitUntilReady(running: Running, port: number, logPath: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const logged = readLog(logPath).length; // the log survives restarts: only this start's lines count
  while (Date.now() < deadline) {
    if (running.ended()) {
      throw new Error(`Prosody exited during startup:\n${tail(logPath, running.output())}`);
    }
    if (readLog(logPath).slice(logged).includes(BIND_FAILED)) {
      throw new Error(`Prosody could not bind its ports (${BIND_FAILED}):\n${tail(logPath, running.output())}`);
    }
    if (await answersXmpp(port)) return;
    await delay(50);
  }
  throw new Error(
    `Prosody did not answer on port ${port} within ${READY_TIMEOUT_MS} ms:\n${tail(logPath, running.output())}`,
  );
}

function answersXmpp(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, HOST);
    let received = "";
    const done = (ready: boolean) => {
      socket.destroy();
      resolve(ready);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () =>
      socket.write(
        `<?xml version='1.0'?><stream:stream to='${DOMAIN}' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>`,
      ),
    );
    socket.on("data", (data) => {
      received += data;
      if (received.includes("features")) done(true);
    });
  });
}

/** prosodyctl writes the account into the data store directly; a running server reads it at the next login. */
async function register(configPath: string, user: string, password: string): Promise<string> {
  await run("prosodyctl", ["--config", configPath, "register", user, DOMAIN, password]);
  return `${user}@${DOMAIN}`;
}

let installation: Promise<void> | undefined;

/**
 * Installs Prosody with apt when it is missing and this process runs as root (as CI does); otherwise says what
 * to install. Once per process; concurrent test workers serialise on a lock file.
 */
export function ensureProsodyInstalled(): Promise<void> {
  installation ??= install();
  return installation;
}

const INSTALL_HINT =
  "Prosody (0.12 or newer) is not installed: run `sudo apt-get install -y prosody` (Debian/Ubuntu), which provides `prosody` and `prosodyctl`.";

async function install(): Promise<void> {
  if (prosodyInstalled()) return;
  await aptInstall(["prosody"], {
    lock: "inboxd-prosody-install.lock",
    unless: "command -v prosody >/dev/null",
    notRoot: INSTALL_HINT,
    failed: `installing Prosody failed; ${INSTALL_HINT}`,
  });
  if (!prosodyInstalled()) throw new Error(`apt-get reported success but ${INSTALL_HINT}`);
}

function prosodyInstalled(): boolean {
  return spawnSync("sh", ["-c", "command -v prosody && command -v prosodyctl"], { stdio: "ignore" }).status === 0;
}
