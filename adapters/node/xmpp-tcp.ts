import starttls from "@xmpp/starttls";
import tcp from "@xmpp/tcp";
import WebSocket from "ws";
import type { XmppTransport } from "../../src/connectors/xmpp/connection.ts";

/**
 * XMPP over TCP (`xmpp://host:port`, RFC 6120), upgraded with STARTTLS whenever the server offers it (the server's
 * certificate is checked against the JID's domain). Node-only: the core's XMPP client runs on WebSocket alone.
 */
export const xmppOverTCP: XmppTransport = ({ entity, streamFeatures }) => {
  tcp({ entity });
  starttls({ streamFeatures });
};

// The XMPP WebSocket transport (RFC 7395, for servers given by a ws:// or wss:// URL) uses the global WebSocket,
// which Node has from 22 on; on Node 20 the daemon provides it from `ws`.
globalThis.WebSocket ??= WebSocket as unknown as typeof globalThis.WebSocket;
