import { Client } from "@xmpp/client-core";
import type { Element } from "@xmpp/xml";
import iqCallee from "@xmpp/iq/callee.js";
import iqCaller, { type IQCaller } from "@xmpp/iq/caller.js";
import middleware from "@xmpp/middleware";
import resourceBinding from "@xmpp/resource-binding";
import sasl from "@xmpp/sasl";
import saslPlain from "@xmpp/sasl-plain";
import streamFeatures from "@xmpp/stream-features";
import streamManagement from "@xmpp/stream-management";
import websocket from "@xmpp/websocket";
import SASLFactory from "saslmechanisms";
import { NetworkError } from "../../bridges/connector.ts";
import { isLoopbackHost } from "../../util/hosts.ts";
import { KeyReportingScram, credentialsFromKeys, type ScramCredentials, type ScramKeys } from "./scram.ts";

/** An open stream with what the connector uses on it. */
export type XmppConnection = Client & {
  iqCaller: IQCaller<Client>;
  streamManagement: { enabled: boolean; enableSent: boolean };
};

/**
 * Installs a transport beyond WebSocket, which every runtime has: the Node adapter adds TCP with STARTTLS
 * (adapters/node/xmpp-tcp.ts), which the Worker cannot open. It runs before SASL is set up, so that STARTTLS is
 * negotiated first.
 */
export type XmppTransport = (parts: { entity: Client; streamFeatures: unknown }) => void;

/** Where and how to reach an account's server (chosen at login; stored with the account). */
export interface XmppEndpoint {
  /** `xmpp://host:port` (TCP, STARTTLS when offered), `xmpps://host:port` (direct TLS) or `ws(s)://…` (RFC 7395). */
  service: string;
  /** The JID's domain (the stream's `to`). */
  domain: string;
  /** The user allowed an unencrypted stream to a server that is not on this machine. */
  allowInsecure?: boolean;
}

/** The server as a person named it: the JID's domain, and the address when the login gave another one. */
export function describeEndpoint(endpoint: XmppEndpoint): string {
  const { host, hostname } = new URL(endpoint.service);
  return hostname.toLowerCase() === endpoint.domain.toLowerCase() ? endpoint.domain : `${endpoint.domain} at ${host}`;
}

export type XmppSecret = { password: string } | { keys: ScramKeys };

export interface OpenOptions {
  endpoint: XmppEndpoint;
  /** Local part of the JID. */
  username: string;
  resource: string;
  secret: XmppSecret;
  /** Transports besides WebSocket (TCP on the daemon). */
  transports: readonly XmppTransport[];
  /** Called with the SCRAM keys a password login derived (what is kept instead of the password). */
  onKeys?: (keys: ScramKeys) => void;
  timeoutMs?: number;
}

/**
 * Opens one authenticated stream, ready for stanzas: resource bound and stream management (XEP-0198) settled, since
 * a stanza sent before mod_smacks enabled the stream makes Prosody close it. Reconnecting is the caller's job (a
 * fresh stream each time; history since the last stream comes from the archive), so there is no @xmpp/reconnect.
 * Fails with NetworkError: `rejected` + code `invalid_credentials` for a wrong password or stale keys, `rejected`
 * + `insecure_connection` where the stream would not be encrypted, `unavailable` when the server cannot be reached.
 */
export async function openConnection(options: OpenOptions): Promise<XmppConnection> {
  const { endpoint } = options;
  const xmpp = assemble(options);
  if (
    !xmpp.transports.some((t: { prototype: { socketParameters(s: string): unknown } }) =>
      safely(() => t.prototype.socketParameters(endpoint.service)),
    )
  )
    throw new NetworkError(
      "rejected",
      `this runtime cannot open ${endpoint.service.split(":")[0]}:// connections; give the server's WebSocket URL (ws:// or wss://)`,
      "unsupported_transport",
    );
  // Errors also reject start(); an "error" event without a listener would throw from the emitter.
  xmpp.on("error", () => undefined);
  const settled = streamManagementSettled(xmpp);
  try {
    await withTimeout(xmpp.start(), options.timeoutMs ?? 15_000);
    await withTimeout(settled.promise, 5_000);
    return xmpp;
  } catch (error) {
    await xmpp.stop().catch(() => undefined);
    throw classify(error);
  }
}

/**
 * The parts of @xmpp/client that a client of a known server needs, without its Node-only pieces (DNS lookup, TCP,
 * TLS), so the same code runs in workerd: stream features, SASL (SCRAM-SHA-1 reporting its keys, then PLAIN),
 * resource binding, stream management, IQ requests, and answers to pings (XEP-0199).
 */
