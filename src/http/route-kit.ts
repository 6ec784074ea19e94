import type { IRequest, RouterType } from "itty-router";
import type { Context } from "../services/context.ts";
import type { Principal } from "./guard.ts";

/** What each handler gets besides the request: the services' context and the request's own facts. */
export interface RequestContext {
  app: Context;
  url: URL;
  query: Record<string, string | string[]>;
  principal?: Principal;
}

export type ApiRouter = RouterType<IRequest, [RequestContext]>;

export const noContent = () => new Response(null, { status: 204 });
