import xml from "@xmpp/xml";
import type { XmppConnection as Client } from "./connection.ts";
import type { Element } from "@xmpp/xml";
import {
  NetworkError,
  type ChatCapabilities,
  type ConnectorHost,
  type HistoryPage,
  type InboundEvent,
  type InboundMessage,
  type NetworkChat,
  type NetworkClient,
  type NetworkMedia,
  type OutgoingMessage,
  type SendReceipt,
  type TypingState,
} from "../../bridges/connector.ts";
import type { User } from "../../schema/wire.ts";
import type { AccountRecord } from "../../store/records.ts";
import { describeEndpoint, openConnection, type XmppTransport } from "./connection.ts";
import { inboundMessage, locate, translate, type InboundContext } from "./inbound.ts";
import { isArchiveResult, queryArchive } from "./mam.ts";
import { fetchMedia, mediaURL } from "./media.ts";
import { isPrivateHost } from "../../util/hosts.ts";
import { applyOccupantPresence, inviteToRoom, joinRoom, roomTitle, type Room } from "./muc.ts";
import { addToRoster, fetchRoster, rosterUser } from "./roster.ts";
import {
  bare,
  chatState,
  correction,
  displayed,
  NS,
  parseMessage,
  reactionSet,
  receipt,
  retraction,
  textMessage,
} from "./stanzas.ts";
import { readState, type XmppState } from "./state.ts";
import { JID } from "./login.ts";
import { findService, findUploadService, uploadFile } from "./upload.ts";
import { sleep, Backoff } from "../../util/backoff.ts";

/** How much history a first connect reads from the account's archive (and from each room's). */
export const FIRST_BACKFILL = 10_000;
/** How long a live archive position may wait before it is saved. */
const POSITION_SAVE_MS = 3000;
/** How many archive pages a history fetch reads looking for the message it pages back from. */
const HISTORY_SCAN_PAGES = 20;
/** Archive page size asked for (a server may answer with smaller pages). */
const ARCHIVE_PAGE = 1000;

const EVERYTHING: ChatCapabilities = {
  edits: true,
  deletes: true,
  reactions: true,
  replies: true,
  attachments: true,
  multipleReactions: true,
};

/**
 * One XMPP account. It keeps one stream open and reconnects on its own with backoff (reporting `connecting`); each
 * new stream catches up from the archives (`backfilling`) before live traffic is handed on, so nothing sent while
 * the account was offline is lost and nothing is delivered twice (the host drops a message ID it already has).
 * Inbound stanzas are handled one at a time, in arrival order.
 */
export class XmppClient implements NetworkClient {
  readonly reportsStatus = true;
  readonly holdsConnection = true;
  private readonly state: XmppState;
  private xmpp?: Client;
  private stopped = true;
  private loop?: Promise<void>;
  private readonly backoff = new Backoff();
  private readonly wakeups = new AbortController();
  private readonly rooms = new Map<string, Room>();
  private readonly sentHere = new Set<string>();
  private readonly announced = new Set<string>();
  private roster = new Map<string, User>();
  private uploadService?: string | null;
  private groupService?: string;
  /** Live messages wait here while the archives are read, then go through in order. */
  private held: Element[] | undefined;
  private inbound: Promise<void> = Promise.resolve();
  private positionSave?: ReturnType<typeof setTimeout>;
  /** The account's archive answered this run: everything sent to the account is in it. */
  private archiveWorks = false;

  constructor(
    private readonly account: AccountRecord,
    private readonly host: ConnectorHost,
    private readonly options: { transports: readonly XmppTransport[]; firstBackfill: number },
  ) {
    this.state = readState(account.state ?? {});
  }

  private get selfBare() {
    return this.state.jid;
  }

  private get self(): User {
    return { ...this.account.user, isSelf: true };
  }

