import type { OpenSocket } from "../../src/connectors/desktop-api/index.ts";

/**
 * The Worker's WebSocket to an upstream Desktop API server (the desktop-api network): a fetch with `Upgrade:
 * websocket`, the Workers way to open an outbound socket with request headers (the token).
 */
export const openUpstreamSocket: OpenSocket = async (url, headers) => {
  const response = await fetch(url.replace(/^ws/, "http"), { headers: { ...headers, upgrade: "websocket" } });
  const socket = (response as unknown as { webSocket?: WebSocket & { accept(): void } }).webSocket;
  if (!socket) throw new Error(`the upstream refused the WebSocket with ${response.status}`);
  socket.accept();
  return socket as never;
};
