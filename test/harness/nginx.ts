import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../bench/daemon.ts";

/**
 * A real nginx from Debian in front of a daemon, on a loopback port, configured as people configure a reverse proxy
 * for an app: the public Host passed on, X-Forwarded-For/-Host/-Proto/-Port set, WebSocket upgrades forwarded,
 * no buffering (event streams). Each `site` is a server block for one public host name; `tlsFront` sites claim
 * `https` on port 443, as a proxy behind a TLS-terminating front (or the front itself) would.
 */
export interface NginxProxy {
  /** The proxy's port on 127.0.0.1 (every site listens on it, told apart by Host). */
  port: number;
  pid(): number | undefined;
  close(): Promise<void>;
  log(): string;
}

export interface NginxSite {
  serverName: string;
  upstream: string;
  tlsFront?: boolean;
}

const READY_TIMEOUT_MS = 10_000;

export async function startNginx(sites: NginxSite[]): Promise<NginxProxy> {
  const binary = ensureNginxInstalled();
  const dir = mkdtempSync(join(tmpdir(), "inboxd-nginx-"));
  for (const sub of ["body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(dir, sub));
  const port = await freePort();
  writeFileSync(join(dir, "nginx.conf"), config(dir, port, sites));
  let printed = "";
  const child: ChildProcess = spawn(binary, ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log")], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => (printed = (printed + d).slice(-10_000)));
  child.stderr!.on("data", (d) => (printed = (printed + d).slice(-10_000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const log = () => `${printed}\n${tail(join(dir, "error.log"))}`;
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM"); // nginx's fast shutdown
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, exited);
  } catch (error) {
    const why = log();
    await close();
    throw new Error(`nginx did not start: ${(error as Error).message}\n${why}`);
  }
  return { port, pid: () => (child.exitCode === null ? child.pid : undefined), close, log };
}

function config(dir: string, port: number, sites: NginxSite[]): string {
  const asRoot = process.getuid?.() === 0;
  const server = (site: NginxSite) => `
    server {
      listen 127.0.0.1:${port};
      server_name ${site.serverName};
      location / {
        proxy_pass ${site.upstream};
        proxy_http_version 1.1;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Host $host;
        proxy_set_header X-Forwarded-Proto ${site.tlsFront ? "https" : "$scheme"};
        proxy_set_header X-Forwarded-Port ${site.tlsFront ? "443" : "$server_port"};
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $connection_upgrade;
        proxy_buffering off;
        proxy_request_buffering off;
        proxy_read_timeout 120s;
      }
    }`;
  return `
daemon off;
master_process off;
${asRoot ? "user root;" : ""}
worker_processes 1;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} info;
events { worker_connections 512; }
http {
  access_log ${join(dir, "access.log")};
  client_body_temp_path ${join(dir, "body")};
  proxy_temp_path ${join(dir, "proxy")};
  fastcgi_temp_path ${join(dir, "fastcgi")};
  uwsgi_temp_path ${join(dir, "uwsgi")};
  scgi_temp_path ${join(dir, "scgi")};
  client_max_body_size 600m;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  ${sites.map(server).join("\n")}
}
`;
}

/** nginx from Debian's packages: found, or installed with apt-get when running as root (as CI does), else a clear error. */
function ensureNginxInstalled(): string {
  const found = () => ["/usr/sbin/nginx", "/usr/bin/nginx"].find((path) => spawnSync(path, ["-v"]).status === 0);
  const path = found();
  if (path) return path;
  if (process.getuid?.() !== 0)
    throw new Error(
      "nginx is not installed, and installing it needs root: apt-get install nginx-light (the remote-access tests run a real reverse proxy)",
    );
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  let result = spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "nginx-light"], {
    env,
    encoding: "utf8",
  });
  if (result.status !== 0) {
    spawnSync("apt-get", ["update"], { env });
    result = spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "nginx-light"], {
      env,
      encoding: "utf8",
    });
  }
  const installed = found();
  if (!installed) throw new Error(`apt-get install nginx-light failed: ${result.stderr?.slice(-2000)}`);
  return installed;
}

async function waitForPort(port: number, exited: Promise<void>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let gone = false;
  void exited.then(() => (gone = true));
  while (Date.now() < deadline) {
    if (gone) throw new Error("it exited");
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => (socket.destroy(), resolve(true)));
      socket.on("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`port ${port} did not open within ${READY_TIMEOUT_MS / 1000} s`);
}

function tail(path: string): string {
  try {
    return readFileSync(path, "utf8").slice(-5_000);
  } catch {
    return "";
  }
}
