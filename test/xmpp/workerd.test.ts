import { startWorkerdRuntime } from "../harness/bridge-runtime.ts";
import { xmppSuite } from "./suite.ts";

// The Worker reaches Prosody over XMPP-over-WebSocket (RFC 7395), the one transport a Durable Object can open;
// the object holds the account's socket while it is connected.
xmppSuite({
  name: "workerd (WebSocket)",
  serverFields: (server) => ({ websocketURL: server.websocketURL }),
  unsupportedFields: (server) => ({ host: server.host, port: String(server.port) }),
  start: (token) => startWorkerdRuntime(token, { xmppFirstBackfill: 30 }),
});
