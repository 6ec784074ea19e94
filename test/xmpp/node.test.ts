import { startDaemonRuntime } from "../harness/bridge-runtime.ts";
import { xmppSuite } from "./suite.ts";

/** The first connect reads this many messages per archive, so that paging back has to reach the server. */
const FIRST_BACKFILL = 30;

// The daemon reaches Prosody over TCP (xmpp://127.0.0.1:PORT, unencrypted as the server is on loopback).
xmppSuite({
  name: "the Node daemon (TCP)",
  serverFields: (server) => ({ host: server.host, port: String(server.port) }),
  start: (token) => startDaemonRuntime(token, { xmppFirstBackfill: FIRST_BACKFILL }),
});
