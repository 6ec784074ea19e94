// Worker-side Request/Response types: this file only hands them to the objects, so it never meets the DOM ones.
import type { DurableObjectNamespace, Request, Response } from "@cloudflare/workers-types/index.ts";
import { SESSION_COOKIE } from "../../src/oauth/authorize.ts";
import { DEVICE_INBOX, inboxOf } from "../../src/tenancy.ts";
import { inboxFor } from "./credential.ts";
import { INBOX_HEADER, type InboxEnv } from "./inbox-object.ts";
import { publicAnswer } from "./public-app.ts";
import type { RegistryEnv } from "./registry-object.ts";
import type { RelayEnv } from "./relay-object.ts";

export { InboxObject } from "./inbox-object.ts";
export { RegistryObject } from "./registry-object.ts";
export { RelayObject } from "./relay-object.ts";

export interface Env extends InboxEnv, RelayEnv, RegistryEnv {
  /** The Durable Object namespaces bound in wrangler.toml. */
  INBOX: DurableObjectNamespace;
  RELAY: DurableObjectNamespace;
  REGISTRY?: DurableObjectNamespace;
}

/**
 * The Worker entry routes and holds nothing. By default a deployment is one device, so every request (WebSocket
 * upgrades included) goes to one object: the inbox named "device", which owns the storage and serialises writes to
 * it; or, in relay mode (INBOXD_MODE=relay), the relay named "relay", which holds the daemon's connection.
 *
 * With INBOXD_TENANCY=multi it holds many inboxes, an object each: a request goes to the inbox its credential names
 * (credential.ts), one with no credential to the public app (public-app.ts), and /admin/ to the registry, the
 * operator's API (registry-object.ts).
 */
export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (env.INBOXD_MODE === "relay" && env.INBOXD_TENANCY === "multi")
      return globalThis.Response.json(
        {
          code: "MISCONFIGURED",
          message:
            'INBOXD_MODE = "relay" and INBOXD_TENANCY = "multi" exclude each other: in a deployment of many inboxes, each inbox may relay to its own daemon (docs/many-inboxes.md)',
        },
        { status: 500 },
      ) as unknown as Response;
    if (env.INBOXD_MODE === "relay") return env.RELAY.get(env.RELAY.idFromName("relay")).fetch(request);
    if (env.INBOXD_TENANCY !== "multi") return env.INBOX.get(env.INBOX.idFromName(DEVICE_INBOX)).fetch(request);
    const path = new URL(request.url).pathname;
    if (path === "/admin" || path.startsWith("/admin/")) {
      if (!env.REGISTRY)
        return globalThis.Response.json(
          { code: "NOT_FOUND", message: "the admin API needs the REGISTRY binding of wrangler.toml" },
          { status: 404 },
        ) as unknown as Response;
      return env.REGISTRY.get(env.REGISTRY.idFromName("registry")).fetch(request);
    }
    const inbox = await inboxFor(request);
    if (inbox === undefined)
      return (await publicAnswer(env, request as unknown as globalThis.Request)) as unknown as Response;
    return env.INBOX.get(env.INBOX.idFromName(inbox)).fetch(forInbox(request, inbox));
  },
};

/**
 * The request as the inbox's object gets it: told which inbox the Worker routed it to (INBOX_HEADER, always set
 * here, so a client's own value never arrives), and carrying the browser's session cookie only where that cookie
 * names this inbox — an inbox that relays to its person's daemon hands the request to code its person runs, which
 * must never see another inbox's session.
 */
function forInbox(request: Request, inbox: string): Request {
  const headers = new Headers(request.headers as unknown as HeadersInit);
  headers.set(INBOX_HEADER, inbox);
  const cookies = (headers.get("cookie") ?? "")
    .split(";")
    .map((c) => c.trim())
    .filter((c) => c && (!c.startsWith(`${SESSION_COOKIE}=`) || inboxOf(c.slice(SESSION_COOKIE.length + 1)) === inbox));
  if (cookies.length) headers.set("cookie", cookies.join("; "));
  else headers.delete("cookie");
  return new globalThis.Request(request as unknown as globalThis.Request, { headers }) as unknown as Request;
}
