import { spawn } from "node:child_process";
import type { Storage } from "unstorage";
import { OAuthStore, SIGN_IN_TTL_MS } from "../../src/oauth/index.ts";
import { openDataDir } from "./data-dir.ts";
import { RELAYED_INBOX_KEY } from "../../src/tenancy.ts";
import { servingURL } from "./daemon-lock.ts";

/** A one-time link that signs this browser in as the owner (to approve apps), valid for 10 minutes. */
export async function signInLink(storage: Storage, base: string): Promise<string> {
  // A daemon relaying through an inbox of many mints codes that name it (serve.ts, relayedInbox).
  const inbox = (await storage.getItem<string>(RELAYED_INBOX_KEY)) ?? undefined;
  const code = await new OAuthStore(storage, Date.now, inbox).createSignIn(SIGN_IN_TTL_MS);
  return `${base}/oauth/login?code=${code}`;
}

/**
 * `inboxd open`: prints a fresh sign-in link for the daemon serving this data directory (it runs beside it: the
 * link is a record in the same store), and opens it in the desktop's browser where there is one.
 */
export async function runOpen(
  dataDir: string,
  options: { port?: number; host?: string; print?: boolean },
): Promise<number> {
  const { storage, close } = await openDataDir(dataDir, { create: false });
  // The daemon serving this directory says where it listens; --port/--host, when given, win (a proxy in between).
  const serving = servingURL(dataDir);
  const asked = options.port !== undefined || options.host !== undefined;
  const base =
    asked || !serving
      ? baseURL(options.host ?? "127.0.0.1", options.port ?? Number(process.env.INBOXD_PORT || 23373))
      : serving;
  if (!serving)
    console.error(
      `inboxd: no inboxd serve is running on ${dataDir} yet: this link works once one serves it at ${base}`,
    );
  else if (base !== serving)
    console.error(`inboxd: the daemon serving ${dataDir} listens at ${serving}; this link is for ${base}, as asked`);
  let link: string;
  try {
    link = await signInLink(storage, base);
  } finally {
    await close();
  }
  console.error("Open this link to sign in as the owner (it works once, for 10 minutes):");
  console.log(link);
  const desktop = process.env.DISPLAY || process.env.WAYLAND_DISPLAY || process.platform === "darwin";
  if (desktop && !options.print) {
    const opener = process.platform === "darwin" ? "open" : "xdg-open";
    // The link goes as an argument, never through a shell.
    spawn(opener, [link], { stdio: "ignore", detached: true })
      .on("error", () => undefined)
      .unref();
  }
  return 0;
}

/**
 * The address to print for the daemon: its host, except that a wildcard bind (0.0.0.0, ::) is reached here as
 * loopback — a browser given http://0.0.0.0/ would send that as its Host, which the daemon refuses.
 */
export function baseURL(host: string, port: number): string {
  const shown =
    host === "0.0.0.0"
      ? "127.0.0.1"
      : host === "::" || host === "[::]"
        ? "[::1]"
        : host.includes(":")
          ? `[${host}]`
          : host;
  return `http://${shown}:${port}`;
}
