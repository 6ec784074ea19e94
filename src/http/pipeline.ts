import { Router } from "itty-router";
import { ApiError } from "../errors.ts";
import { challenge, OAuthError, oauthErrorResponse } from "../oauth/index.ts";
import type { Context } from "../services/context.ts";
import { JsonText } from "../services/present.ts";
import { isV0Path, v0ErrorResponse, v0Response } from "../v0/index.ts";
import { VERSION, VERSION_HEADER } from "../version.ts";
import type { Admission } from "./admission.ts";
import { discoveryPreflight, isDiscoveryPath, withDiscoveryCors } from "./cors.ts";
import { toErrorResponse } from "./errors.ts";
import { checkRequestOrigin, type GuardOptions } from "./guard.ts";
import { Api, type ApiRouter, type RequestContext, type Route } from "./route-kit.ts";
import { parseQuery } from "./validate.ts";

export interface PipelineOptions {
  context: Context;
  admission: Admission;
  guard: GuardOptions;
  /** The OAuth discovery documents are readable cross-origin (remote access: AppOptions.remoteAccess). */
  remoteAccess: boolean;
  /** Called once per request with a log line (no secrets, no query values). */
  log?: (line: string) => void;
}

/**
 * The request pipeline, on one screen as itty-router's model has it: `before` (origin checks, then a token for
 * every route not public), the route, one `catch`; then, in `fetch`, what every answer gets on its way out. Routes
 * are added to `api` by the composition (src/app.ts), then `seal` adds HEAD and the 404/405 fallbacks.
 */
export class Pipeline {
  readonly api: Api;
  private readonly router: ApiRouter;

  /**
   * "METHOD /path" → its route, for paths without parameters that no other route matches: found with one lookup
   * instead of itty-router's second URL parse and its scan of every route's pattern (a few µs of each request).
   * Built by seal(); a path not in it goes to the router.
   */
  private readonly exact = new Map<string, { route: Route; isPublic: boolean }>();

  constructor(private readonly options: PipelineOptions) {
    this.router = Router({
      before: [(request: Request, rc: RequestContext) => this.admit(request, rc, this.isPublic(request, rc))],
      catch: (error: unknown, request: Request) => this.failed(error, request),
    }) as unknown as ApiRouter;
    this.api = new Api(this.router);
  }

  /** Origin checks, then a token: every route needs a valid one, except public ones asked without one. */
  private async admit(request: Request, rc: RequestContext, isPublic: boolean): Promise<undefined> {
    const { guard, admission, remoteAccess } = this.options;
    checkRequestOrigin(request, rc.url, guard, remoteAccess && isDiscoveryPath(rc.url.pathname));
    // Each operation checks its scope itself (route-kit.ts).
    if (isPublic && !request.headers.has("authorization")) return;
    rc.principal = await admission.admit(request);
  }

  private isPublic(request: Request, rc: RequestContext): boolean {
    return this.api.isPublic(request.method, rc.url.pathname);
  }

