import type BeeperDesktop from "@beeper/desktop-api";
import { NetworkError, type ConnectorHost, type InboundEvent, type SendReceipt } from "../../bridges/connector.ts";
import { UpstreamInbound, type Member, type WireEvent } from "./inbound.ts";
import type { AccountRecord } from "../../store/records.ts";
import { upstreamAccounts } from "./accounts.ts";
import { chatOf, messageOf, MediaURLs, type UpstreamChat, type UpstreamMessage } from "./convert.ts";
import { refresh } from "./oauth.ts";
import { readState, type DesktopApiState, type UpstreamAuth } from "./state.ts";
import { networkErrorOf, upstreamSDK } from "./upstream.ts";

/** The part of a WebSocket the link uses: the standard one, `ws`'s, and a Worker's accepted socket all have it. */
export interface UpstreamSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close" | "error", listener: (event: unknown) => void): void;
}

/** Opens a WebSocket with request headers (the token): the runtime's part (adapters/node, adapters/workers). */
export type OpenSocket = (url: string, headers: Record<string, string>) => Promise<UpstreamSocket>;

export interface LinkOptions {
  openSocket?: OpenSocket;
  /** This inboxd's instance ID: upstream accounts that passed through it are not imported. */
  self: () => string;
  /** Messages of each chat a first load reads (older ones load when a client pages back). */
  firstBackfill: number;
  now: () => number;
  onIdle: () => void;
}

const RETRY_MS = [1000, 2000, 5000, 10_000, 30_000];
const STORE_BATCH = 200;
const STATUSES = new Set([
  "connected",
  "connecting",
  "backfilling",
  "connection_required",
  "reconnect_required",
  "attention_required",
  "disconnected",
  "disabled",
]);

/**
 * One login's connection to the upstream server, shared by the login's accounts (the upstream has one event stream
 * for all of them). It loads what a member has not loaded yet, then follows `/v1/ws`: resumed with `since` from the
 * last event handled where the upstream keeps an event log (inboxd), otherwise reloaded from the REST API after every
 * reconnect (the desktop app). Everything it hands the host runs one at a time, in the upstream's order.
 */
export class UpstreamLink {
  readonly media: MediaURLs;
  readonly sdk: BeeperDesktop;
  private readonly members = new Map<string, Member>();
  private baseURL: string;
  private auth: UpstreamAuth;
  private eventID: number | undefined;
  private socket: UpstreamSocket | undefined;
  private queue: Promise<void> = Promise.resolve();
  private stopped = false;
  private running = false;
  private renewing: Promise<void> | undefined;
  private saveTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly inbound: UpstreamInbound;
  /** How each account's own connection stands upstream (inboxd says; the app does not): shown once this link is up. */
  private readonly upstreamStatus = new Map<string, { status: string; statusText?: string }>();

  constructor(
    readonly loginID: string,
    first: DesktopApiState,
    private readonly options: LinkOptions,
  ) {
    this.baseURL = first.baseURL;
    this.auth = first.auth;
    this.eventID = first.eventID;
    this.media = new MediaURLs(loginID);
    this.sdk = upstreamSDK(
      this.baseURL,
      () => this.auth,
      () => this.renew(),
    );
    this.inbound = new UpstreamInbound({
      sdk: this.sdk,
      media: this.media,
      live: (id) => this.live(id),
      enqueue: (work) => this.enqueue(work),
    });
  }

  join(account: AccountRecord, host: ConnectorHost) {
    const state = readState(account.state);
    this.members.set(state.upstreamAccountID, { account, host, state });
    if (!this.running) {
      this.running = true;
      void this.run();
    } else if (!state.backfilled && this.socket) this.enqueue(() => this.backfill([state.upstreamAccountID]));
    else if (this.socket) this.reportConnected();
    else void host.emit({ type: "status", status: "connecting" });
  }

  /** Saves where the member's stream is first: the next connect of its account resumes from there. */
  async leave(upstreamAccountID: string) {
    const member = this.members.get(upstreamAccountID);
    this.members.delete(upstreamAccountID);
    if (member) await this.saveMember(member).catch(() => undefined);
    if (this.members.size) return;
    this.stop();
    this.options.onIdle();
  }

  stop() {
    this.stopped = true;
    this.flushState();
    this.socket?.close(1000, "disconnecting");
  }

  /** Runs a send; live copies of what it sends are held until it settles, then known as this side's own. */
  send(upstreamChatID: string, work: () => Promise<SendReceipt>): Promise<SendReceipt> {
    return this.inbound.send(upstreamChatID, work);
  }