  async connect() {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  async disconnect() {
    this.stopped = true;
    this.wakeups.abort();
    clearTimeout(this.positionSave);
    if (this.positionSave) await this.save().catch(() => undefined);
    this.positionSave = undefined;
    const xmpp = this.xmpp;
    this.xmpp = undefined;
    await xmpp?.send(xml("presence", { type: "unavailable" })).catch(() => undefined);
    await xmpp?.stop().catch(() => undefined);
    // A connection attempt in flight gives up at its own timeout and then closes what it opened (run()).
    await Promise.race([this.loop, new Promise((resolve) => setTimeout(resolve, 2000))]);
  }

  /** Connect, catch up, serve until the stream drops; again, with backoff, until disconnect() or bad credentials. */
  private async run() {
    while (!this.stopped) {
      await this.status(
        "connecting",
        `${this.backoff.attempts ? "Reconnecting" : "Connecting"} to ${describeEndpoint(this.state.endpoint)}`,
      );
      let xmpp: Client;
      try {
        xmpp = await openConnection({
          endpoint: this.state.endpoint,
          username: this.selfBare.split("@")[0],
          resource: this.state.resource,
          secret: this.state.secret,
          transports: this.options.transports,
        });
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof NetworkError && error.kind === "rejected") {
          const why =
            error.code === "invalid_credentials"
              ? "The server refused the saved credentials (was the password changed?). Sign in again."
              : error.message;
          await this.status("reconnect_required", why);
          this.stopped = true;
          return;
        }
        const delay = this.backoff.next();
        await this.status(
          "connecting",
          `${error instanceof Error ? error.message : "Cannot connect"}; retrying in ${Math.ceil(delay / 1000)} s`,
        );
        await sleep(delay, this.wakeups.signal);
        continue;
      }
      if (this.stopped) {
        await xmpp.stop().catch(() => undefined);
        return;
      }
      const closed = new Promise<void>((resolve) => xmpp.once("disconnect", () => resolve()));
      this.xmpp = xmpp;
      // A stream that drops while the archives are read leaves their queries waiting for a timeout: move on at once.
      const outcome = await Promise.race([
        this.online(xmpp).then(
          () => "online" as const,
          () => "failed" as const,
        ),
        closed.then(() => "closed" as const),
      ]);
      if (outcome === "online") this.backoff.reset();
      if (outcome === "failed") await xmpp.stop().catch(() => undefined);
      await closed;
      if (this.xmpp === xmpp) this.xmpp = undefined;
      this.held = undefined;
      if (!this.stopped) await sleep(this.backoff.next(), this.wakeups.signal);
    }
  }

  private async online(xmpp: Client) {
    // Per stream: a run that outlived its stream (it dropped during the catch-up) must not touch the next one's.
    const held: Element[] = [];
    this.held = held;
    xmpp.on("stanza", (stanza: Element) => this.onStanza(xmpp, stanza));
    await xmpp.iqCaller.set(xml("enable", { xmlns: NS.carbons })).catch(() => undefined);
    await this.status("backfilling", "Loading history");
    this.roster = new Map((await fetchRoster(xmpp).catch(() => [])).map((u) => [u.id, u]));
    // Rooms are known before the account's own archive is read, so private messages from their members are told
    // apart from people's direct messages.
    for (const [jid, room] of Object.entries(this.state.rooms))
      if (!this.rooms.has(jid))
        this.rooms.set(jid, { jid, nick: room.nick, title: jid.split("@")[0], occupants: new Map() });
    // The archive first, then presence: a server whose client read the archive before becoming available has
    // nothing to push from its offline store (Prosody skips it), which would only repeat what the archive has.
    await this.catchUp(xmpp, undefined);
    await xmpp.send(xml("presence"));
    for (const [jid, room] of Object.entries(this.state.rooms))
      await this.enterRoom(xmpp, jid, room.nick, { password: room.password }).catch(() => undefined);
    for (const room of this.rooms.keys()) await this.catchUp(xmpp, room);
    // What reached the archive between the first read and presence (live from then on).
    await this.catchUp(xmpp, undefined);
    if (this.xmpp !== xmpp || this.held !== held) return;
    this.held = undefined;
    for (const stanza of held) this.handle(xmpp, stanza);
    await this.inbound;
    if (this.xmpp === xmpp) await this.status("connected");
  }

