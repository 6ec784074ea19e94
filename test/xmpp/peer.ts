import { randomUUID } from "node:crypto";
import { WebSocket as NodeWebSocket } from "ws";
// @types/xmpp__client types the module loosely; `XmppLibrary` below types the parts used here.
import * as untypedXmpp from "@xmpp/client";
import type { ProsodyServer } from "../harness/prosody.ts";

/** An @xmpp/xml (ltx) element: the parts of its API the tests use. */
export interface Element {
  name: string;
  attrs: Record<string, string | undefined>;
  children: (Element | string)[];
  is(name: string, xmlns?: string): boolean;
  getChild(name: string, xmlns?: string): Element | undefined;
  getChildren(name: string, xmlns?: string): Element[];
  getChildText(name: string, xmlns?: string): string | null;
  getChildElements(): Element[];
  getText(): string;
  toString(): string;
}

type Child = Element | string | undefined | false;
type Attrs = Record<string, string | number | undefined>;

interface XmppClient {
  jid: { toString(): string; bare(): { toString(): string } } | null;
  status: string;
  streamManagement: { enabled: boolean };
  reconnect: { stop(): void };
  iqCaller: { request(stanza: Element, timeoutMs?: number): Promise<Element> };
  start(): Promise<unknown>;
  stop(): Promise<unknown>;
  send(stanza: Element): Promise<void>;
  on(event: "stanza" | "nonza", listener: (element: Element) => void): void;
  on(event: "online", listener: () => void): void;
  on(event: "error", listener: (error: Error) => void): void;
}

interface XmppLibrary {
  client(options: {
    service: string;
    domain: string;
    resource?: string;
    username: string;
    credentials: (
      authenticate: (credentials: { username: string; password: string }, mechanism: string) => Promise<void>,
      mechanisms: string[],
    ) => Promise<void>;
  }): XmppClient;
  xml(name: string, attrs?: Attrs, ...children: Child[]): Element;
}

const { client, xml } = untypedXmpp as unknown as XmppLibrary;
export { xml };

export interface ReceivedMessage {
  stanza: Element;
  from: string;
  id?: string;
  type?: string;
  body?: string;
}

type MessageType = "chat" | "groupchat";

const NS = {
  stream: "http://etherx.jabber.org/streams",
  sm: "urn:xmpp:sm:3",
  muc: "http://jabber.org/protocol/muc",
  mucUser: "http://jabber.org/protocol/muc#user",
  mucOwner: "http://jabber.org/protocol/muc#owner",
  dataForms: "jabber:x:data",
  roster: "jabber:iq:roster",
  upload: "urn:xmpp:http:upload:0",
  hints: "urn:xmpp:hints",
  originID: "urn:xmpp:sid:0",
  receipts: "urn:xmpp:receipts",
  markers: "urn:xmpp:chat-markers:0",
  chatStates: "http://jabber.org/protocol/chatstates",
  correction: "urn:xmpp:message-correct:0",
  reactions: "urn:xmpp:reactions:0",
  retraction: "urn:xmpp:message-retract:1",
  fallback: "urn:xmpp:fallback:0",
  reply: "urn:xmpp:reply:0",
} as const;

const DEFAULT_WAIT_MS = 5_000;

interface Waiter {
  match: (stanza: Element) => boolean;
  resolve: (stanza: Element) => void;
}

/**
 * A second party for connector tests: a plain XMPP client acting as another person, on a real server.
 * It logs in with PLAIN (the harness server allows it on loopback), so a connection costs milliseconds instead of
 * SCRAM's ~1.5 s of PBKDF2; it answers pings, sends no receipts or markers on its own, and after a lost
 * connection reconnects, announces itself and rejoins its rooms like any client.
 */
