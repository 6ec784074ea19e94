import type { IRequest, RouterType } from "itty-router";
import type * as v from "valibot";
import { ChatsStillLoading } from "../errors.ts";
import type { Context } from "../services/context.ts";
import type { Scope } from "../services/tokens.ts";
import { authorize, requiredScope, type Principal } from "./guard.ts";
import { pathParam, validate, validateBody, type BodyLimits } from "./validate.ts";

/** What each handler gets besides the request: the services' context and the request's own facts. */
export interface RequestContext {
  app: Context;
  url: URL;
  query: Record<string, string | string[]>;
  principal?: Principal;
}

export type ApiRouter = RouterType<IRequest, [RequestContext]>;

/** An operation's handler as routed: path parameters, query and body validated, then the handler. */
export type Route = (req: IRequest, rc: RequestContext) => Promise<unknown>;

export const noContent = () => new Response(null, { status: 204 });

export type Method = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";

/** A documented answer other than the operation's 200 JSON body (a 204, a byte stream, an event stream…). */
export interface ResponseDoc {
  description: string;
  /** Media type → schema of the body (null: any bytes of that type). */
  content?: Record<string, v.GenericSchema | null>;
  headers?: Record<string, string>;
}

/**
 * One operation of the API: how it is routed, what it accepts and what it answers. The same object registers the
 * route, validates its input and becomes its entry in the served OpenAPI document (src/spec/openapi.ts), so the
 * document cannot name a route the app lacks or miss one it has.
 */
export interface Operation<
  Q extends v.GenericSchema | undefined = v.GenericSchema | undefined,
  B extends v.GenericSchema | undefined = v.GenericSchema | undefined,
> {
  method: Method;
  /** itty-router pattern: `/v1/chats/:chatID`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Validated from the query string; its output is the handler's `query`. */
  query?: Q;
  /** Validated from the JSON body; its output is the handler's `body`. */
  body?: B;
  bodyLimits?: BodyLimits;
  /** Documented only: a body the handler reads itself (multipart uploads). */
  requestBody?: { description: string; content: Record<string, v.GenericSchema | null>; required?: boolean };
  /** Schema of the 200 JSON answer. */
  response?: v.GenericSchema;
  /** Answers other than a 200 JSON body, by status. */
  responses?: Record<number, ResponseDoc>;
  /**
   * The scope a token needs (default: `read` for GET/HEAD, `write` otherwise). `public`: answered without a token
   * too (a token, when sent, must still be valid).
   */
  scope?: Scope | "public";
  /** The component name of the error body this operation answers with (default `Error`, the /v1 body). */
  errorBody?: string;
  /** Not in the official 5.0.0 API: marked `x-inboxd-extension` in the document. */
  extension?: boolean;
  /** Marks the operation deprecated in the document (the /v0 generation). */
  deprecated?: boolean;
  /**
   * Answered while start-up still reads the older chats (Db.loading, the first second or so of a big store): the
   * handler reads only the chat table's trusted rows and throws ChatsStillLoading when it needs more, and then runs
   * again once every chat is loaded, so it must change nothing (both are reads of the chat list). Every other
   * operation waits for that before it runs.
   */
  whileLoading?: boolean;
}

type Out<S> = S extends v.GenericSchema ? v.InferOutput<S> : undefined;

/** What a handler is called with: the request, its context, the path parameters decoded, query and body validated. */
export interface Call<Q, B> {
  req: IRequest;
  rc: RequestContext;
  params: Record<string, string>;
  query: Out<Q>;
  body: Out<B>;
}

/**
 * The app's route table. `add` registers an operation on the router: the token's scope is checked, path parameters
 * decoded and bounded, the query and JSON body validated against the operation's schemas, then the handler runs
 * and its return value is the answer (a Response as it is, anything else as JSON).
 */
export class Api {
  readonly operations: Operation[] = [];
  private readonly publicPaths = new Set<string>();
  /** Public operations with path parameters (the web inbox's assets), as patterns. */
  private readonly publicPatterns: RegExp[] = [];
  /** "METHOD path" → its route, HEAD aliases of GETs included once added (the pipeline's table of exact paths). */
  readonly routes = new Map<string, Route>();

  constructor(private readonly router: ApiRouter) {}

  add<Q extends v.GenericSchema | undefined = undefined, B extends v.GenericSchema | undefined = undefined>(
    op: Operation<Q, B>,
    handler: (call: Call<Q, B>) => unknown,
  ): this {
    this.operations.push(op as Operation);
    const scope = op.scope ?? requiredScope(op.method);
    if (scope === "public" && op.path.includes(":"))
      this.publicPatterns.push(new RegExp(`^${op.method} ${op.path.replace(/:\w+/g, "[^/]+")}$`));
    else if (scope === "public") this.publicPaths.add(`${op.method} ${op.path}`);
    const names = [...op.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
    const route = async (req: IRequest, rc: RequestContext) => {
      if (scope === "read" || scope === "write") authorize(rc.principal!, scope);
      const params: Record<string, string> = {};
      for (const name of names) params[name] = pathParam(req.params, name);
      const query = (op.query ? validate("query", op.query, rc.query) : undefined) as Out<Q>;
      const body = (
        op.body ? await validateBody(req as unknown as Request, op.body, op.bodyLimits) : undefined
      ) as Out<B>;
      const call = { req, rc, params, query, body };
      const loading = rc.app.db.loading;
      if (!loading) return handler(call);
      if (!op.whileLoading) {
        await loading;
        return handler(call);
      }
      try {
        return await handler(call);
      } catch (error) {
        if (!(error instanceof ChatsStillLoading)) throw error;
        await rc.app.db.loading;
        return handler(call);
      }
    };
    const method = op.method.toLowerCase() as "get" | "head" | "post" | "put" | "patch" | "delete";
    this.router[method](op.path, route);
    this.routes.set(`${op.method} ${op.path}`, route);
    return this;
  }

  /**
   * Answers HEAD wherever GET is answered (RFC 9110 §9.3.2), with GET's scope, unless the operation has its own HEAD
   * (asset serving). Called once all operations are added; the app drops the body (src/app.ts).
   */
  addHeadForGets(): this {
    for (const [key, route] of [...this.routes]) {
      const path = key.slice("GET ".length);
      if (!key.startsWith("GET ") || this.routes.has(`HEAD ${path}`)) continue;
      this.router.head(path, route);
      this.routes.set(`HEAD ${path}`, route);
    }
    return this;
  }

  /** The methods answered at a path (HEAD wherever GET is), for a 405's Allow header; empty for an unknown path. */
  methodsAt(pathname: string): string[] {
    this.patterns ??= this.operations.map((op) => ({
      method: op.method,
      pattern: new RegExp(`^${op.path.replace(/[.]/g, "\\.").replace(/:\w+/g, "[^/]+")}$`),
    }));
    const methods = new Set(this.patterns.filter(({ pattern }) => pattern.test(pathname)).map(({ method }) => method));
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods];
  }
  private patterns?: { method: string; pattern: RegExp }[];

  /** Whether a request may go without a token: only public operations (GET /v1/info, discovery, the web inbox). */
  isPublic(method: string, pathname: string): boolean {
    const key = `${method === "HEAD" ? "GET" : method} ${pathname}`;
    return this.publicPaths.has(key) || this.publicPatterns.some((pattern) => pattern.test(key));
  }
}