  /** The one answer to a throw anywhere in before or a route. */
  private failed(error: unknown, request: Request): Response {
    if (error instanceof OAuthError) return oauthErrorResponse(error);
    if (!(error instanceof ApiError))
      this.options.log?.(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return errorResponseFor(new URL(request.url), error);
  }

  /** What itty-router's fetch does for a route found in `exact`: before, the route (or the fallback), catch. */
  private async dispatch(found: { route: Route; isPublic: boolean }, request: Request, rc: RequestContext) {
    try {
      await this.admit(request, rc, found.isPublic);
      return (await found.route(request as never, rc)) ?? this.unanswered(request, rc);
    } catch (error) {
      return this.failed(error, request);
    }
  }

  /** After every route: HEAD for each GET, and a 405 naming the methods a path takes, or a 404. */
  seal(): void {
    this.api.addHeadForGets();
    for (const [key, route] of this.api.routes) {
      const [method, path] = key.split(" ");
      if (/[:*]/.test(path) || this.exact.has(key)) continue;
      // Only where the router has no other route for the path: then it answers as the router would, whose next
      // route after one that answers nothing is the fallback below.
      const matching = this.router.routes.filter(([m, pattern]) => (m === method || m === "ALL") && pattern.test(path));
      if (matching.length === 1 && matching[0][2].includes(route as never))
        this.exact.set(key, { route, isPublic: this.api.isPublic(method, path) });
    }
    this.router.all("*", (request: Request, rc: RequestContext) => this.unanswered(request, rc));
  }

  /** A path no route answered: a 405 naming the methods it takes, or a 404. */
  private unanswered(request: Request, rc: RequestContext): never {
    const allowed = this.api.methodsAt(rc.url.pathname);
    if (allowed.length)
      throw new ApiError(
        405,
        "METHOD_NOT_ALLOWED",
        `${request.method} is not answered at ${rc.url.pathname}: it takes ${allowed.join(", ")}`,
        undefined,
        { allow: allowed.join(", ") },
      );
    throw new ApiError(404, "NOT_FOUND", `no route for ${request.method} ${rc.url.pathname}`);
  }

  async fetch(request: Request): Promise<Response> {
    const started = Date.now();
    const url = new URL(request.url);
    const discovery = this.options.remoteAccess && isDiscoveryPath(url.pathname);
    let response: Response;
    // A JSON answer made here carries the version header from the start: setting it afterwards would build a
    // Headers object for every answer (on the daemon a Response made with a plain object never needs one).
    let stamped = false;
    try {
      if (discovery && request.method === "OPTIONS") {
        checkRequestOrigin(request, url, this.options.guard, true);
        response = discoveryPreflight(request);
      } else {
        const rc: RequestContext = { app: this.options.context, url, query: parseQuery(url) };
        const found = this.exact.get(`${request.method} ${url.pathname}`);
        const result = found ? await this.dispatch(found, request, rc) : await this.router.fetch(request as never, rc);
        stamped = !(result instanceof Response);
        response = toResponse(result);
      }
    } catch (error) {
      stamped = false;
      response = errorResponseFor(url, error);
    }
    const made = response;
    if (isV0Path(url.pathname)) response = v0Response(response, url);
    if (request.method === "HEAD" && response.body) response = await withoutBody(response);
    if (discovery) response = withDiscoveryCors(response);
    if (response.status === 401) response.headers.set("www-authenticate", challenge(url.origin));
    // Without a body, no await: a turn of the microtask queue less for every GET.
    if (request.body && !request.bodyUsed) await discardUnreadBody(request, request.body);
    if (!stamped || response !== made) response.headers.set(VERSION_HEADER, VERSION);
    this.options.log?.(`${request.method} ${url.pathname} ${response.status} ${Date.now() - started}ms`);
    return response;
  }
}

/** The error body of the generation the request was for: /v0 has its own (src/v0). */
function errorResponseFor(url: URL, error: unknown): Response {
  return isV0Path(url.pathname) ? v0ErrorResponse(error) : toErrorResponse(error);
}

/**
 * A HEAD answer: GET's status and headers, its body (possibly a stream just opened) cancelled. A JSON body's length
 * is said as GET's Content-Length would be: without one (or chunked framing), Node's own HTTP client does not reuse
 * the connection after a HEAD. Other bodies without a length may be endless streams (SSE), so they are not read.
 */
async function withoutBody(response: Response): Promise<Response> {
  const headers = new Headers(response.headers);
  if (!headers.has("content-length") && /^application\/json/.test(headers.get("content-type") ?? ""))
    headers.set("content-length", String((await response.arrayBuffer()).byteLength));
  else void response.body?.cancel().catch(() => {});
  return new Response(null, { status: response.status, statusText: response.statusText, headers });
}

const JSON_HEADERS = { "content-type": "application/json", [VERSION_HEADER]: VERSION };

function toResponse(result: unknown): Response {
  if (result instanceof Response) return result;
  if (result instanceof JsonText) return new Response(result.text as BodyInit, { status: 200, headers: JSON_HEADERS });
  return new Response(JSON.stringify(result), { status: 200, headers: JSON_HEADERS });
}

/**
 * A body the app answered without reading (a refusal): a small one is read and dropped, so the runtime can keep the
 * connection alive (workerd resets it otherwise); a larger one is cancelled, which the Worker drops and the Node
 * adapter drains after the response (adapters/node/request-body.ts). A body read halfway is the runtime's to finish.
 */
async function discardUnreadBody(request: Request, body: ReadableStream) {
  const length = Number(request.headers.get("content-length") ?? "0");
  try {
    if (length > 0 && length <= 1024 * 1024) await request.arrayBuffer();
    else await body.cancel();
  } catch {
    // The client went away (or the body timed out); nothing to keep alive.
  }
}