export class Peer {
  private readonly all: Element[] = [];
  private readonly unconsumed: Element[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly rooms = new Map<string, string>();
  private readonly errors: Error[] = [];
  private approving = false;
  /** Settles once the session is announced after the latest (re)login. */
  private announced: Promise<void> = Promise.resolve();

  private constructor(
    private readonly xmpp: XmppClient,
    private readonly uploadDomain: string,
  ) {
    const session = new SessionWatch(xmpp); // first: its `online` listener must run before the one below
    xmpp.on("stanza", (stanza) => this.receive(stanza));
    xmpp.on("error", (error) => this.errors.push(error));
    xmpp.on("online", () => {
      this.announced = this.announce(session);
      this.announced.catch((error) => this.errors.push(error)); // after a reconnection nobody else awaits it
    });
  }

  static async connect(
    server: ProsodyServer,
    user: string,
    password: string,
    options: { resource?: string; transport?: "tcp" | "websocket" } = {},
  ): Promise<Peer> {
    const websocket = options.transport === "websocket";
    // Node 20 has no global WebSocket (22 has), and @xmpp/websocket uses the global one.
    if (websocket) globalThis.WebSocket ??= NodeWebSocket as unknown as typeof WebSocket;
    const xmpp = client({
      service: websocket ? server.websocketURL : `xmpp://${server.host}:${server.port}`,
      domain: server.domain,
      // A fixed resource keeps the full JID across reconnections.
      resource: options.resource ?? `peer-${randomUUID().slice(0, 8)}`,
      username: user,
      credentials: (authenticate, mechanisms) =>
        authenticate({ username: user, password }, mechanisms.includes("PLAIN") ? "PLAIN" : mechanisms[0]),
    });
    const peer = new Peer(xmpp, server.uploadDomain);
    try {
      await xmpp.start();
    } catch (error) {
      await peer.close();
      throw new Error(`${user}@${server.domain} could not log in: ${error}\n${server.log()}`, { cause: error });
    }
    await peer.announced;
    return peer;
  }

  /** The full JID. */
  get jid(): string {
    return this.xmpp.jid!.toString();
  }

  get bareJID(): string {
    return this.xmpp.jid!.bare().toString();
  }

  /**
   * Waits for stream management (XEP-0198) to settle before the first stanza: @xmpp/client reports `online`
   * before it sends <enable/>, and a stanza sent in between makes mod_smacks close the stream.
   */
  private async announce(session: SessionWatch): Promise<void> {
    await session.streamManagementSettled();
    await this.send(xml("presence"));
    for (const [room, nick] of this.rooms) await this.send(joinPresence(room, nick));
  }

  async send(stanza: Element): Promise<void> {
    await this.xmpp.send(stanza);
  }

  async message(
    to: string,
    body: string,
    opts: {
      id?: string;
      type?: MessageType;
      replyTo?: { id: string; to: string };
      markable?: boolean;
      requestReceipt?: boolean;
      originID?: boolean;
      store?: boolean;
    } = {},
  ): Promise<string> {
    const id = opts.id ?? randomUUID();
    await this.send(
      xml(
        "message",
        { to, id, type: opts.type ?? "chat" },
        xml("body", {}, body),
        opts.originID !== false && xml("origin-id", { xmlns: NS.originID, id }),
        opts.replyTo && xml("reply", { xmlns: NS.reply, id: opts.replyTo.id, to: opts.replyTo.to }),
        opts.markable && xml("markable", { xmlns: NS.markers }),
        opts.requestReceipt && xml("request", { xmlns: NS.receipts }),
        opts.store && xml("store", { xmlns: NS.hints }),
      ),
    );
    return id;
  }

  /** XEP-0308: a new message whose <replace> names the one it corrects. */
  async correct(to: string, replacesID: string, body: string, opts: { type?: MessageType } = {}): Promise<string> {
    const id = randomUUID();
    await this.send(
      xml(
        "message",
        { to, id, type: opts.type ?? "chat" },
        xml("body", {}, body),
        xml("origin-id", { xmlns: NS.originID, id }),
        xml("replace", { xmlns: NS.correction, id: replacesID }),
      ),
    );
    return id;
  }

  /** XEP-0444: the full set of this peer's reactions; the hint makes Prosody archive a message without a body. */
  async react(to: string, messageID: string, emojis: string[], opts: { type?: MessageType } = {}): Promise<void> {
    await this.send(
      xml(
        "message",
        { to, id: randomUUID(), type: opts.type ?? "chat" },
        xml("reactions", { xmlns: NS.reactions, id: messageID }, ...emojis.map((emoji) => xml("reaction", {}, emoji))),
        xml("store", { xmlns: NS.hints }),
      ),
    );
  }

  /** XEP-0424 (version 1), with the fallback body older clients show. */
  async retract(to: string, messageID: string, opts: { type?: MessageType } = {}): Promise<void> {
    await this.send(
      xml(
        "message",
        { to, id: randomUUID(), type: opts.type ?? "chat" },
        xml("retract", { xmlns: NS.retraction, id: messageID }),
        xml("fallback", { xmlns: NS.fallback, for: NS.retraction }),
        xml("body", {}, "/me retracted a previous message, but it's unsupported by your client."),
        xml("store", { xmlns: NS.hints }),
      ),
    );
  }

  /** XEP-0184 delivery receipt. */
  async receipt(to: string, messageID: string): Promise<void> {
    await this.send(xml("message", { to, id: randomUUID() }, xml("received", { xmlns: NS.receipts, id: messageID })));
  }

  /** XEP-0333 read marker. */
  async displayed(to: string, messageID: string, opts: { type?: MessageType } = {}): Promise<void> {
    await this.send(
      xml(
        "message",
        { to, id: randomUUID(), type: opts.type ?? "chat" },
        xml("displayed", { xmlns: NS.markers, id: messageID }),
      ),
    );
  }

  /** XEP-0085 chat state; never archived. */
  async typing(to: string, state: "composing" | "paused" | "active", opts: { type?: MessageType } = {}): Promise<void> {
    await this.send(
      xml(
        "message",
        { to, id: randomUUID(), type: opts.type ?? "chat" },
        xml(state, { xmlns: NS.chatStates }),
        xml("no-store", { xmlns: NS.hints }),
      ),
    );
  }

  /**
   * Joins a MUC room and resolves on this peer's own presence. A room this join creates is configured at once
   * (persistent, archived, real JIDs visible), since Prosody keeps a new room locked until its owner does.
   */
  async joinRoom(roomJID: string, nick: string): Promise<void> {
    const own = (stanza: Element) => stanza.is("presence") && stanza.attrs.from === `${roomJID}/${nick}`;
    const answer = this.waitFor(own, DEFAULT_WAIT_MS);
    await this.send(joinPresence(roomJID, nick));
    const presence = await answer;
    if (presence.attrs.type === "error") throw new Error(`joining ${roomJID} as ${nick} failed: ${presence}`);
    this.rooms.set(roomJID, nick);
    if (statusCodes(presence).includes("201")) await this.configureRoom(roomJID);
  }

  private async configureRoom(roomJID: string): Promise<void> {
    const field = (name: string, value: string) => xml("field", { var: name }, xml("value", {}, value));
    await this.xmpp.iqCaller.request(
      xml(
        "iq",
        { type: "set", to: roomJID },
        xml(
          "query",
          { xmlns: NS.mucOwner },
          xml(
            "x",
            { xmlns: NS.dataForms, type: "submit" },
            field("FORM_TYPE", "http://jabber.org/protocol/muc#roomconfig"),
            field("muc#roomconfig_persistentroom", "1"),
            field("muc#roomconfig_enablearchiving", "1"),
            field("muc#roomconfig_whois", "anyone"),
          ),
        ),
      ),
    );
  }

  /** A mediated invitation (XEP-0045 §7.8.2): the room forwards it to `who`. */
  async invite(roomJID: string, who: string): Promise<void> {
    await this.send(
      xml("message", { to: roomJID, id: randomUUID() }, xml("x", { xmlns: NS.mucUser }, xml("invite", { to: who }))),
    );
  }

  /** XEP-0363: asks the upload component for a slot, PUTs the bytes with the slot's headers, returns the GET URL. */
  async upload(bytes: Uint8Array, fileName: string, contentType: string): Promise<string> {
    const result = await this.xmpp.iqCaller.request(
      xml(
        "iq",
        { type: "get", to: this.uploadDomain },
        xml("request", { xmlns: NS.upload, filename: fileName, size: bytes.byteLength, "content-type": contentType }),
      ),
    );
    const slot = result.getChild("slot", NS.upload)!;
    const put = slot.getChild("put")!;
    const headers: Record<string, string> = { "content-type": contentType };
    for (const header of put.getChildren("header")) headers[header.attrs.name!] = header.getText();
    const response = await fetch(put.attrs.url!, {
      method: "PUT",
      headers,
      body: new Blob([bytes as Uint8Array<ArrayBuffer>]),
    });
    if (!response.ok)
      throw new Error(`upload PUT ${put.attrs.url} answered ${response.status}: ${await response.text()}`);
    return slot.getChild("get")!.attrs.url!;
  }

  /** Adds a roster item and asks for a presence subscription. */
  async addContact(jid: string, name?: string): Promise<void> {
    await this.xmpp.iqCaller.request(
      xml("iq", { type: "set" }, xml("query", { xmlns: NS.roster }, xml("item", { jid, name }))),
    );
    await this.send(xml("presence", { to: jid, type: "subscribe" }));
  }

  /** From now on, accepts every subscription request (including ones already received). */
  approveSubscriptions(): void {
    this.approving = true;
    for (const stanza of this.all) this.approve(stanza);
  }

  private approve(stanza: Element): void {
    if (!this.approving || !stanza.is("presence") || stanza.attrs.type !== "subscribe") return;
    this.send(xml("presence", { to: stanza.attrs.from, type: "subscribed" })).catch((error) => this.errors.push(error));
  }

  /**
   * Resolves with the first stanza not taken by an earlier wait that matches: one already received, or the next
   * to arrive. Each stanza satisfies one wait only, so two waits for "a message" get two different messages.
   */
  waitFor(match: (stanza: Element) => boolean, timeoutMs = DEFAULT_WAIT_MS): Promise<Element> {
    const index = this.unconsumed.findIndex(match);
    if (index >= 0) return Promise.resolve(this.unconsumed.splice(index, 1)[0]);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        match,
        resolve: (stanza) => {
          clearTimeout(timer);
          resolve(stanza);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(
          new Error(
            `${this.jid}: no matching stanza within ${timeoutMs} ms; unclaimed so far:\n${this.describeUnconsumed()}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  async waitForMessage(
    match: (message: ReceivedMessage) => boolean,
    timeoutMs = DEFAULT_WAIT_MS,
  ): Promise<ReceivedMessage> {
    const stanza = await this.waitFor((s) => s.is("message") && match(toMessage(s)), timeoutMs);
    return toMessage(stanza);
  }

  /** Every stanza received so far, claimed by a wait or not. */
  received(): Element[] {
    return [...this.all];
  }

  async close(): Promise<void> {
    this.xmpp.reconnect.stop();
    if (this.xmpp.status !== "offline") await this.xmpp.stop().catch(() => undefined);
  }

  private receive(stanza: Element): void {
    this.all.push(stanza);
    this.approve(stanza);
    const waiter = this.waiters.find((w) => w.match(stanza));
    if (!waiter) {
      this.unconsumed.push(stanza);
      return;
    }
    this.waiters.splice(this.waiters.indexOf(waiter), 1);
    waiter.resolve(stanza);
  }

  private describeUnconsumed(): string {
    const lines = this.unconsumed.slice(-20).map((stanza) => `  ${String(stanza).slice(0, 400)}`);
    const errors = this.errors.map((error) => `  (client error) ${error.message}`);
    return [...lines, ...errors].join("\n") || "  (nothing)";
  }
}

function toMessage(stanza: Element): ReceivedMessage {
  return {
    stanza,
    from: stanza.attrs.from ?? "",
    id: stanza.attrs.id,
    type: stanza.attrs.type,
    body: stanza.getChildText("body") ?? undefined,
  };
}

function joinPresence(roomJID: string, nick: string): Element {
  // maxstanzas=0: the room's history replay would otherwise look like new messages to the tests.
  return xml("presence", { to: `${roomJID}/${nick}` }, xml("x", { xmlns: NS.muc }, xml("history", { maxstanzas: 0 })));
}

function statusCodes(presence: Element): string[] {
  return (presence.getChild("x", NS.mucUser)?.getChildren("status") ?? []).map((status) => status.attrs.code ?? "");
}

/** Follows the stream features and XEP-0198 answers of one connection, across reconnections. */
class SessionWatch {
  private offered = false;
  private settled = true;
  private waiting: (() => void)[] = [];

  constructor(xmpp: XmppClient) {
    xmpp.on("nonza", (element) => {
      if (element.is("features", NS.stream)) this.offered = !!element.getChild("sm", NS.sm);
      if (element.is("enabled", NS.sm) || element.is("failed", NS.sm)) this.settle();
    });
    // `online` comes after binding and before <enable/>, so the next <enabled/> or <failed/> answers it. One
    // that came earlier answered a <resume/>, which is tried first after a reconnection.
    xmpp.on("online", () => (this.settled = !this.offered));
  }

  /** Resolves once <enable/> was answered, or at once when the server offers no stream management. */
  streamManagementSettled(): Promise<void> {
    if (this.settled) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private settle(): void {
    this.settled = true;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}