  private onStanza(xmpp: Client, stanza: Element) {
    if (xmpp !== this.xmpp) return;
    if (stanza.is("presence")) return this.onPresence(stanza);
    if (!stanza.is("message") || isArchiveResult(stanza)) return;
    if (this.held) this.held.push(stanza);
    else this.handle(xmpp, stanza);
  }

  /** Queues a live message stanza behind the ones before it. */
  private handle(xmpp: Client, stanza: Element) {
    this.inbound = this.inbound.then(() => this.deliverLive(xmpp, stanza)).catch(() => undefined);
  }

  private async deliverLive(xmpp: Client, stanza: Element) {
    // The server's offline store hands over, as live messages, what the archive catch-up already delivered (or
    // chose not to, past the first connect's limit): copies the archive has (they carry its ID) are skipped.
    if (this.archiveWorks && isOfflineCopy(stanza, this.state.endpoint.domain) && this.archivedHere(stanza)) return;
    const translation = await translate(stanza, this.context(), false);
    if (translation.invite && (await this.acceptsInvite(xmpp, translation.invite))) {
      await this.enterRoom(xmpp, translation.invite.room, this.nick(), { password: translation.invite.password });
      await this.catchUp(xmpp, translation.invite.room);
    }
    for (const event of translation.events) await this.emit(event);
    this.noteArchivePosition(stanza);
    if (translation.ackTo)
      await xmpp.send(receipt(translation.ackTo.jid, crypto.randomUUID(), translation.ackTo.id)).catch(() => undefined);
  }

  /**
   * Joins rooms only on an invitation from someone in the roster, to something the server says is a room: joining
   * sends the account's presence there and keeps it coming back on every connect.
   */
  private async acceptsInvite(xmpp: Client, invite: { room: string; inviter: string }): Promise<boolean> {
    if (!this.roster.has(bare(invite.inviter))) await this.listContacts().catch(() => undefined); // added since the connect?
    if (!this.roster.has(bare(invite.inviter))) return false;
    const info = await xmpp.iqCaller
      .get(xml("query", { xmlns: "http://jabber.org/protocol/disco#info" }), invite.room)
      .catch(() => undefined);
    return info?.getChildren("identity").some((i) => i.attrs.category === "conference") === true;
  }

  private archivedHere(stanza: Element): boolean {
    return stanza.getChildren("stanza-id", NS.sid).some((sid) => bare(String(sid.attrs.by ?? "")) === this.selfBare);
  }

  /**
   * Emits an event, announcing a 1:1 chat before its first message of this run, so that the chat is titled from the
   * roster and has the right other participant even when its first message is the account's own.
   */
  private async emit(event: InboundEvent) {
    await Promise.all(this.dispatch(event));
  }

  /**
   * Hands an event (and the chat announcement before it) to the host without waiting for it to be stored. The
   * host takes events in the order they are handed over, so a page of history can be stored in a few commits
   * instead of one per message.
   */
  private dispatch(event: InboundEvent): Promise<void>[] {
    const out: Promise<void>[] = [];
    if (event.type === "message" && !this.announced.has(event.networkChatID) && !this.rooms.has(event.networkChatID)) {
      this.announced.add(event.networkChatID);
      out.push(this.host.emit({ type: "chat", chat: this.directChat(event.networkChatID) }));
    }
    out.push(this.host.emit(event));
    return out;
  }

