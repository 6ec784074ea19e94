import { ApiError } from "../errors.ts";
import type { Admission } from "../http/admission.ts";
import { toErrorResponse } from "../http/errors.ts";
import { authorize, checkRequestOrigin, type GuardOptions } from "../http/guard.ts";
import { challenge } from "../oauth/index.ts";
import { VERSION, VERSION_HEADER, WS_PROTOCOL } from "../version.ts";

export type UpgradeVerdict = { ok: true; protocol?: string } | { ok: false; response: Response };

/**
 * Vets a WebSocket upgrade of /v1/ws (both runtimes' sockets run src/events/protocol.ts after it): host and origin
 * checks, then a token with the read scope, from the Authorization header or — for browsers, which cannot set
 * headers on a WebSocket — from a `Sec-WebSocket-Protocol` entry `bearer.<token>`. Answers the subprotocol to
 * select, or the refusal to send.
 */
export async function checkUpgrade(
  request: Request,
  options: { guard: GuardOptions; admission: Admission },
): Promise<UpgradeVerdict> {
  try {
    const url = new URL(request.url);
    if (url.pathname !== "/v1/ws") throw new ApiError(404, "NOT_FOUND", `no WebSocket endpoint at ${url.pathname}`);
    checkRequestOrigin(request, url, options.guard);
    const offered = (request.headers.get("sec-websocket-protocol") ?? "")
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
    const fromProtocol = offered.find((p) => p.startsWith("bearer."))?.slice("bearer.".length);
    const headers = new Headers(request.headers);
    if (!headers.has("authorization") && fromProtocol) headers.set("authorization", `Bearer ${fromProtocol}`);
    const principal = await options.admission.admit(new Request(request.url, { headers }), request);
    authorize(principal, "read");
    return { ok: true, protocol: offered.includes(WS_PROTOCOL) ? WS_PROTOCOL : undefined };
  } catch (error) {
    const response = toErrorResponse(error);
    response.headers.set(VERSION_HEADER, VERSION);
    if (response.status === 401) response.headers.set("www-authenticate", challenge(new URL(request.url).origin));
    return { ok: false, response };
  }
}
