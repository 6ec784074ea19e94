import type { Api } from "../http/route-kit.ts";
import { openApiDocument, type DocumentOptions, type OpenApiDocument } from "./openapi.ts";

/**
 * The OpenAPI document of every operation registered on `api`, built once on first use — after the last route is
 * plugged in (GET /v1/spec, search_docs).
 */
export function lazyDocument(api: Api, options: DocumentOptions): () => OpenApiDocument {
  let document: OpenApiDocument | undefined;
  return () => (document ??= openApiDocument(api.operations, options));
}

/** GET /v1/spec: the document, with this server as its `servers` entry. */
export function specRoutes(api: Api, document: () => OpenApiDocument) {
  api.add(
    {
      method: "GET",
      path: "/v1/spec",
      operationId: "getSpec",
      extension: true,
      summary: "This API's OpenAPI document",
      tag: "Server",
      description:
        "The OpenAPI 3.1 document of every operation this server answers, generated from the schemas it validates with.",
      responses: { 200: { description: "The OpenAPI 3.1 document.", content: { "application/json": null } } },
    },
    ({ rc }) => {
      return { ...document(), servers: [{ url: rc.url.origin }] };
    },
  );
}