  /** A page of archived messages: translated in order, handed over together, stored before the page counts as read. */
  private async deliverArchived(stanzas: Element[]) {
    const pending: Promise<void>[] = [];
    for (const stanza of stanzas) {
      const translation = await translate(stanza, this.context(), true).catch(() => undefined);
      for (const event of translation?.events ?? []) pending.push(...this.dispatch(event));
    }
    // One message the host cannot store must not stop the catch-up (it would read the same page forever).
    await Promise.allSettled(pending);
  }

  private directChat(peer: string): NetworkChat {
    const user = this.roster.get(peer) ?? rosterUser(peer);
    return { networkChatID: peer, type: "single", title: user.fullName ?? peer, participants: [this.self, user] };
  }

  private roomChat(room: Room): NetworkChat {
    const others = [...room.occupants.values()].filter((o) => o.nick !== room.nick && o.jid !== this.selfBare);
    // Members are people (bare JIDs) where the room shows their JIDs; otherwise they are known by nickname only.
    const participants = others.map((o) =>
      o.jid
        ? (this.roster.get(o.jid) ?? { ...rosterUser(o.jid), fullName: o.nick })
        : { id: `${room.jid}/${o.nick}`, fullName: o.nick },
    );
    return { networkChatID: room.jid, type: "group", title: room.title, participants: [this.self, ...participants] };
  }

  private onPresence(presence: Element) {
    const room = this.rooms.get(bare(String(presence.attrs.from ?? "")));
    if (room && applyOccupantPresence(room, presence))
      this.inbound = this.inbound
        .then(() => this.host.emit({ type: "chat", chat: this.roomChat(room) }))
        .catch(() => undefined);
  }

  private async enterRoom(
    xmpp: Client,
    jid: string,
    nick: string,
    options: { title?: string; password?: string } = {},
  ) {
    const room: Room = { jid, nick, title: options.title ?? jid.split("@")[0], occupants: new Map() };
    this.rooms.set(jid, room);
    try {
      await joinRoom(xmpp, jid, nick, options);
    } catch (error) {
      this.rooms.delete(jid);
      throw error;
    }
    room.title = await roomTitle(xmpp, jid);
    if (!this.state.rooms[jid]) {
      this.state.rooms[jid] = { nick, ...(options.password ? { password: options.password } : {}) };
      await this.save();
    }
    await this.host.emit({ type: "chat", chat: this.roomChat(room) });
  }

  /**
   * Reads an archive (the account's own, or a room's) from where the last run stopped; on a first connect, its
   * newest `firstBackfill` messages. Messages go to the host oldest first, and the position is saved per page.
   */
  private async catchUp(xmpp: Client, room: string | undefined) {
    const saved = room ? this.state.archive.rooms[room] : this.state.archive.own;
    const remember = async (id: string | undefined) => {
      if (!id) return;
      if (room) this.state.archive.rooms[room] = id;
      else this.state.archive.own = id;
      await this.save();
    };
    if (saved) {
      let after = saved;
      let caughtUp = 0;
      for (;;) {
        const page = await queryArchive(xmpp, { archive: room, after, max: ARCHIVE_PAGE }, this.selfBare).catch(
          (error: Error) => {
            // The saved position is gone (archive expired or purged): start again from the newest history.
            if (/item-not-found/.test(error.message)) return undefined;
            throw error;
          },
        );
        if (!page) return this.firstBackfill(xmpp, room, remember);
        if (!room) this.archiveWorks = true;
        caughtUp += page.messages.length;
        if (page.messages.length)
          await this.status(
            "backfilling",
            `Loading history: ${caughtUp.toLocaleString("en")} messages${room ? ` in ${room}` : ""}`,
          );
        await this.deliverArchived(page.messages.map((m) => m.message));
        await remember(page.last);
        if (page.complete || !page.last || page.messages.length === 0) return;
        after = page.last;
      }
    }
    return this.firstBackfill(xmpp, room, remember);
  }

