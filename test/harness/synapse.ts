import { createHash, createHmac, generateKeyPairSync, randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../bench/daemon.ts";
import { aptInstall, delay, run, startServer, tail, type Running, type ServerControl } from "./server-process.ts";

/** A real Synapse homeserver on a loopback port, with its own config, SQLite database, media and log in a temp dir. */
export interface SynapseServer extends ServerControl {
  /** MXIDs are `@user:serverName`. */
  serverName: string;
  /** The client-server API base, `http://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** Registers a user through the shared-secret admin API, which also logs it in (one device). */
  register(
    localpart: string,
    password: string,
    options?: { admin?: boolean; displayName?: string },
  ): Promise<{ userID: string; accessToken: string; deviceID: string }>;
  /** Stops gracefully (SIGTERM) and starts again on the same port and data (users, rooms, media kept). */
  restart(): Promise<void>;
  /** The tail of homeserver.log and of what the process printed, for failure messages. */
  log(): string;
}

const SERVER_NAME = "test.local";
const HOST = "127.0.0.1";
const PYTHON = "/usr/bin/python3";
/**
 * Measured here (2026-11-28): a start takes ~2 s (fresh SQLite schema included), a restart ~1.5 s, and the very first
 * start on a machine ~4 s (unpacking, and Python compiling the .pyc it caches beside the source).
 */
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;
/** Synapse quits at start-up with this when its port is taken (CannotListenError). */
const BIND_FAILED = "Address already in use";
/** Between the log file and the process output in failure messages. */
const OUTPUT_HEADING = "--- process output ---\n";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DEFAULT_SOURCE = resolve(REPO_ROOT, "../shared/vendor/synapse-1.67.0.tar.gz");
const NEEDED =
  "Synapse 1.67.0 source is needed to run a real Matrix homeserver for these tests (the last Synapse release that is " +
  "pure Python, so it runs on Debian's python3 packages alone); set INBOXD_SYNAPSE_SOURCE to the tarball " +
  "(the v1.67.0 tag of matrix-org/synapse) " +
  "or to an unpacked copy of it.";

/** Where the source comes from, or why it is missing (for suites that must say so). */
export function synapseSource(): { path: string } | { missing: string } {
  const named = process.env.INBOXD_SYNAPSE_SOURCE;
  if (named) {
    const path = resolve(named);
    return existsSync(path)
      ? { path }
      : { missing: `INBOXD_SYNAPSE_SOURCE is set to ${path}, which does not exist. ${NEEDED}` };
  }
  return existsSync(DEFAULT_SOURCE)
    ? { path: DEFAULT_SOURCE }
    : { missing: `${NEEDED} (It was looked for at ${DEFAULT_SOURCE}.)` };
}

/**
 * What the benchmark's Synapse leaves out, so that its figures show the client more than the server's housekeeping
 * (measured here, 2026-12-01: about 5 ms less Synapse CPU per sent event, and half the PUT /send latency with the
 * database on tmpfs, where SQLite's ~12 fdatasync calls per send cost nothing). None of it changes what a client
 * sees of rooms, messages, media or sync; the user directory stops following profile changes.
 */
const LEAN_CONFIG = {
  use_presence: false,
  stats: { enabled: false },
  update_user_directory_from_worker: "nobody",
  notify_appservices_from_worker: "nobody",
  send_federation: false,
  start_pushers: false,
};

/**
 * Starts Synapse in the foreground on a free loopback port and resolves once `/_matrix/client/versions` answers.
 * `extraConfig` keys replace the harness's top-level config keys (e.g. a low `rc_message` to provoke M_LIMIT_EXCEEDED).
 * `lean` (benchmarks): LEAN_CONFIG, warnings only in the log, and the data dir on /dev/shm where there is one.
 */
export async function startSynapse(
  options: { extraConfig?: Record<string, unknown>; lean?: boolean } = {},
): Promise<SynapseServer> {
  const { root, pythonPath } = await prepareSource();
  const dir = mkdtempSync(join(options.lean && existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "inboxd-synapse-data-"));
  const configPath = join(dir, "homeserver.yaml");
  const logPath = join(dir, "homeserver.log");
  const secret = randomBytes(24).toString("hex");
  writeFileSync(join(dir, "signing.key"), signingKey());
  writeFileSync(join(dir, "log.yaml"), JSON.stringify(logConfig(logPath, options.lean ? "WARNING" : "INFO"), null, 2));
  // Secrets stay fixed across restarts, so access tokens and macaroons issued before a restart stay valid.
  const secrets = {
    registration_shared_secret: secret,
    macaroon_secret_key: randomBytes(24).toString("hex"),
    form_secret: randomBytes(24).toString("hex"),
  };
  let port = 0;
  const logTail = (output: string) => tail(logPath, output, OUTPUT_HEADING);
  const server = await startServer({
    name: "Synapse",
    dir,
    bindFailed: BIND_FAILED,
    graceMs: STOP_GRACE_MS,
    async configure() {
      port = await freePort();
      const config = {
        ...synapseConfig(dir, port, secrets),
        ...(options.lean ? LEAN_CONFIG : {}),
        ...options.extraConfig,
      };
      writeFileSync(
        configPath,
        `# Written by test/harness/synapse.ts (JSON is YAML).\n${JSON.stringify(config, null, 2)}\n`,
      );
    },
    // cwd = the source root, so that `-m synapse...` imports the unpacked package (and finds the metadata shim).
    spawn: () => ({
      command: [PYTHON, "-m", "synapse.app.homeserver", "-c", configPath],
      cwd: root,
      env: pythonEnv(pythonPath),
    }),
    ready: (running) => waitUntilReady(running, port, logTail),
    logTail,
  });

  const url = `http://${HOST}:${port}`;
  return {
    serverName: SERVER_NAME,
    url,
    port,
    register: (localpart, password, opts = {}) => register(url, secret, localpart, password, opts, server.log),
    ...server,
  };
}

/** Every key is checked against Synapse 1.67's synapse/config/*.py; unknown keys would be ignored silently. */
function synapseConfig(dir: string, port: number, secrets: Record<string, string>): Record<string, unknown> {
  // Tests send, join and invite far faster than people do; the defaults (e.g. rc_message 0.2/s, burst 10) would
  // answer 429 M_LIMIT_EXCEEDED within a test.
  const fast = { per_second: 10_000, burst_count: 100_000 };
  return {
    server_name: SERVER_NAME,
    public_baseurl: `http://${HOST}:${port}/`,
    pid_file: join(dir, "homeserver.pid"), // only written when daemonized; the harness knows the PID anyway
    listeners: [
      {
        port,
        type: "http",
        tls: false,
        bind_addresses: [HOST],
        x_forwarded: false,
        resources: [{ names: ["client"], compress: false }],
      },
    ],
    database: { name: "sqlite3", args: { database: join(dir, "homeserver.db") } },
    media_store_path: join(dir, "media_store"),
    signing_key_path: join(dir, "signing.key"),
    log_config: join(dir, "log.yaml"),
    ...secrets,
    enable_registration: false, // users come from the shared-secret admin API
    // bcrypt's default 12 rounds cost ~0.25 s per registration and password login; 4 is the minimum.
    bcrypt_rounds: 4,
    report_stats: false,
    trusted_key_servers: [], // no federation: never fetch keys from matrix.org
    suppress_key_server_warning: true,
    url_preview_enabled: false,
    enable_metrics: false,
    max_upload_size: "100M",
    // The default directory finds only users who share a room with the searcher; tests search for strangers too.
    user_directory: { enabled: true, search_all_users: true },
    rc_message: fast,
    rc_login: { address: fast, account: fast, failed_attempts: fast },
    rc_registration: fast,
    rc_registration_token_validity: fast,
    rc_joins: { local: fast, remote: fast },
    rc_joins_per_room: fast,
    rc_invites: { per_room: fast, per_user: fast, per_issuer: fast },
    rc_third_party_invite: fast,
    rc_key_requests: fast,
    rc_admin_redaction: fast,
    rc_3pid_validation: fast,
    // 1.67 has no rc_media (media uploads are not rate-limited) and no rc_presence.
  };
}

/** Python logging dictConfig; Synapse's own record factory fills %(request)s. */
function logConfig(logPath: string, level: "INFO" | "WARNING"): Record<string, unknown> {
  return {
    version: 1,
    formatters: {
      precise: { format: "%(asctime)s - %(name)s - %(lineno)d - %(levelname)s - %(request)s - %(message)s" },
    },
    handlers: { file: { class: "logging.FileHandler", formatter: "precise", filename: logPath, encoding: "utf8" } },
    loggers: { "synapse.storage.SQL": { level } },
    root: { level, handlers: ["file"] },
    disable_existing_loggers: false,
  };
}

/**
 * The key file signedjson writes (`ed25519 <key id> <unpadded base64 seed>`), made here rather than by
 * `synapse._scripts.generate_signing_key`, which would cost another Python start.
 */
function signingKey(): string {
  const jwk = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" });
  const seed = Buffer.from(jwk.d!, "base64url").toString("base64").replace(/=+$/, "");
  return `ed25519 a_${randomBytes(2).toString("hex")} ${seed}\n`;
}

function pythonEnv(pythonPath: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUNBUFFERED: "1" };
  delete env.PYTHONDONTWRITEBYTECODE; // the .pyc files cached beside the source save ~1 s per start
  if (pythonPath) env.PYTHONPATH = [pythonPath, env.PYTHONPATH].filter(Boolean).join(":");
  return env;
}

