// Worker-side Request/Response types: this file only hands them to the object, so it never meets the DOM ones.
import type { DurableObjectNamespace, Request, Response } from "@cloudflare/workers-types/index.ts";
import type { InboxEnv } from "./inbox-object.ts";
import type { RelayEnv } from "./relay-object.ts";

export { InboxObject } from "./inbox-object.ts";
export { RelayObject } from "./relay-object.ts";

export interface Env extends InboxEnv, RelayEnv {
  /** The Durable Object namespaces bound in wrangler.toml. */
  INBOX: DurableObjectNamespace;
  RELAY: DurableObjectNamespace;
}

/**
 * The Worker entry routes nothing itself. A deployment is one device, so every request (WebSocket upgrades
 * included) goes to one object: the inbox named "device", which owns the storage and serialises writes to it; or, in
 * relay mode (INBOXD_MODE=relay), the relay named "relay", which holds the daemon's connection.
 */
export default {
  fetch(request: Request, env: Env): Promise<Response> {
    if (env.INBOXD_MODE === "relay") return env.RELAY.get(env.RELAY.idFromName("relay")).fetch(request);
    return env.INBOX.get(env.INBOX.idFromName("device")).fetch(request);
  },
};