  private async firstBackfill(
    xmpp: Client,
    room: string | undefined,
    remember: (id: string | undefined) => Promise<void>,
  ) {
    const pages: Element[][] = [];
    let newest: string | undefined;
    let before = "";
    let count = 0;
    while (count < this.options.firstBackfill) {
      const page = await queryArchive(
        xmpp,
        { archive: room, before, max: Math.min(ARCHIVE_PAGE, this.options.firstBackfill - count) },
        this.selfBare,
      );
      if (!room) this.archiveWorks = true;
      newest ??= page.last;
      pages.unshift(page.messages.map((m) => m.message));
      count += page.messages.length;
      if (page.complete || !page.first || page.messages.length === 0) break;
      before = page.first;
    }
    let done = 0;
    for (const page of pages) {
      if (page.length)
        await this.status(
          "backfilling",
          `Loading history: ${done.toLocaleString("en")} of ${count.toLocaleString("en")} messages${room ? ` in ${room}` : ""}`,
        );
      await this.deliverArchived(page);
      done += page.length;
    }
    await remember(newest);
  }

  /**
   * Live messages carry the archive ID the server gave them (XEP-0359 stanza-id, `by` the archive's JID), so the
   * next catch-up starts after them. Saved at most every few seconds: a position lost in a crash only means the
   * catch-up reads a little more than it needs (delivery is idempotent).
   */
  private noteArchivePosition(stanza: Element) {
    const from = bare(String(stanza.attrs.from ?? ""));
    for (const sid of stanza.getChildren("stanza-id", NS.sid)) {
      const by = bare(String(sid.attrs.by ?? ""));
      const id = sid.attrs.id as string | undefined;
      if (!id) continue;
      // The account's server stamps every message it archives; a room's ID counts only on what the room relayed.
      if (by === this.selfBare) this.state.archive.own = id;
      else if (this.rooms.has(by) && from === by) this.state.archive.rooms[by] = id;
      else continue;
      this.positionSave ??= setTimeout(() => {
        this.positionSave = undefined;
        void this.save().catch(() => undefined);
      }, POSITION_SAVE_MS);
    }
  }

  private context(): InboundContext {
    return { selfBare: this.selfBare, mediaKey: this.state.mediaKey, rooms: this.rooms, sentHere: this.sentHere };
  }

  private nick() {
    return this.selfBare.split("@")[0];
  }

  private async status(status: AccountRecord["status"], statusText?: string) {
    if (this.account.status === status && this.account.statusText === statusText) return;
    await this.host.emit({ type: "status", status, statusText });
  }

  private async save() {
    await this.host.saveState(this.state as unknown as Record<string, unknown>);
  }

  private connection(): Client {
    if (!this.xmpp || this.stopped)
      throw new NetworkError(
        "unavailable",
        `${this.selfBare} is not connected (${this.account.statusText ?? this.account.status})`,
      );
    return this.xmpp;
  }

  private typeOf(networkChatID: string) {
    return this.rooms.has(networkChatID) ? ("groupchat" as const) : ("chat" as const);
  }

  /** Remembers what this client sent, so a room's reflection of it is not taken for a new message. */
  private sent(id: string) {
    this.sentHere.add(id);
    if (this.sentHere.size > 2000) this.sentHere.delete(this.sentHere.values().next().value!);
    return id;
  }

  capabilities(): ChatCapabilities {
    return EVERYTHING;
  }

  async send(networkChatID: string, message: OutgoingMessage): Promise<SendReceipt> {
    const xmpp = this.connection();
    let link: string | undefined;
    if (message.attachment) {
      const { info, open } = message.attachment;
      this.uploadService ??= (await findUploadService(xmpp, this.state.endpoint.domain)) ?? null;
      if (!this.uploadService)
        throw new NetworkError("unsupported", "this XMPP server has no file upload service (XEP-0363)");
      if (info.fileSize === undefined) throw new NetworkError("rejected", "the attachment's size is unknown");
      link = await uploadFile(xmpp, this.uploadService, {
        fileName: info.fileName ?? "file",
        size: info.fileSize,
        contentType: info.mimeType ?? "application/octet-stream",
        open,
      });
    }
    const id = this.sent(crypto.randomUUID());
    const body = [message.text, link].filter(Boolean).join("\n");
    await xmpp.send(
      textMessage({
        to: networkChatID,
        type: this.typeOf(networkChatID),
        id,
        body,
        link,
        replyTo: message.replyTo ? { id: message.replyTo, to: networkChatID } : undefined,
      }),
    );
    return { networkMessageID: id, timestamp: Date.now() };
  }