function assemble(options: OpenOptions): XmppConnection {
  const entity = new Client({
    service: options.endpoint.service,
    domain: options.endpoint.domain,
    timeout: options.timeoutMs ?? 10_000,
  } as never);
  const mw = middleware({ entity });
  const features = streamFeatures({ middleware: mw });
  const caller = iqCaller({ middleware: mw, entity });
  const callee = iqCallee({ middleware: mw, entity });
  websocket({ entity });
  for (const transport of options.transports) transport({ entity, streamFeatures: features });
  const factory = new SASLFactory();
  factory.use(KeyReportingScram);
  saslPlain(factory);
  sasl({ streamFeatures: features, saslFactory: factory }, authenticate(options) as never);
  const sm = streamManagement({ streamFeatures: features, entity, middleware: mw } as never);
  resourceBinding({ iqCaller: caller, streamFeatures: features }, options.resource);
  callee.get("urn:xmpp:ping", "ping", () => ({}));
  dropDataAfterStreamClose(entity);
  return Object.assign(entity, {
    iqCaller: caller,
    streamManagement: sm as unknown as XmppConnection["streamManagement"],
  });
}

/**
 * @xmpp/connection 0.14 detaches its XML parser when the server closes the stream but keeps the socket's data
 * listener until the socket closes, so bytes that arrive in between (seen in the test suite as the server ends a
 * session) reach `parser.write` on a null parser: an uncaught TypeError, which would end the daemon. A closed stream
 * has nothing left to parse, so they are dropped. The listener is bound on first connect, so this runs before it.
 */
export function dropDataAfterStreamClose(entity: Client): void {
  const connection = entity as unknown as { parser: unknown; _onData(data: Uint8Array): void };
  const onData = connection._onData;
  connection._onData = function (this: typeof connection, data: Uint8Array) {
    if (this.parser) onData.call(this, data);
  };
}

function safely<T>(work: () => T): T | undefined {
  try {
    return work();
  } catch {
    return undefined;
  }
}

function authenticate(options: OpenOptions) {
  return async (
    done: (credentials: ScramCredentials, mechanism: string) => Promise<void>,
    mechanisms: string[],
    _fast: unknown,
    entity: Client,
  ) => {
    if (!entity.isSecure() && !options.endpoint.allowInsecure && !isLoopback(options.endpoint.service))
      throw new NetworkError(
        "rejected",
        "the server offers no encryption (STARTTLS); allow an unencrypted connection only on a network you trust",
        "insecure_connection",
      );
    const secret = options.secret;
    if (mechanisms.includes("SCRAM-SHA-1")) {
      const credentials =
        "keys" in secret
          ? credentialsFromKeys(options.username, secret.keys)
          : { username: options.username, password: secret.password, onKeys: options.onKeys };
      return done(credentials, "SCRAM-SHA-1");
    }
    if (mechanisms.includes("PLAIN") && "password" in secret)
      return done({ username: options.username, password: secret.password }, "PLAIN");
    throw new NetworkError(
      "rejected",
      `the server offers no sign-in method inboxd can use (${mechanisms.join(", ") || "none"})`,
      "unsupported_mechanism",
    );
  };
}

/**
 * Resolves once the server answered stream management's <enable/> (<enabled/> or <failed/>), or once the stream is
 * bound where the server did not offer it. `online` comes before that answer, and waiting on the library's flags
 * alone misses the case where <enable/> has not even been sent yet.
 */
function streamManagementSettled(xmpp: XmppConnection) {
  const SM = "urn:xmpp:sm:3";
  let offered = false;
  let answered = false;
  let online = false;
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  const check = () => {
    if (online && (answered || !offered)) resolve();
  };
  xmpp.on("nonza", (element: Element) => {
    if (element.is("features", "http://etherx.jabber.org/streams")) offered = element.getChild("sm", SM) !== undefined;
    else if (element.is("enabled", SM) || element.is("failed", SM)) answered = true;
    check();
  });
  xmpp.on("online", () => {
    online = true;
    check();
  });
  return { promise };
}

export function isLoopback(service: string): boolean {
  try {
    return isLoopbackHost(new URL(service).hostname);
  } catch {
    return false;
  }
}

function classify(error: unknown): NetworkError {
  if (error instanceof NetworkError) return error;
  const condition = (error as { condition?: string }).condition;
  const message = error instanceof Error ? error.message : String(error);
  if (condition === "not-authorized" || condition === "credentials-expired" || condition === "account-disabled")
    return new NetworkError(
      "rejected",
      condition === "account-disabled" ? "the server disabled this account" : "wrong JID or password",
      "invalid_credentials",
    );
  if (condition)
    return new NetworkError("unavailable", `the server refused the connection (${condition})`, "server_error");
  return new NetworkError("unavailable", `cannot reach the XMPP server: ${message}`, "unreachable");
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
