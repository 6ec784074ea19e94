import type { Api } from "../http/route-kit.ts";
import { webAssets } from "./assets.ts";

/**
 * The web inbox's policy (src/web/index.ts) less what the reference does not do (no media, no manifest, no form
 * posts): its own script and stylesheet only, connections to this server only, no framing. Swagger UI needs no
 * relaxation of it: its styles come in its stylesheet, and what it sets at run time goes through the CSSOM, which
 * `style-src` does not govern. Images may be `data:` (its stylesheet's icons) or `blob:` (an image answer shown
 * by "Try it out").
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/** GET /docs: the API reference (web/src/reference), whose script and stylesheet are served under /web/ with the inbox's. */
export function referenceRoutes(api: Api, tag: string) {
  api.add(
    {
      method: "GET",
      path: "/docs",
      operationId: "apiReference",
      summary: "The API reference",
      description:
        "An interactive reference rendered from GET /v1/spec; its requests use the web inbox's sign-in in the same browser.",
      tag,
      scope: "public",
      responses: { 200: { description: "An HTML page", content: { "text/html": null } } },
      extension: true,
    },
    async () =>
      new Response((await webAssets()).referencePage, {
        headers: {
          "content-type": "text/html; charset=utf-8",
          "content-security-policy": CSP,
          "x-frame-options": "DENY",
          "x-content-type-options": "nosniff",
          "referrer-policy": "same-origin",
          // It names the current build's assets, like the inbox's page.
          "cache-control": "no-cache",
        },
      }),
  );
}
