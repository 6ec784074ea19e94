// The one part of workerd's "cloudflare:workers" module used here: the Durable Object base class, which gives an
// object's public methods to other objects as RPC. (The package's full types clash with the DOM ones of this tsconfig.)
declare module "cloudflare:workers" {
  import type { DurableObjectState } from "@cloudflare/workers-types/index.ts";
  export abstract class DurableObject<Env = unknown> {
    protected readonly ctx: DurableObjectState;
    protected readonly env: Env;
    constructor(ctx: DurableObjectState, env: Env);
  }
}
