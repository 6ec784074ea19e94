import { createStorage } from "unstorage";
import { createApp, type App } from "../../src/app.ts";
import { parseRateLimit } from "../../src/http/rate-limit.ts";
import { parseToolSelection } from "../../src/mcp/index.ts";
import { ApiError } from "../../src/errors.ts";
import { toErrorResponse } from "../../src/http/errors.ts";

/** The vars the public app reads (as an inbox reads them, inbox-object.ts). */
interface PublicEnv {
  INBOXD_MCP_TOOLS?: string;
  INBOXD_RATE_LIMIT?: string;
}

let built: Promise<App> | undefined;

/**
 * Where a deployment holds many inboxes, the answer to a request that names none (src/tenancy.ts), or names one
 * that does not exist: the same app over an empty store in memory, with no token and no data. It serves what needs
 * no inbox — the OAuth discovery documents, registration (self-contained client IDs), the sign-in page, the web
 * inbox's files — and refuses everything else exactly as an inbox refuses a token it does not know, so a refusal
 * never tells whether an inbox exists. One per isolate, shared by the requests it serves; a failed build is retried.
 */
export function publicApp(env: PublicEnv): Promise<App> {
  built ??= createApp({
    storage: createStorage(),
    allowedHosts: "*",
    tenancy: {},
    mcp: { tools: parseToolSelection(env.INBOXD_MCP_TOOLS) },
    rateLimit: parseRateLimit(env.INBOXD_RATE_LIMIT),
    clientAddress: (request) => request.headers.get("cf-connecting-ip") ?? undefined,
    info: { platform: { os: "workerd", arch: "unknown" } },
    log: (line) => {
      if (line.startsWith("error:")) console.error(line);
    },
  }).catch((error: unknown) => {
    built = undefined;
    throw error;
  });
  return built;
}

/** The public app's answer to `request`, a WebSocket upgrade included (which it refuses: no token is known). */
export async function publicAnswer(env: PublicEnv, request: Request): Promise<Response> {
  const app = await publicApp(env);
  if (request.headers.get("upgrade")?.toLowerCase() === "websocket") {
    const verdict = await app.checkUpgrade(request);
    if (!verdict.ok) return verdict.response;
    return toErrorResponse(new ApiError(401, "UNAUTHORIZED", "no inbox holds this token"));
  }
  return app.fetch(request);
}
