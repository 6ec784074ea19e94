import type { Api } from "../http/route-kit.ts";
import type { ServerInfo } from "../routes/info.ts";
import { openApiDocument, type DocumentOptions, type OpenApiDocument } from "./openapi.ts";

/**
 * GET /v1/spec: the OpenAPI 3.1 document of every operation registered on `api` (so it must be plugged in last),
 * with this server as its `servers` entry. Built once, on first request.
 */
export function specRoutes(api: Api, info: ServerInfo, more: Omit<DocumentOptions, "version"> = {}) {
  let document: OpenApiDocument | undefined;
  api.add(
    {
      method: "GET",
      path: "/v1/spec",
      operationId: "getSpec", extension: true,
      summary: "This API's OpenAPI document",
      tag: "Server",
      description: "The OpenAPI 3.1 document of every operation this server answers, generated from the schemas it validates with.",
      responses: { 200: { description: "The OpenAPI 3.1 document.", content: { "application/json": null } } },
    },
    ({ rc }) => {
      document ??= openApiDocument(api.operations, { version: info.version, ...more });
      return { ...document, servers: [{ url: rc.url.origin }] };
    },
  );
}