async function waitUntilReady(running: Running, port: number, logTail: (output: string) => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (running.ended()) {
      await Promise.race([running.exited, delay(500)]); // let the last output arrive
      throw new Error(`Synapse exited during startup:\n${logTail(running.output())}`);
    }
    const status = await fetch(`http://${HOST}:${port}/_matrix/client/versions`, { signal: AbortSignal.timeout(2_000) })
      .then((response) => response.status)
      .catch(() => 0);
    if (status === 200) return;
    await delay(100);
  }
  throw new Error(
    `Synapse did not answer /_matrix/client/versions on port ${port} within ${READY_TIMEOUT_MS} ms:\n${logTail(running.output())}`,
  );
}

/** The shared-secret registration of synapse/rest/admin/users.py: a nonce, then an HMAC-SHA1 over the request. */
async function register(
  url: string,
  secret: string,
  localpart: string,
  password: string,
  options: { admin?: boolean; displayName?: string },
  log: () => string,
): Promise<{ userID: string; accessToken: string; deviceID: string }> {
  const endpoint = `${url}/_synapse/admin/v1/register`;
  const call = async (init?: RequestInit) => {
    const response = await fetch(endpoint, init);
    const body = await response.json().catch(() => ({}));
    if (!response.ok)
      throw new Error(
        `registering ${localpart}: ${init?.method ?? "GET"} ${endpoint} answered ${response.status} ${JSON.stringify(body)}\n${log()}`,
      );
    return body;
  };
  const { nonce } = await call();
  const mac = createHmac("sha1", secret)
    .update([nonce, localpart, password, options.admin ? "admin" : "notadmin"].join("\0"))
    .digest("hex");
  const body = { nonce, username: localpart, password, admin: !!options.admin, displayname: options.displayName, mac };
  // The answer is that of /register: the new user is logged in on a fresh device.
  const result = await call({
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { userID: result.user_id, accessToken: result.access_token, deviceID: result.device_id };
}

// ---- The source, its metadata shim and its Python dependencies: prepared once per process. ----

let preparation: Promise<{ root: string; pythonPath?: string }> | undefined;

function prepareSource(): Promise<{ root: string; pythonPath?: string }> {
  preparation ??= prepare();
  preparation.catch(() => (preparation = undefined)); // a later suite may try again, e.g. after an install
  return preparation;
}

async function prepare(): Promise<{ root: string; pythonPath?: string }> {
  const source = synapseSource();
  if ("missing" in source) throw new Error(source.missing);
  let root: string;
  let shimDir: string;
  if (statSync(source.path).isDirectory()) {
    // Someone's own checkout: read in place, with the shim in a temp dir on PYTHONPATH instead of inside it.
    root = packageRoot(source.path);
    shimDir = join(tmpdir(), `inboxd-synapse-shim-${sha8(root)}`);
  } else {
    root = await unpack(source.path);
    shimDir = root; // the cwd is on sys.path already
  }
  const pyproject = readFileSync(join(root, "pyproject.toml"), "utf8");
  const { metadata, version, required } = distMetadata(pyproject);
  if (!existsSync(join(root, `matrix_synapse-${version}.dist-info`)))
    writeAtomically(join(shimDir, `matrix_synapse-${version}.dist-info`, "METADATA"), metadata);
  await ensureDependencies(required);
  return { root, pythonPath: shimDir === root ? undefined : shimDir };
}

/** The directory holding `synapse/` and `pyproject.toml`: the given one, or its only subdirectory (GitHub archives). */
function packageRoot(dir: string): string {
  const isRoot = (candidate: string) =>
    existsSync(join(candidate, "synapse", "__init__.py")) && existsSync(join(candidate, "pyproject.toml"));
  if (isRoot(dir)) return dir;
  const nested = readdirSync(dir)
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isDirectory() && isRoot(path));
  if (nested.length === 1) return nested[0];
  throw new Error(`${dir} holds no Synapse source (synapse/__init__.py and pyproject.toml). ${NEEDED}`);
}

/**
 * Unpacks the tarball once per machine into a cache dir named by its hash, kept between runs: Python writes .pyc
 * files there, which makes later starts faster. flock(1) serialises parallel test workers; the rename makes a
 * half-unpacked tree (a worker killed mid-way) invisible to everyone.
 */
async function unpack(tarball: string): Promise<string> {
  const hash = sha8(readFileSync(tarball));
  const version = /synapse-(\d+\.\d+\.\d+)/.exec(basename(tarball))?.[1];
  const cache = join(tmpdir(), `inboxd-synapse-${version ? `${version}-` : ""}${hash}`);
  if (!existsSync(cache)) {
    const partial = `${cache}.partial`;
    const script = `test -d "$1" || { rm -rf "$2" && mkdir -p "$2" && tar -xzf "$3" -C "$2" && mv "$2" "$1"; }`;
    await run("flock", [`${cache}.lock`, "sh", "-c", script, "sh", cache, partial, tarball]);
  }
  return packageRoot(cache);
}

/**
 * Synapse reads its own package metadata at start-up (synapse/util/check_dependencies.py), which a plain source
 * tree lacks. The shim lists, like a wheel's METADATA would, the mandatory dependencies of pyproject.toml by name
 * (the versions Debian ships satisfy them) and the extras.
 */
function distMetadata(pyproject: string): { metadata: string; version: string; required: string[] } {
  const section = (name: string) => {
    const start = pyproject.indexOf(`\n[${name}]\n`);
    if (start < 0) return [];
    const rest = pyproject.slice(start + name.length + 4);
    const end = rest.search(/^\[/m);
    return (end < 0 ? rest : rest.slice(0, end)).split("\n");
  };
  const entries = (lines: string[]) =>
    lines.map((line) => /^([A-Za-z0-9_.-]+)\s*=\s*(.*)$/.exec(line)).filter((m): m is RegExpExecArray => !!m);
  const version = /^version\s*=\s*"([^"]+)"/m.exec(section("tool.poetry").join("\n"))?.[1] ?? "1.67.0";
  const lines = ["Metadata-Version: 2.1", "Name: matrix-synapse", `Version: ${version}`];
  const required: string[] = [];
  for (const [, name, value] of entries(section("tool.poetry.dependencies"))) {
    if (name === "python" || /optional\s*=\s*true/.test(value)) continue;
    // importlib_metadata is only for Python < 3.8: the marker keeps Synapse from insisting on it.
    const python = /python\s*=\s*"<\s*([\d.]+)"/.exec(value)?.[1];
    if (python) {
      lines.push(`Requires-Dist: ${name} ; python_version < "${python}"`);
      continue;
    }
    lines.push(`Requires-Dist: ${name}`);
    required.push(name);
  }
  for (const [, name] of entries(section("tool.poetry.extras"))) lines.push(`Provides-Extra: ${name}`);
  return { metadata: `${lines.join("\n")}\n`, version, required };
}