  async edit(networkChatID: string, networkMessageID: string, text: string) {
    await this.connection().send(
      correction(networkChatID, this.typeOf(networkChatID), this.sent(crypto.randomUUID()), networkMessageID, text),
    );
  }

  async delete(networkChatID: string, networkMessageID: string) {
    await this.connection().send(
      retraction(networkChatID, this.typeOf(networkChatID), this.sent(crypto.randomUUID()), networkMessageID),
    );
  }

  async react(networkChatID: string, networkMessageID: string, _key: string, mine: string[]) {
    await this.connection().send(
      reactionSet(networkChatID, this.typeOf(networkChatID), this.sent(crypto.randomUUID()), networkMessageID, mine),
    );
  }

  async unreact(networkChatID: string, networkMessageID: string, key: string, mine: string[]) {
    await this.react(networkChatID, networkMessageID, key, mine);
  }

  async markRead(networkChatID: string, networkMessageID: string) {
    await this.connection().send(
      displayed(networkChatID, this.typeOf(networkChatID), this.sent(crypto.randomUUID()), networkMessageID),
    );
  }

  async setTyping(networkChatID: string, state: TypingState) {
    await this.connection().send(
      chatState(networkChatID, this.typeOf(networkChatID), state === "typing" ? "composing" : "paused"),
    );
  }

  /**
   * Older history from the archive. Archives answer by position (RSM) and time, and timestamps are often whole
   * seconds, so the query ends a little after the anchor message's time and pages back until it meets the anchor;
   * what comes before it is the answer.
   */
  async fetchHistory(
    networkChatID: string,
    before: { networkMessageID: string; timestamp: number },
    limit: number,
  ): Promise<HistoryPage> {
    const xmpp = this.connection();
    const room = this.rooms.has(networkChatID) ? networkChatID : undefined;
    let older: Element[] | undefined;
    let position = "";
    for (let pages = 0; pages < HISTORY_SCAN_PAGES; pages++) {
      const page = await queryArchive(
        xmpp,
        {
          archive: room,
          with: room ? undefined : networkChatID,
          end: before.timestamp + 2000,
          before: position,
          max: Math.max(limit, 50),
        },
        this.selfBare,
      );
      const messages = page.messages.map((m) => m.message);
      if (older) older = [...messages, ...older];
      else {
        const anchor = messages.findIndex((m) => parseMessage(m).id === before.networkMessageID);
        if (anchor >= 0) older = messages.slice(0, anchor);
      }
      const done = page.complete || !page.first || messages.length === 0;
      if (older && (older.length >= limit || done))
        return {
          messages: await this.historyMessages(networkChatID, older.slice(-limit)),
          hasMore: !done || older.length > limit,
        };
      if (done) break;
      position = page.first!;
    }
    // The anchor is not where its time says (a clock apart, a message stored before it reached the server): take
    // what is older by time alone. The host drops what it already has.
    const page = await queryArchive(
      xmpp,
      { archive: room, with: room ? undefined : networkChatID, end: before.timestamp - 1000, before: "", max: limit },
      this.selfBare,
    );
    return {
      messages: await this.historyMessages(
        networkChatID,
        page.messages.map((m) => m.message),
      ),
      hasMore: !page.complete,
    };
  }

