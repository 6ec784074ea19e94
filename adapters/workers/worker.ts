// Worker-side Request/Response types: this file only hands them to the object, so it never meets the DOM ones.
import type { DurableObjectNamespace, Request, Response } from "@cloudflare/workers-types/index.ts";
import type { InboxEnv } from "./inbox-object.ts";

export { InboxObject } from "./inbox-object.ts";

export interface Env extends InboxEnv {
  /** The Durable Object namespace bound in wrangler.toml. */
  INBOX: DurableObjectNamespace;
}

/**
 * The Worker entry routes nothing itself. A deployment is one device, so every request (WebSocket upgrades
 * included) goes to the one object named "device", which owns the storage and serialises writes to it.
 */
export default {
  fetch(request: Request, env: Env): Promise<Response> {
    return env.INBOX.get(env.INBOX.idFromName("device")).fetch(request);
  },
};