function writeAtomically(path: string, content: string): void {
  if (existsSync(path) && readFileSync(path, "utf8") === content) return;
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, path);
}

function sha8(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex").slice(0, 8);
}

/** Synapse 1.67's mandatory dependencies as Debian bookworm packages (see ../shared/notes/matrix.md). */
const DEBIAN_PACKAGES = [
  "python3",
  "python3-jsonschema",
  "python3-frozendict",
  "python3-unpaddedbase64",
  "python3-canonicaljson",
  "python3-signedjson",
  "python3-nacl",
  "python3-service-identity",
  "python3-twisted",
  "python3-treq",
  "python3-openssl",
  "python3-yaml",
  "python3-pyasn1",
  "python3-pyasn1-modules",
  "python3-bcrypt",
  "python3-pil",
  "python3-sortedcontainers",
  "python3-pymacaroons",
  "python3-msgpack",
  "python3-phonenumbers",
  "python3-prometheus-client",
  "python3-attr",
  "python3-netaddr",
  "python3-jinja2",
  "python3-bleach",
  "python3-typing-extensions",
  "python3-cryptography",
  "python3-ijson",
  "python3-matrix-common",
  "python3-packaging",
  "python3-importlib-metadata",
  "python3-pydantic",
];

const INSTALL_HINT = `Synapse needs ${PYTHON} (3.7 or newer) and its Python libraries: run \`sudo apt-get install -y ${DEBIAN_PACKAGES.join(" ")}\` (Debian/Ubuntu).`;

