/**
 * A transport for the one client (test/kit/http.ts, `options.fetch`) over node:http instead of fetch: every header
 * goes out as given (Host too, which fetch replaces), on the connections of the agent given — false, a new one per
 * request; a keep-alive agent with one socket, so that a bench's timed requests pay no connection setup nor fetch's
 * own cost. Bodies are text or bytes.
 */
import http from "node:http";

/** Statuses whose response has no body (a Response refuses one). */
const EMPTY = new Set([204, 205, 304]);

export function nodeFetch(agent: http.Agent | false = false) {
  return (url: string, init: RequestInit): Promise<Response> => {
    const target = new URL(url);
    const method = init.method ?? "GET";
    const headers: Record<string, string> = { ...(init.headers as Record<string, string> | undefined) };
    const body = init.body as string | Uint8Array | undefined | null;
    if (body != null && typeof body !== "string" && !(body instanceof Uint8Array))
      throw new TypeError("nodeFetch sends text or bytes only");
    if (body != null) headers["content-length"] ??= String(Buffer.byteLength(body));
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: target.hostname, port: target.port, path: target.pathname + target.search, method, agent, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () => {
            const out = new Headers();
            for (let i = 0; i < res.rawHeaders.length; i += 2) out.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
            const status = res.statusCode ?? 0;
            const content = method === "HEAD" || EMPTY.has(status) ? null : Buffer.concat(chunks);
            resolve(new Response(content, { status, statusText: res.statusMessage, headers: out }));
          });
        },
      );
      req.on("error", reject);
      req.end(body ?? undefined);
    });
  };
}
