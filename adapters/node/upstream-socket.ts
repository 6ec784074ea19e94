import WebSocket from "ws";
import type { OpenSocket } from "../../src/connectors/desktop-api/index.ts";

/**
 * The daemon's WebSocket to an upstream Desktop API server (the desktop-api network): `ws`, because it sends the
 * token as a header, which Node 20 has no built-in WebSocket for. Resolves once open; a refused upgrade rejects with
 * its status.
 */
export const openUpstreamSocket: OpenSocket = (url, headers) =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers, maxPayload: 64 * 1024 * 1024, handshakeTimeout: 15_000 });
    socket.once("open", () => resolve(socket as never));
    socket.once("unexpected-response", (_request, response) => {
      socket.terminate();
      reject(new Error(`the upstream refused the WebSocket with ${response.statusCode}`));
    });
    socket.once("error", (error) => reject(error));
  });