/** The distributions Synapse will look up at start-up that this Python cannot find ("" when all are there). */
async function missingDistributions(names: string[]): Promise<string> {
  if (!existsSync(PYTHON)) return "python3";
  const probe =
    "import importlib.metadata as m, sys\nfor n in sys.argv[1:]:\n  try: m.distribution(n)\n  except m.PackageNotFoundError: print(n)";
  return (await run(PYTHON, ["-c", probe, ...names])).trim().split("\n").filter(Boolean).join(", ");
}

/**
 * Installs the Python libraries with apt when some are missing and this process runs as root (as CI does);
 * otherwise says what to install. Concurrent test workers serialise on a lock file; a failed install retries
 * once after refreshing the package lists, which a fresh machine may not have.
 */
async function ensureDependencies(required: string[]): Promise<void> {
  const missing = await missingDistributions(required);
  if (!missing) return;
  await aptInstall(DEBIAN_PACKAGES, {
    lock: "inboxd-synapse-install.lock",
    notRoot: `Missing for Synapse: ${missing}. ${INSTALL_HINT}`,
    failed: `installing Synapse's Python libraries failed; ${INSTALL_HINT}`,
  });
  const still = await missingDistributions(required);
  if (still) throw new Error(`apt-get reported success but ${still} still missing. ${INSTALL_HINT}`);
}