  /** Refreshes an OAuth token once however many requests found it expired; the new tokens are saved at once. */
  renew(): Promise<void> {
    this.renewing ??= refresh(this.auth, this.options.now())
      .then((auth) => {
        this.auth = auth;
        this.flushState();
      })
      .finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async run() {
    for (let attempt = 0; !this.stopped; attempt++) {
      const started = this.options.now();
      try {
        await this.connectOnce();
      } catch (error) {
        const failure = networkErrorOf(error);
        if (failure.code === "invalid_token") {
          this.broadcast({ type: "status", status: "reconnect_required", statusText: failure.message });
          this.running = false;
          return;
        }
        if (!this.stopped) this.broadcast({ type: "status", status: "connecting", statusText: failure.message });
      }
      if (this.stopped) return;
      if (this.options.now() - started > 60_000) attempt = 0;
      await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]));
    }
  }

  /** One connection: accounts, the event stream, what needs loading; resolves when the socket closes. */
  private async connectOnce() {
    if (this.auth.expiresAt !== undefined && this.auth.expiresAt - this.options.now() < 60_000) await this.renew();
    await this.syncAccounts();
    if (this.eventID === undefined) this.eventID = await this.latestEventID();
    if (!this.options.openSocket)
      throw new NetworkError("unavailable", "this runtime cannot open WebSockets to an upstream server");
    const socket = await this.options.openSocket(`${this.baseURL.replace(/^http/, "ws")}/v1/ws`, {
      authorization: `Bearer ${this.auth.accessToken}`,
    });
    this.socket = socket;
    const closed = new Promise<void>((resolve) => {
      socket.addEventListener("close", () => {
        // A Worker's socket answers the server's close frame only when told to: without this, the server waits.
        try {
          socket.close();
        } catch {
          // already closed
        }
        resolve();
      });
      socket.addEventListener("error", () => resolve());
    });
    let answer!: (resumed: boolean) => void;
    const subscribed = new Promise<boolean>((resolve) => (answer = resolve));
    const asked = this.eventID;
    socket.addEventListener("message", (event) => {
      let message: WireEvent;
      try {
        message = JSON.parse(String(event.data));
      } catch {
        return;
      }
      if (message.type === "ready") return;
      if (message.type === "subscriptions.updated") answer(asked !== undefined && "since" in message);
      // An upstream without an event log refuses `since`: subscribe without it, and reload instead of resuming.
      else if (message.type === "error" && asked !== undefined)
        socket.send(JSON.stringify({ type: "subscriptions.set", chatIDs: ["*"] }));
      else this.enqueue(() => this.handle(message));
    });
    // Subscribed at once rather than after `ready`: that may arrive with the upgrade, before anyone listens.
    socket.send(
      JSON.stringify({ type: "subscriptions.set", chatIDs: ["*"], ...(asked !== undefined ? { since: asked } : {}) }),
    );
    this.enqueue(async () => {
      const resumed = await Promise.race([subscribed, closed.then(() => undefined)]);
      if (resumed === undefined) return;
      const behind = [...this.members.values()]
        .filter((m) => !resumed || !m.state.backfilled)
        .map((m) => m.state.upstreamAccountID);
      await this.backfill(behind);
    });
    await closed;
    if (this.socket === socket) this.socket = undefined;
    this.flushState();
    if (!this.stopped)
      this.broadcast({
        type: "status",
        status: "connecting",
        statusText: "the upstream server closed the connection; reconnecting",
      });
  }

  /** The newest event the upstream logged (inboxd's GET /v1/events): where a first stream starts. None: no log. */
  private async latestEventID(): Promise<number | undefined> {
    const page = (await this.sdk.get("/v1/events", { query: { limit: 1 } }).catch(() => undefined)) as
      | { latestEventID?: unknown }
      | undefined;
    return typeof page?.latestEventID === "number" ? page.latestEventID : undefined;
  }

  /** Loads members' chats and their newest messages (oldest first), then reports them connected. */
  private async backfill(upstreamAccountIDs: string[]) {
    for (const id of upstreamAccountIDs) {
      const member = this.members.get(id);
      if (!member) continue;
      await member.host.emit({ type: "status", status: "backfilling" });
      for await (const chat of this.sdk.chats.list({ accountIDs: [id] }) as AsyncIterable<UpstreamChat>) {
        this.inbound.noteChat(chat.id, id);
        await member.host.emit({ type: "chat", chat: chatOf(chat, this.media) });
        const recent: UpstreamMessage[] = [];
        for await (const m of this.sdk.messages.list(chat.id) as AsyncIterable<UpstreamMessage>) {
          recent.push(m);
          if (recent.length >= this.options.firstBackfill) break;
        }
        await this.store(member, chat.id, recent.reverse());
      }
      member.state.backfilled = true;
      await this.saveMember(member);
    }
    this.reportConnected();
  }

  /** Connected, as far as this link goes: each account then shows how it stands upstream (needing a login there…). */
  private reportConnected() {
    for (const [id, m] of this.members) {
      const upstream = this.upstreamStatus.get(id);
      const status =
        upstream && STATUSES.has(upstream.status) ? (upstream.status as AccountRecord["status"]) : "connected";
      const statusText = status === "connected" ? undefined : `upstream: ${upstream?.statusText ?? status}`;
      void m.host.emit({ type: "status", status, ...(statusText ? { statusText } : {}) }).catch(() => undefined);
    }
  }

  /**
   * Hands a chat's loaded messages over, oldest first, STORE_BATCH at a time: started together, so that they share
   * commits (the host keeps their order: one chat's messages queue in the order they arrive), with a turn of the
   * event loop between batches, so that requests are answered during a long load.
   */
  private async store(member: Member, chatID: string, messages: UpstreamMessage[]) {
    const kept = messages.filter((m) => !m.isDeleted);
    for (let at = 0; at < kept.length; at += STORE_BATCH) {
      await Promise.all(
        kept
          .slice(at, at + STORE_BATCH)
          .map((m) =>
            member.host.emit({ type: "message", networkChatID: chatID, message: messageOf(m, this.media, true) }),
          ),
      );
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }

  private async handle(event: WireEvent) {
    if (event.type === "account.upserted" || event.type === "account.deleted") await this.syncAccounts();
    else if (event.type === "resync.required") {
      // The upstream no longer has what was missed: reload everything, then go on from its newest event.
      await this.backfill([...this.members.keys()]);
      if (typeof event.latestEventID === "number") this.eventID = event.latestEventID;
    } else await this.inbound.handle(event);
    if (typeof event.eventID === "number") {
      this.eventID = event.eventID;
      this.scheduleSave();
    }
  }

  /**
   * The member live events go to: not one whose chats are still to be loaded (its load reads what they would say,
   * and a live message stored first would sort before the history loaded after it).
   */
  private live(upstreamAccountID: string): Member | undefined {
    const member = this.members.get(upstreamAccountID);
    return member?.state.backfilled ? member : undefined;
  }

  /** Makes the login's accounts those the upstream has now (added and removed there since). */
  private async syncAccounts() {
    const found = await upstreamAccounts(
      this.sdk,
      this.baseURL,
      this.auth,
      [...this.members.values()][0]?.state.instanceID,
      this.options.self(),
    );
    const before = JSON.stringify([...this.upstreamStatus]);
    this.upstreamStatus.clear();
    for (const [id, status] of found.statuses) this.upstreamStatus.set(id, status);
    if (this.socket && JSON.stringify([...this.upstreamStatus]) !== before) this.reportConnected();
    const have = [...this.members.keys()].sort().join("\n");
    const now = found.accounts
      .map((a) => a.remoteID)
      .sort()
      .join("\n");
    const host = [...this.members.values()][0]?.host;
    if (have !== now && host) await host.setLoginAccounts(found.accounts);
  }

  private enqueue(work: () => Promise<void>) {
    this.queue = this.queue.then(work).catch((error: unknown) => {
      // A step that fails (the upstream went away mid-load) ends this connection; the next one starts over.
      this.broadcast({ type: "status", status: "connecting", statusText: networkErrorOf(error).message });
      this.socket?.close(4000, "reconnecting");
    });
  }

  private broadcast(event: InboundEvent) {
    for (const m of this.members.values()) void m.host.emit(event).catch(() => undefined);
  }

  private scheduleSave() {
    this.saveTimer ??= setTimeout(() => this.flushState(), 1000);
  }

  private flushState() {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    for (const member of this.members.values()) void this.saveMember(member).catch(() => undefined);
  }

  private saveMember(member: Member) {
    member.state = {
      ...member.state,
      baseURL: this.baseURL,
      auth: this.auth,
      ...(this.eventID !== undefined ? { eventID: this.eventID } : {}),
    };
    return member.host.saveState(member.state as unknown as Record<string, unknown>);
  }
}
