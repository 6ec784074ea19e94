import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { arrival, requestFor } from "./peer.ts";
import type { ProxyTrust } from "./forwarded.ts";
import { writeRawResponse } from "./request-body.ts";
import { LIMITS } from "../../src/http/limits.ts";
import { ApiError, toErrorResponse } from "../../src/http/errors.ts";
import { WS_PROTOCOL, type App } from "../../src/app.ts";
import { frameFor, handleClientFrame, initialState, readyMessage, type ConnectionState, type DomainEvent } from "../../src/events/protocol.ts";
import { replayLog } from "../../src/events/replay.ts";

export interface WebSocketOptions {
  /** Bytes a connection may have queued before it is closed as too slow (default 4 MiB). */
  maxBufferedBytes?: number;
  /** Ping interval; a peer that has not answered the previous ping by the next one is dropped (default 30 s). */
  pingIntervalMs?: number;
  /** Remote access: whose forwarded headers are believed (src/http/forwarded.ts), as for plain requests. */
  proxy?: ProxyTrust;
}

/** Close code for a consumer that cannot keep up (in the private-use range; documented in the README). */
export const CLOSE_SLOW_CONSUMER = 4008;

/**
 * Serves /v1/ws on the daemon's HTTP server with the `ws` library. The protocol itself (subscriptions, frames,
 * errors) lives in src/events/protocol.ts; this file only moves frames and enforces the per-connection limits.
 */
export function attachWebSockets(server: Server, app: App, options: WebSocketOptions = {}) {
  const maxBuffered = options.maxBufferedBytes ?? 4 * 1024 * 1024;
  const wss = new WebSocketServer({ noServer: true, maxPayload: LIMITS.webSocketMessageBytes, handleProtocols: (offered) => (offered.has(WS_PROTOCOL) ? WS_PROTOCOL : false) });
  const connections = new Map<WebSocket, { state: ConnectionState; alive: boolean }>();

  const detach = app.events.add({
    wants: () => connections.size > 0,
    deliver(events: DomainEvent[]) {
      for (const [ws, conn] of connections) {
        for (const event of events) {
          const frame = frameFor(conn.state, event);
          if (frame === null) continue;
          if (ws.bufferedAmount > maxBuffered) {
            connections.delete(ws);
            ws.close(CLOSE_SLOW_CONSUMER, "slow consumer: too many undelivered events");
            break;
          }
          ws.send(frame);
        }
      }
    },
  });

  // A malformed handshake (no Sec-WebSocket-Key, an unknown version…) gets the documented JSON error body, not ws's
  // text/html page. ws emits this only after the app admitted the upgrade (handleUpgrade validates the handshake).
  wss.on("wsClientError", (error: Error, socket: Duplex) => {
    const status = /method/i.test(error.message) ? 405 : 400;
    void refuse(socket, toErrorResponse(new ApiError(status, status === 405 ? "METHOD_NOT_ALLOWED" : "INVALID_REQUEST", `WebSocket handshake refused: ${error.message}`)));
  });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void (async () => {
      // Tagged with the client, so failed authentication on upgrades counts per address like any request.
      let request: Request;
      try {
        request = requestFor(arrival(`http://${req.headers.host ?? "localhost"}${req.url ?? "/"}`, toHeaders(req), req.socket.remoteAddress, options.proxy));
      } catch (error) {
        return refuse(socket, toErrorResponse(error));
      }
      const verdict = await app.checkUpgrade(request);
      if (!verdict.ok) return refuse(socket, verdict.response);
      wss.handleUpgrade(req, socket, head, (ws) => {
        const conn = { state: initialState(), alive: true };
        connections.set(ws, conn);
        ws.on("pong", () => (conn.alive = true));
        ws.on("message", (data, isBinary) => {
          const { state, replies, replayFrom } = handleClientFrame(conn.state, isBinary ? new Uint8Array() : data.toString());
          conn.state = state;
          for (const reply of replies) ws.send(reply);
          if (replayFrom === undefined) return;
          // Resume: what the log holds after `since`, then live. A replay sends only as fast as the socket drains.
          const send = (frame: string) => {
            ws.send(frame);
            return ws.bufferedAmount > maxBuffered / 4 ? drained(ws, maxBuffered / 16) : undefined;
          };
          void replayLog(app.events.log, state, () => (connections.has(ws) ? conn.state : undefined), send).catch(() => ws.close(1011, "event replay failed"));
        });
        ws.on("close", () => connections.delete(ws));
        ws.on("error", () => connections.delete(ws));
        ws.send(readyMessage());
      });
    })().catch(() => socket.destroy());
  });

  const pinger = setInterval(() => {
    for (const [ws, conn] of connections) {
      if (!conn.alive) {
        connections.delete(ws);
        ws.terminate();
        continue;
      }
      conn.alive = false;
      ws.ping();
    }
  }, options.pingIntervalMs ?? 30_000);
  pinger.unref();

  return {
    connections: () => connections.size,
    close() {
      clearInterval(pinger);
      detach();
      for (const ws of connections.keys()) ws.close(1001, "server shutting down");
      connections.clear();
      wss.close();
    },
  };
}

/** Resolves once the socket's send buffer is below `bytes` (or it closed). */
async function drained(ws: WebSocket, bytes: number): Promise<void> {
  while (ws.bufferedAmount > bytes && ws.readyState === ws.OPEN) await new Promise((r) => setTimeout(r, 5));
}

function toHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** Answers a refused upgrade with a plain HTTP response (status and JSON error body) and closes the socket. */
async function refuse(socket: Duplex, response: Response) {
  await writeRawResponse(socket, response);
}
