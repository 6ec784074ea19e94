/**
 * A pass-through HTTP proxy in front of a homeserver that notes when it has handed a first sync of a run (a
 * `/sync` with `full_state=true`) to the client, and how many timeline events that answer carried. The Matrix
 * benchmark points an account at it to time the connector's own work on one sync: from the answer's last byte
 * leaving here to the account reporting `connected` (everything stored, position saved).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface DeliveredSync {
  /** performance.now() when the whole answer was written to the client's socket. */
  deliveredAt: number;
  /** From the request's arrival here to the homeserver's whole answer read (the server's part). */
  serverMs: number;
  /** Timeline events of every joined room in the answer. */
  events: number;
  bytes: number;
  /** This process parsing the answer and counting its events: the least any client does with it (a baseline). */
  parseMs: number;
}

export interface TimingProxy {
  url: string;
  /** The next first-sync answer delivered from now on. */
  nextFullSync(): Promise<DeliveredSync>;
  close(): Promise<void>;
}

export async function startTimingProxy(upstream: string): Promise<TimingProxy> {
  let waiting: ((sync: DeliveredSync) => void) | undefined;
  const server = http.createServer(async (req, res) => {
    const arrived = performance.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === "string" && name !== "host" && name !== "connection") headers.set(name, value);
    try {
      const answer = await fetch(new URL(req.url ?? "/", upstream), {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      const body = Buffer.from(await answer.arrayBuffer());
      const read = performance.now();
      const out: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        if (
          name !== "content-encoding" &&
          name !== "content-length" &&
          name !== "transfer-encoding" &&
          name !== "connection"
        )
          out[name] = value;
      });
      res.writeHead(answer.status, { ...out, "content-length": String(body.length) });
      const fullSync =
        req.url?.startsWith("/_matrix/client/v3/sync") &&
        new URL(req.url, upstream).searchParams.get("full_state") === "true" &&
        answer.ok;
      res.end(body, () => {
        const deliveredAt = performance.now();
        if (!fullSync || !waiting) return;
        const parseStarted = performance.now();
        const rooms =
          (
            JSON.parse(body.toString("utf8")) as {
              rooms?: { join?: Record<string, { timeline?: { events?: unknown[] } }> };
            }
          ).rooms?.join ?? {};
        const events = Object.values(rooms).reduce((n, room) => n + (room.timeline?.events?.length ?? 0), 0);
        const resolve = waiting;
        waiting = undefined;
        resolve({
          deliveredAt,
          serverMs: read - arrived,
          events,
          bytes: body.length,
          parseMs: performance.now() - parseStarted,
        });
      });
    } catch (error) {
      res.writeHead(502).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    nextFullSync: () => new Promise((resolve) => (waiting = resolve)),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
