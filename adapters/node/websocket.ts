import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { arrival, requestFor } from "./peer.ts";
import type { ProxyTrust } from "./forwarded.ts";
import { writeRawResponse } from "./request-body.ts";
import { LIMITS } from "../../src/schema/limits.ts";
import { ApiError } from "../../src/errors.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import type { App } from "../../src/app.ts";
import { WS_PROTOCOL } from "../../src/version.ts";
import {
  frameFor,
  handleClientFrame,
  initialState,
  readyMessage,
  type ConnectionState,
} from "../../src/events/protocol.ts";
import type { DomainEvent } from "../../src/schema/events.ts";
import { replayLog } from "../../src/events/replay.ts";

export interface WebSocketOptions {
  /** Bytes a connection may have queued before it is closed as too slow (default 4 MiB). */
  maxBufferedBytes?: number;
  /** Ping interval; a peer that has not answered the previous ping by the next one is dropped (default 30 s). */
  pingIntervalMs?: number;
  /** Remote access: whose forwarded headers are believed (forwarded.ts), as for plain requests. */
  proxy?: ProxyTrust;
}

/** Close code for a consumer that cannot keep up (in the private-use range; documented in docs/events-and-webhooks.md). */
export const CLOSE_SLOW_CONSUMER = 4008;

/** What a /v1/ws session needs of its WebSocket: the `ws` library's, or a session carried by the relay (relay-client.ts). */
export interface EventSocket {
  send(frame: string): void;
  close(code: number, reason: string): void;
  /** Bytes queued and not yet sent. */
  readonly bufferedAmount: number;
  readonly open: boolean;
}

/** One session's side of the conversation: what the socket received, and that it closed. */
export interface EventSession {
  received(text: string | undefined): void;
  closed(): void;
}

/**
 * The /v1/ws sessions of the daemon, over any EventSocket: live events to each (a session whose sends pile up past
 * `maxBufferedBytes` is closed as a slow consumer), client frames answered, and resumes replayed from the event log.
 * The protocol itself (subscriptions, frames, errors) lives in src/events/protocol.ts.
 */
export function eventSessions(app: App, options: Pick<WebSocketOptions, "maxBufferedBytes"> = {}) {
  const maxBuffered = options.maxBufferedBytes ?? 4 * 1024 * 1024;
  const connections = new Map<EventSocket, { state: ConnectionState }>();
  const detach = app.events.add({
    wants: () => connections.size > 0,
    deliver(events: DomainEvent[]) {
      for (const [socket, conn] of connections) {
        for (const event of events) {
          const frame = frameFor(conn.state, event);
          if (frame === null) continue;
          if (socket.bufferedAmount > maxBuffered) {
            connections.delete(socket);
            socket.close(CLOSE_SLOW_CONSUMER, "slow consumer: too many undelivered events");
            break;
          }
          socket.send(frame);
        }
      }
    },
  });
  return {
    /** Starts a session on an accepted socket: sends the ready frame. */
    open(socket: EventSocket): EventSession {
      const conn = { state: initialState() };
      connections.set(socket, conn);
      socket.send(readyMessage());
      return {
        received(text) {
          const { state, replies, replayFrom } = handleClientFrame(conn.state, text ?? new Uint8Array());
          conn.state = state;
          for (const reply of replies) socket.send(reply);
          if (replayFrom === undefined) return;
          // Resume: what the log holds after `since`, then live. A replay sends only as fast as the socket drains.
          const send = (frame: string) => {
            socket.send(frame);
            return socket.bufferedAmount > maxBuffered / 4 ? drained(socket, maxBuffered / 16) : undefined;
          };
          void replayLog(app.events.log, state, () => (connections.has(socket) ? conn.state : undefined), send).catch(
            () => socket.close(1011, "event replay failed"),
          );
        },
        closed: () => void connections.delete(socket),
      };
    },
    get size() {
      return connections.size;
    },
    /** Closes every session (the daemon is stopping). */
    close(code: number, reason: string) {
      detach();
      for (const socket of connections.keys()) socket.close(code, reason);
      connections.clear();
    },
  };
}

/**
 * Serves /v1/ws on the daemon's HTTP server with the `ws` library: the upgrade vetted by the app, then a session of
 * eventSessions; this part only moves frames and pings.
 */
export function attachWebSockets(server: Server, app: App, options: WebSocketOptions = {}) {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: LIMITS.webSocketMessageBytes,
    handleProtocols: (offered) => (offered.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
  });
  const sessions = eventSessions(app, options);
  const alive = new Map<WebSocket, boolean>();

  // A malformed handshake (no Sec-WebSocket-Key, an unknown version…) gets the documented JSON error body, not ws's
  // text/html page. ws emits this only after the app admitted the upgrade (handleUpgrade validates the handshake).
  wss.on("wsClientError", (error: Error, socket: Duplex) => {
    const status = /method/i.test(error.message) ? 405 : 400;
    void refuse(
      socket,
      toErrorResponse(
        new ApiError(
          status,
          status === 405 ? "METHOD_NOT_ALLOWED" : "INVALID_REQUEST",
          `WebSocket handshake refused: ${error.message}`,
        ),
      ),
    );
  });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void (async () => {
      // Tagged with the client, so failed authentication on upgrades counts per address like any request.
      let request: Request;
      try {
        request = requestFor(
          arrival(
            `http://${req.headers.host ?? "localhost"}${req.url ?? "/"}`,
            toHeaders(req),
            req.socket.remoteAddress,
            options.proxy,
          ),
        );
      } catch (error) {
        return refuse(socket, toErrorResponse(error));
      }
      const verdict = await app.checkUpgrade(request);
      if (!verdict.ok) return refuse(socket, verdict.response);
      wss.handleUpgrade(req, socket, head, (ws) => {
        const session = sessions.open({
          send: (frame) => ws.send(frame),
          close: (code, reason) => ws.close(code, reason),
          get bufferedAmount() {
            return ws.bufferedAmount;
          },
          get open() {
            return ws.readyState === ws.OPEN;
          },
        });
        alive.set(ws, true);
        ws.on("pong", () => alive.set(ws, true));
        ws.on("message", (data, isBinary) => session.received(isBinary ? undefined : data.toString()));
        const gone = () => {
          alive.delete(ws);
          session.closed();
        };
        ws.on("close", gone);
        ws.on("error", gone);
      });
    })().catch(() => socket.destroy());
  });

  const pinger = setInterval(() => {
    for (const [ws, answered] of alive) {
      if (!answered) {
        alive.delete(ws);
        ws.terminate();
        continue;
      }
      alive.set(ws, false);
      ws.ping();
    }
  }, options.pingIntervalMs ?? 30_000);
  pinger.unref();

  return {
    connections: () => sessions.size,
    close() {
      clearInterval(pinger);
      sessions.close(1001, "server shutting down");
      alive.clear();
      wss.close();
    },
  };
}

/** Resolves once the socket's send buffer is below `bytes` (or it closed). */
async function drained(socket: EventSocket, bytes: number): Promise<void> {
  while (socket.bufferedAmount > bytes && socket.open) await new Promise((r) => setTimeout(r, 5));
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