  /** Archived stanzas as plain messages of the chat (corrections, reactions and the like are left out). */
  private async historyMessages(networkChatID: string, stanzas: Element[]): Promise<InboundMessage[]> {
    const out: InboundMessage[] = [];
    for (const stanza of stanzas) {
      const parsed = parseMessage(stanza);
      if (
        !parsed.id ||
        parsed.replaces ||
        parsed.retracts ||
        parsed.reactions ||
        (parsed.body === undefined && parsed.links.length === 0)
      )
        continue;
      const where = locate(parsed, this.context());
      if (where?.chatID !== networkChatID) continue;
      out.push(await inboundMessage(parsed, { ...where, timestamp: parsed.timestamp ?? Date.now() }, this.context()));
    }
    return out;
  }

  async createChat(request: {
    type: "single" | "group";
    participantIDs: string[];
    title?: string;
  }): Promise<NetworkChat> {
    const xmpp = this.connection();
    const jids = request.participantIDs.map((id) => {
      const jid = bare(id.trim());
      if (!JID.test(jid)) throw new NetworkError("rejected", `${id} is not a JID (name@server)`);
      return jid;
    });
    if (request.type === "single") {
      if (!this.roster.has(jids[0])) await addToRoster(xmpp, jids[0]).catch(() => undefined);
      this.announced.add(jids[0]);
      return this.directChat(jids[0]);
    }
    const service = await this.mucService(xmpp);
    const slug =
      (request.title ?? "group")
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-|-$/g, "")
        .slice(0, 24) || "group";
    const jid = `${slug}-${crypto.randomUUID().slice(0, 8)}@${service}`;
    await this.enterRoom(xmpp, jid, this.nick(), {
      title: request.title || jids.map((j) => j.split("@")[0]).join(", "),
    });
    for (const invitee of jids) await inviteToRoom(xmpp, jid, invitee);
    const room = this.rooms.get(jid)!;
    for (const invitee of jids)
      if (![...room.occupants.values()].some((o) => o.jid === invitee))
        room.occupants.set(`invited:${invitee}`, { nick: invitee.split("@")[0], jid: invitee });
    return this.roomChat(room);
  }

  /** The server's group chat service (found once per client). */
  private async mucService(xmpp: Client): Promise<string> {
    this.groupService ??= await findService(xmpp, this.state.endpoint.domain, "http://jabber.org/protocol/muc");
    if (!this.groupService) throw new NetworkError("unsupported", "this XMPP server has no group chat service");
    return this.groupService;
  }

  async resolveIdentifier(user: Partial<User>): Promise<User | null> {
    const candidate = [user.id, user.username, user.email].find((s) => s && JID.test(bare(s.trim())));
    if (!candidate) return null;
    const jid = bare(candidate.trim());
    return this.roster.get(jid) ?? rosterUser(jid);
  }

  async searchContacts(query: string): Promise<User[]> {
    const q = query.trim().toLowerCase();
    return (await this.listContacts()).filter((u) => u.id.includes(q) || u.fullName?.toLowerCase().includes(q));
  }

  async listContacts(): Promise<User[]> {
    this.roster = new Map((await fetchRoster(this.connection())).map((u) => [u.id, u]));
    return [...this.roster.values()];
  }

  async downloadMedia(id: string): Promise<NetworkMedia | null> {
    const url = await mediaURL(this.state.mediaKey, id);
    if (!url) return null;
    const response = await fetchMedia(url, isPrivateHost(new URL(this.state.endpoint.service).hostname));
    const fileName = decodeURIComponent(new URL(url).pathname.split("/").pop() || "file");
    return {
      content: response.body as unknown as AsyncIterable<Uint8Array>,
      fileName,
      mimeType: response.headers.get("content-type") ?? undefined,
    };
  }
}

/** A message the server kept while the account was offline (XEP-0160): its delay is stamped by the server itself. */
function isOfflineCopy(stanza: Element, domain: string): boolean {
  const from = stanza.getChild("delay", NS.delay)?.attrs.from as string | undefined;
  return from !== undefined && bare(from) === domain;
}
