import { startWorkerd } from "../harness/workerd.ts";
import { xmppSuite } from "./suite.ts";

// The Worker reaches Prosody over XMPP-over-WebSocket (RFC 7395), the one transport a Durable Object can open;
// the object holds the account's socket while it is connected.
xmppSuite({
  name: "workerd (WebSocket)",
  serverFields: (server) => ({ websocketURL: server.websocketURL }),
  unsupportedFields: (server) => ({ host: server.host, port: String(server.port) }),
  async start(token) {
    const worker = await startWorkerd({ token, tuning: { xmppFirstBackfill: 30 } });
    return {
      url: worker.url,
      token,
      async restart(whileDown) {
        await worker.restart();
        // The object wakes (and connects) on its next request, so this runs while inboxd is still down.
        await whileDown?.();
      },
      stop: () => worker.stop(),
    };
  },
});
