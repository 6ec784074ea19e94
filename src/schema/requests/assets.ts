import * as v from "valibot";
import { LIMITS } from "../limits.ts";

/** Uploads and asset downloads: the request schemas (query and body) of their routes, which MCP tools and /v0 share. */
export const Base64Body = v.object({
  content: v.pipe(v.string(), v.minLength(1, "content must not be empty")),
  fileName: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(255))),
  mimeType: v.optional(v.pipe(v.string(), v.regex(/^[\w.+-]+\/[\w.+-]+$/, "expected a MIME type like image/png"))),
});
export const url = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxBytes(LIMITS.urlBytes, `must be at most ${LIMITS.urlBytes} bytes`),
);
export const UrlBody = v.object({ url });
export const ServeQuery = v.object({ url });
