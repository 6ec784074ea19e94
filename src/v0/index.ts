/**
 * The deprecated /v0 generation: 13 endpoints as one thin layer over the /v1 services (see docs/v0.md).
 * Plugged into the app by src/app.ts: `v0Routes(api)`, and every answer under `isV0Path` goes through
 * `v0Response` (the Deprecation/Link headers) and every failure through `v0ErrorResponse` (the v0 error body).
 *
 * @example
 * // GET /v0/get-chat?chatID=… → 200, a v0 Chat; `Deprecation: @…`, `Link: </v1/chats/…>; rel="successor-version"`
 * // POST /v0/archive-chat {"chatID":"nope"} → 404 {"error":"chat nope not found","code":"NOT_FOUND"}
 */
import type * as v from "valibot";
import type { Api } from "../http/route-kit.ts";
import { v0ActionRoutes } from "./action-routes.ts";
import { V0_ERROR_COMPONENT, V0ErrorBody } from "./error-body.ts";
import { v0ReadRoutes } from "./read-routes.ts";
import { V0Account, V0Chat, V0Message } from "./shapes.ts";

export { isV0Path } from "./endpoints.ts";
export { v0Response } from "./deprecation.ts";
export { V0_ERROR_COMPONENT, V0ErrorBody, v0ErrorResponse } from "./error-body.ts";

export function v0Routes(api: Api): void {
  v0ReadRoutes(api);
  v0ActionRoutes(api);
}

/** The /v0 error body by its component name, for the OpenAPI document's `errorBodies` (src/spec/openapi.ts). */
export const v0ErrorBodies: Record<string, v.GenericSchema> = { [V0_ERROR_COMPONENT]: V0ErrorBody };
/** The /v0 shapes worth naming in the document (they recur across the /v0 operations). */
export const v0Components: Record<string, v.GenericSchema> = { V0Account, V0Chat, V0Message };
