import { ApiError } from "../errors.ts";
import type { Api } from "../http/route-kit.ts";
import { webAssets } from "./assets.ts";
import { referenceRoutes } from "./reference.ts";

const tag = "Web inbox";

/**
 * Who may do what on the page: its own script and stylesheet only (no inline script, no third-party resource),
 * images from this server or made in the page (attachments are fetched with the token and shown as blob: URLs),
 * connections to this server only (`'self'` covers its ws:/wss: too), no framing, no plugin, no base rewriting.
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; media-src 'self' blob:; connect-src 'self'; manifest-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const pageHeaders = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": CSP,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  // The page is tiny and names the current build's assets: always ask, so a new build shows on the next load.
  "cache-control": "no-cache",
};

/**
 * The web inbox (web/, built into web/dist by web/build.ts): the page at `/` and its content-hashed assets under
 * `/web/`. They are public like any static file (they hold no data); the page signs in through OAuth and then
 * uses only the public API with its own token. The API reference at `/docs` (reference.ts) shares the assets route.
 */
export function webRoutes(api: Api) {
  referenceRoutes(api, tag);
  api
    .add(
      {
        method: "GET",
        path: "/",
        operationId: "webInbox",
        summary: "The web inbox",
        description: "A web client over this API (sign-in through OAuth).",
        tag,
        scope: "public",
        responses: { 200: { description: "An HTML page", content: { "text/html": null } } },
        extension: true,
      },
      async () => new Response((await webAssets()).page, { headers: pageHeaders }),
    )
    .add(
      {
        method: "GET",
        path: "/web/:file",
        operationId: "webAsset",
        summary: "A file of the web inbox",
        description: "Content-hashed names: cached for a year.",
        tag,
        scope: "public",
        responses: { 200: { description: "A script, stylesheet or icon" } },
        extension: true,
      },
      async ({ params }) => {
        const asset = (await webAssets()).assets[`/web/${params.file}`];
        if (!asset) throw new ApiError(404, "NOT_FOUND", `the web inbox has no file ${params.file}`);
        return new Response(asset.body, {
          headers: {
            "content-type": asset.type,
            "cache-control": "public, max-age=31536000, immutable",
            "x-content-type-options": "nosniff",
          },
        });
      },
    );
}
