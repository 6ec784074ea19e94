import {
  NetworkError,
  type ChatCapabilities,
  type ChatFlags,
  type ConnectorHost,
  type HistoryPage,
  type InboundEvent,
  type InboundMessage,
  type NetworkChat,
  type NetworkClient,
  type NetworkMedia,
  type OutgoingFile,
  type OutgoingMessage,
  type SendReceipt,
  type TypingState,
} from "../../bridges/connector.ts";
import type { User } from "../../schema/wire.ts";
import type { AccountRecord } from "../../store/records.ts";
import { Backoff, sleep } from "../../util/backoff.ts";
import { markdownToHTML } from "./formatting.ts";
import { MatrixError, MatrixHttp, seg } from "./http.ts";
import { downloadMedia, downloadMediaBytes, msgtypeFor, thumbnailFor, uploadBytes, uploadMedia } from "./media.ts";
import { assignRooms, emptyBridges, type LoginHosts } from "./bridged.ts";
import { findEncryptedFile, MAX_ENCRYPTED_MEDIA_BYTES, parseEncryptedMediaID } from "./encrypted-media.ts";
import { readAtMost } from "../../util/read-at-most.ts";
import { applyState, memberUser, newRoom, roomChat, type Room } from "./rooms.ts";
import { readState, USER_ID, type MatrixState } from "./state.ts";
import { HeldRelations } from "./held-relations.ts";
import { SyncProcessor, type SyncResponse } from "./sync.ts";
import { parseEvent } from "./event.ts";
import { translate, UNREADABLE } from "./timeline.ts";
import { ENCRYPTED_TYPE, MatrixCrypto, newStoreKey, type LoadCrypto } from "./crypto/machine.ts";
import type { TrustStatus } from "./crypto/trust.ts";
import type { MatrixEvent } from "./event.ts";

/** Messages of each room a first sync loads (older ones load when a client pages back). */
export const FIRST_BACKFILL = 50;
/** How long a /sync long poll waits on the server for something new. */
const SYNC_TIMEOUT_MS = 30_000;
const FIRST_SYNC_TIMEOUT_MS = 5 * 60_000;

const EVERYTHING: ChatCapabilities = {
  edits: true,
  deletes: true,
  reactions: true,
  replies: true,
  attachments: true,
  multipleReactions: true,
};
/** When a waiting room key is looked up in the key backup: at once, then after these pauses (about 16 minutes). */
const BACKUP_LOOKUPS_MS = [0, 3_000, 15_000, 60_000, 5 * 60_000, 10 * 60_000];
const UNVERIFIED =
  "This session is not verified with your other sessions: they may not share keys with it, and history from before it is not read. Reconnect the account to enter your recovery key or compare emoji.";
const NO_DEVICE =
  "this room is end-to-end encrypted, and this account's device cannot encrypt (sign in with a password, which gives inboxd a device of its own)";
/** An encrypted room where this account's device cannot encrypt (a token login: the device is another client's). */
const ENCRYPTED_READ_ONLY: ChatCapabilities = {
  ...{ edits: false, deletes: true, reactions: false, replies: false, attachments: false, multipleReactions: true },
  readOnly: NO_DEVICE,
};
/** Encrypted rooms where this device encrypts: everything (files go up encrypted, see encrypted-media.ts). */
const ENCRYPTED: ChatCapabilities = EVERYTHING;
const tooLarge = (bytes: number) =>
  `files in encrypted rooms are at most ${Math.round(bytes / 1024 / 1024)} MiB here (they are encrypted in memory)`;
/** How long a sync waits for a bridged network's account to start before giving up on it (bridged.ts). */
const NETWORK_ACCOUNT_WAIT_MS = 15_000;
/** The most encrypted events kept waiting for their keys (the oldest are given up first). */
const MAX_WAITING = 2000;

/**
 * One Matrix account: a /sync long-poll loop (reconnecting on its own with backoff), whose position (`since`) is
 * saved only after everything a batch carried is stored, so a restart resumes exactly where it stopped. Runs on
 * plain fetch: the daemon and a Durable Object drive it the same way.
 */
export class MatrixClient implements NetworkClient {
  readonly reportsStatus = true;
  readonly holdsConnection = true;
  private readonly state: MatrixState;
  private readonly http: MatrixHttp;
  private readonly rooms = new Map<string, Room>();
  private readonly sync: SyncProcessor;
  private stopped = true;
  private aborter = new AbortController();
  /** Ends the sync's current long poll early (a key came from the backup: its waiting messages are read now). */
  private wake?: () => void;
  /** Waiting room keys being looked up in the key backup, with the number of tries made (see lookUpInBackup). */
  private readonly backupLookups = new Map<string, number>();
  /** The lookups' pending timers: cleared on disconnect (a Durable Object has no unref). */
  private readonly backupTimers = new Set<ReturnType<typeof setTimeout>>();
  private loop?: Promise<void>;
  private readonly backoff = new Backoff();
  /** Transaction IDs of what this client sent: their echo in /sync is not a new message. */
  private readonly txns = new Set<string>();
  /** Our reactions: room, message and key → the reaction event (to redact it on unreact). */
  private readonly reactions = new Map<string, string>();
  private authenticatedMedia?: boolean;
  /** Edits and reactions still waiting for their (older) message; lives in the state, saved with it. */
  private readonly held: HeldRelations;
  /** End-to-end encryption, once the device's store is open (see openCrypto). */
  private crypto?: MatrixCrypto;
  /** This device against the user's cross-signing identity (crypto/trust.ts); unknown until the store opens. */
  private trust?: TrustStatus;
  private readonly loadCrypto?: LoadCrypto;
  /** The accounts of bridged networks under this login (bridged.ts); absent where the connector has none. */
  private readonly logins?: LoginHosts;
  private readonly maxEncryptedMedia: number;
  /** Rooms this run showed as invitations (see placeRooms). */
  private readonly invitations = new Set<string>();
  /** The bridged networks whose accounts were last asked for (once per run, then on every change). */
  private requestedNetworks?: string;
  private lastStatus: InboundEvent & { type: "status" } = { type: "status", status: "connecting" };

  constructor(
    private readonly account: AccountRecord,
    private readonly host: ConnectorHost,
    options: { firstBackfill: number; loadCrypto?: LoadCrypto; logins?: LoginHosts; maxEncryptedMediaBytes?: number },
  ) {
    this.loadCrypto = options.loadCrypto;
    this.maxEncryptedMedia = options.maxEncryptedMediaBytes ?? MAX_ENCRYPTED_MEDIA_BYTES;
    this.logins = options.logins;
    this.state = readState(account.state ?? {});
    const synced = (this.state.synced ??= {});
    // An account that synced before bridged networks had accounts keeps all its rooms (see bridged.ts).
    if (synced.bridges === undefined) synced.bridges = synced.since ? null : emptyBridges();
    this.logins?.onJoin(account.loginID, (host) => void host.emit(this.lastStatus).catch(() => undefined));
    this.http = new MatrixHttp(this.state.homeserver, this.state.accessToken);
    this.held = new HeldRelations(((this.state.synced ??= {}).held ??= {}));
    this.sync = new SyncProcessor({
      selfID: this.state.userID,
      self: () => this.self,
      rooms: this.rooms,
      http: this.http,
      emit: (event) => this.emit(event),
      ownEcho: (txn) => this.txns.has(txn),
      firstBackfill: options.firstBackfill,
      progress: (text) => this.status("backfilling", text),
      hold: (roomID, event) => this.held.hold(roomID, event, "newer"),
      historyStarts: (roomID, mark) =>
        void ((this.state.synced ??= {}).history = { ...this.state.synced.history, [roomID]: mark }),
      decrypt: (roomID, events) => this.decrypted(roomID, events),
    });
  }

  private get self(): User {
    return { ...this.account.user, isSelf: true };
  }

  async connect() {
    if (!this.stopped) return;
    this.stopped = false;
    this.aborter = new AbortController();
    this.loop = this.run();
  }

  async disconnect() {
    this.stopped = true;
    this.aborter.abort();
    for (const timer of this.backupTimers) clearTimeout(timer);
    this.backupTimers.clear();
    await Promise.race([this.loop, new Promise((resolve) => setTimeout(resolve, 2000))]);
    const crypto = this.crypto;
    this.crypto = undefined;
    if (crypto) {
      await crypto.checkpoint(true).catch(() => undefined);
      crypto.close();
    }
  }

  /**
   * Opens the device's encryption store, for a device inboxd made (a password login): a token's device belongs to
   * another client, whose keys inboxd does not have. Without it encrypted rooms show what they cannot read.
   */
  private async openCrypto(): Promise<void> {
    if (this.crypto || !this.loadCrypto || !this.state.ownDevice) return;
    if (!this.state.cryptoStoreKey) {
      this.state.cryptoStoreKey = newStoreKey();
      await this.host.saveState(this.state as unknown as Record<string, unknown>);
    }
    const crypto = await MatrixCrypto.open({
      lib: await this.loadCrypto(),
      userID: this.state.userID,
      deviceID: this.state.deviceID,
      storeName: this.state.cryptoStoreName ?? `inboxd-matrix-${this.account.accountID}-${this.state.deviceID}`,
      storeKey: this.state.cryptoStoreKey,
      records: this.host.records,
      http: this.http,
    });
    // A key may have been stored just before a stop, its waiting messages not read yet: those are read now.
    await crypto.markStored(Object.keys(this.state.synced?.waiting ?? {}));
    this.crypto = crypto;
    this.trust = await crypto
      .trust()
      .status()
      .catch(() => this.trust);
    await crypto
      .backup()
      .enable()
      .catch(() => undefined);
    for (const [sessionID, events] of Object.entries(this.state.synced?.waiting ?? {}))
      if (events[0]) this.lookUpInBackup(events[0][0], sessionID);
  }

  /**
   * A room key a message waits for, looked up in the user's key backup (when this device can read it): at once, and
   * again a few times, as another session backs a key up seconds to minutes after it receives it.
   */
  private lookUpInBackup(roomID: string, sessionID: string, attempt = 0): void {
    if (attempt === 0 && this.backupLookups.has(sessionID)) return;
    const delay = BACKUP_LOOKUPS_MS[attempt];
    if (delay === undefined) return void this.backupLookups.delete(sessionID);
    this.backupLookups.set(sessionID, attempt);
    const timer = setTimeout(async () => {
      this.backupTimers.delete(timer);
      const crypto = this.crypto;
      if (this.stopped || !crypto || !this.state.synced?.waiting?.[sessionID])
        return void this.backupLookups.delete(sessionID);
      const found = await crypto
        .backup()
        .fetch(roomID, sessionID)
        .catch(() => false);
      if (!found) return this.lookUpInBackup(roomID, sessionID, attempt + 1);
      this.backupLookups.delete(sessionID);
      this.wake?.();
    }, delay);
    this.backupTimers.add(timer);
    (timer as { unref?: () => void }).unref?.();
  }

  /** The open crypto of this device, for a reconnect's verification steps (verify.ts) while the account runs. */
  liveCrypto(deviceID: string): MatrixCrypto | undefined {
    return !this.stopped && this.state.deviceID === deviceID ? this.crypto : undefined;
  }

  /**
   * Where the device stands after a sync: verified from another session meanwhile, or no longer (the user reset
   * their identity). Asked of the machine only when the user's own devices or keys changed.
   */
  private async readTrust(response: SyncResponse): Promise<void> {
    const changed = response.device_lists?.changed;
    if (!this.crypto || !Array.isArray(changed) || !changed.includes(this.state.userID)) return;
    await this.crypto.sendOutgoing(); // the key query for the change
    this.trust = await this.crypto.trust().knownStatus();
  }

  /** Connected, or attention_required while the user's identity does not sign this device. */
  private connected(): Promise<void> {
    return this.trust === "unverified" ? this.status("attention_required", UNVERIFIED) : this.status("connected");
  }

  /** A room's encrypted events in the clear where they can be; the others marked, and remembered if worth waiting. */
  private async decrypted(roomID: string, events: MatrixEvent[]): Promise<MatrixEvent[]> {
    const crypto = this.crypto;
    if (!crypto) {
      // A device that encrypts, stopped (or not open yet): its events wait for it rather than being stored unread.
      if (this.loadCrypto && this.state.ownDevice && events.some((e) => e.type === ENCRYPTED_TYPE))
        throw new NetworkError("unavailable", "end-to-end encryption is not running");
      return events;
    }
    let waits = false;
    const out = await Promise.all(
      events.map(async (event) => {
        if (event.type !== ENCRYPTED_TYPE) return event;
        const result = await crypto.decrypt(roomID, event);
        if ("type" in result) return result;
        if (result.waiting && result.sessionID) waits = this.wait(result.sessionID, roomID, event.event_id) || waits;
        return { ...event, unsigned: { ...event.unsigned, [UNREADABLE]: result.waiting ? "waiting" : "failed" } };
      }),
    );
    // What waits is saved before its notice is stored: after a crash between the two, a replayed batch that now
    // brings the key would find the notice's ID stored and drop the message, and nothing would revise it.
    if (waits) await this.host.saveState(this.state as unknown as Record<string, unknown>);
    return out;
  }

  /** Puts an event on the waiting list; true if it was not on it. */
  private wait(sessionID: string, roomID: string, eventID: string): boolean {
    const waiting = ((this.state.synced ??= {}).waiting ??= {});
    const list = (waiting[sessionID] ??= []);
    if (list.some(([, id]) => id === eventID)) return false;
    list.push([roomID, eventID]);
    this.lookUpInBackup(roomID, sessionID);
    let total = Object.values(waiting).reduce((n, l) => n + l.length, 0);
    for (const session of Object.keys(waiting)) {
      if (total <= MAX_WAITING) break;
      total -= waiting[session].length;
      delete waiting[session];
    }
    return true;
  }

  /**
   * Events that waited for room keys which have now arrived: read again and handed over — a message as a revision
   * of the notice stored for it, an edit or reaction as itself.
   */
  private async readArrived(): Promise<void> {
    const waiting = this.state.synced?.waiting;
    const crypto = this.crypto;
    if (!crypto || !waiting) return;
    const sessions = [...crypto.takeArrivedKeys()];
    for (const [at, sessionID] of sessions.entries()) {
      const events = waiting[sessionID];
      if (!events) continue;
      delete waiting[sessionID]; // put back below (by wait()) where an event is not read now and may still be
      const putBack = (from: number) => {
        for (const [roomID, eventID] of events.slice(from)) this.wait(sessionID, roomID, eventID);
        crypto.markArrived(sessionID); // tried again after the next sync
      };
      for (const [index, [roomID, eventID]] of events.entries()) {
        const room = this.rooms.get(roomID);
        if (!room) continue; // a room left meanwhile: nothing to fill in
        let raw: unknown;
        try {
          raw = await this.http.request("GET", `/_matrix/client/v3/rooms/${seg(roomID)}/event/${seg(eventID)}`);
        } catch (error) {
          if (error instanceof MatrixError && error.status === 404) continue; // gone (redacted and purged)
          putBack(index);
          break;
        }
        const event = parseEvent(raw, roomID);
        // The server's answer is for the event asked for, or it is not trusted with it.
        if (!event || event.event_id !== eventID) continue;
        try {
          const [clear] = await this.decrypted(roomID, [event]);
          if (clear.type === ENCRYPTED_TYPE) continue; // still unreadable (and waiting again if worth it)
          for (const e of translate(clear, { room, selfID: this.state.userID }))
            await this.emit(e.type === "message" ? { ...e, type: "revision" } : e);
        } catch (error) {
          // The batch fails (crypto stopped, the account not running): everything not read yet is tried again.
          putBack(index);
          for (const other of sessions.slice(at + 1)) crypto.markArrived(other);
          throw error;
        }
      }
    }
  }

  async logout() {
    await this.http.request("POST", "/_matrix/client/v3/logout", { body: {}, timeoutMs: 10_000, patienceMs: 0 });
  }

  /** Sync, store, save the position; again until disconnect() or the session ends. */
  private async run() {
    let fullState = true; // the first sync of a run rebuilds every room's state (nothing of it is kept between runs)
    let woken = false;
    while (!this.stopped) {
      const since = this.state.synced?.since;
      if (woken) {
        // What the key backup brought (lookUpInBackup) is read before the next long poll, not after it.
        woken = false;
        await this.readArrived().catch(() => undefined);
      }
      try {
        if (fullState) await this.status("backfilling", since ? "Catching up" : "Loading chats and history");
        await this.openCrypto();
        const poll = new AbortController();
        this.wake = () => {
          woken = true;
          poll.abort();
        };
        const response = await this.http.request<SyncResponse>("GET", "/_matrix/client/v3/sync", {
          query: {
            since,
            timeout: fullState ? 0 : SYNC_TIMEOUT_MS,
            full_state: fullState ? "true" : undefined,
            filter: JSON.stringify(this.sync.filter()),
            set_presence: "offline",
          },
          signal: AbortSignal.any([this.aborter.signal, poll.signal]),
          // A first sync of a large account is computed whole before the server answers: give it minutes.
          timeoutMs: since ? SYNC_TIMEOUT_MS + 30_000 : FIRST_SYNC_TIMEOUT_MS,
          maxBytes: 64 * 1024 * 1024,
        });
        if (this.stopped) return;
        if (typeof response.next_batch !== "string")
          throw new NetworkError("unavailable", "the homeserver's /sync answer has no next_batch", "bad_answer");
        // Keys first: a room key that came with this batch decrypts the batch's own messages.
        await this.crypto?.receiveSync(response);
        await this.readTrust(response);
        await this.placeRooms(response, since);
        await this.sync.apply(response, since, (text) => this.status("backfilling", text));
        await this.readArrived();
        // A message that could not be read asks the user's other sessions for its key (matrix-sdk-crypto queues the
        // request while decrypting): sent now, not after the next long poll.
        await this.crypto?.sendOutgoing().catch(() => undefined);
        await this.crypto
          ?.backup()
          .upload()
          .catch(() => undefined); // the keys this batch brought
        // A run stopped meanwhile (disconnect, a reconnect's new client) saves nothing over what came after it.
        if (this.stopped) return;
        // What the crypto store changed commits with the position after it (a replay would not find it again).
        await this.crypto?.checkpoint();
        this.state.synced = { ...this.state.synced, since: response.next_batch };
        await this.host.saveState(this.state as unknown as Record<string, unknown>);
        await this.connected(); // also after a long gap's progress reports

        fullState = false;
        this.backoff.reset();
      } catch (error) {
        if (this.stopped) return;
        // Woken (the long poll cut short on purpose), not failed: see the loop's top. Any other error is handled.
        if (woken && error instanceof NetworkError && error.code === "cancelled") continue;
        if (
          error instanceof MatrixError &&
          (error.errcode === "M_UNKNOWN_TOKEN" || error.errcode === "M_MISSING_TOKEN" || error.status === 401)
        ) {
          const why = error.softLogout
            ? "The homeserver asks to sign in again (soft logout)."
            : "The homeserver ended this session (signed out elsewhere, or the token was revoked). Sign in again.";
          await this.status("reconnect_required", why);
          this.stopped = true;
          return;
        }
        const delay = this.backoff.next();
        await this.status(
          "connecting",
          `${error instanceof Error ? error.message : "Cannot sync"}; retrying in ${Math.ceil(delay / 1000)} s`,
        );
        await sleep(delay, this.aborter.signal);
        fullState = true;
      }
    }
  }

  private async status(status: AccountRecord["status"], statusText?: string) {
    if (this.lastStatus.status === status && this.lastStatus.statusText === statusText) return;
    this.lastStatus = { type: "status", status, statusText };
    // The bridged networks' accounts stand as the login does: their rooms come through this sync.
    for (const host of this.logins?.members(this.account.loginID) ?? [])
      await host.emit(this.lastStatus).catch(() => undefined);
    if (this.account.status === status && this.account.statusText === statusText) return;
    await this.host.emit(this.lastStatus);
  }

  /**
   * Hands an event to the account that shows its room: a bridged network's (bridged.ts) or this one. A room whose
   * account is not running yet fails the batch, which is then read again.
   */
  private emit(event: InboundEvent): Promise<void> {
    const roomID =
      event.type === "chat" ? event.chat.networkChatID : "networkChatID" in event ? event.networkChatID : undefined;
    const bridges = this.state.synced?.bridges;
    const network = roomID && bridges ? bridges.rooms[roomID] : undefined;
    if (!network || !this.logins) return this.host.emit(event);
    const host = this.logins.host(this.account.loginID, network);
    if (!host)
      return Promise.reject(
        new NetworkError("unavailable", `the ${bridges!.networks[network]?.name ?? network} account is not running`),
      );
    if (event.type === "chat" && bridges!.management.includes(event.chat.networkChatID)) {
      // A bridge bot's room is kept out of the inbox: archived when first shown (a person may bring it back).
      bridges!.management = bridges!.management.filter((id) => id !== event.chat.networkChatID);
      return host.emit({ ...event, chat: { ...event.chat, isArchived: true } });
    }
    return host.emit(event);
  }

  /**
   * Before a batch is applied: which account shows each room it brings for the first time, and the accounts of the
   * bridged networks it needs, added to the login (and waited for) where they are new.
   */
  private async placeRooms(response: SyncResponse, since: string | undefined): Promise<void> {
    const bridges = this.state.synced?.bridges;
    if (!bridges || !this.logins) return;
    const before = new Set(Object.keys(bridges.rooms));
    // Invitations shown in this run, also ones accepted since by sending (which marks the room joined at once).
    for (const roomID of Object.keys(response.rooms?.invite ?? {})) this.invitations.add(roomID);
    const invitedBefore = (roomID: string) => this.invitations.has(roomID);
    const touched = assignRooms(bridges, (response.rooms?.join ?? {}) as Record<string, never>, {
      selfID: this.state.userID,
      firstSync: !since,
      known: (roomID) => (this.invitations.has(roomID) ? "invite" : this.rooms.get(roomID)?.membership),
    });
    const added = Object.keys(bridges.rooms).filter((id) => !before.has(id));
    const wanted = [...new Set(Object.values(bridges.rooms))].sort();
    if (wanted.join(",") !== this.requestedNetworks) {
      const held = new Set(await this.host.setLoginAccounts(this.loginAccounts(wanted)));
      for (const network of wanted) {
        if (held.has(`${this.state.userID}#${network}`)) continue;
        // Not added (the bridge's account limit): its rooms stay with this account, now and later.
        bridges.refused.push(network);
        for (const id of Object.keys(bridges.rooms)) if (bridges.rooms[id] === network) delete bridges.rooms[id];
        bridges.management = bridges.management.filter((id) => bridges.rooms[id]);
        touched.delete(network);
      }
      this.requestedNetworks = [...new Set(Object.values(bridges.rooms))].sort().join(",");
    }
    // Waited for together; one that does not start in time fails the batch, which is read again.
    const late = await Promise.all(
      [...touched].map(async (network) =>
        (await this.logins!.wait(this.account.loginID, network, NETWORK_ACCOUNT_WAIT_MS)) ? undefined : network,
      ),
    );
    const network = late.find((n) => n !== undefined);
    if (network)
      throw new NetworkError("unavailable", `the ${bridges.networks[network]?.name ?? network} account did not start`);
    // An invitation shown here before the room was joined: that chat is done with, the room's account shows it now.
    for (const roomID of added)
      if (bridges.rooms[roomID] && invitedBefore(roomID)) {
        const room = this.rooms.get(roomID)!;
        await this.host.emit({
          type: "chat",
          chat: { ...roomChat(room, this.state.userID, this.self, false), isArchived: true },
        });
      }
  }

  /** The login's accounts: this one, and one per bridged network that has rooms. */
  private loginAccounts(networks: string[]) {
    const bridges = this.state.synced!.bridges!;
    const user = this.account.user;
    return [
      {
        remoteID: this.state.userID,
        user,
        networkName: this.account.networkName,
        state: this.state as unknown as Record<string, unknown>,
      },
      ...networks.map((id) => ({
        remoteID: `${this.state.userID}#${id}`,
        user,
        networkName: bridges.networks[id]?.name ?? id,
        state: { bridgedNetwork: id },
        origin: {
          bridge: { id: `matrix-${id}`, provider: "self-hosted" as const, type: id },
          accountID: this.account.accountID,
          servers: [],
          ...(bridges.networks[id]?.avatarURL ? { iconURL: bridges.networks[id].avatarURL } : {}),
        },
      })),
    ];
  }

  private room(networkChatID: string): Room {
    const room = this.rooms.get(networkChatID);
    if (!room || room.membership === "leave")
      throw new NetworkError("not_found", `${this.state.userID} is not in room ${networkChatID}`);
    return room;
  }

  /** An invited room is joined by the first thing sent to it (accepting the invitation, as answering does). */
  private async writable(networkChatID: string): Promise<Room> {
    const room = this.room(networkChatID);
    if (room.encrypted && !this.crypto)
      throw new NetworkError("unsupported", ENCRYPTED_READ_ONLY.readOnly!, "encrypted_room");
    if (room.membership === "invite") {
      await this.http.request("POST", `/_matrix/client/v3/join/${seg(networkChatID)}`, { body: {} });
      room.membership = "join";
      // An invitation showed only its inviter as a member: an encrypted message sent now needs every member's
      // devices to have its key, so the members are read before it is encrypted (the sync brings them later).
      if (room.encrypted) {
        const answer = await this.http.request<{ chunk?: unknown[] }>(
          "GET",
          `/_matrix/client/v3/rooms/${seg(networkChatID)}/members`,
          { maxBytes: 16 * 1024 * 1024 },
        );
        for (const raw of answer.chunk ?? []) {
          const event = parseEvent(raw, networkChatID);
          if (event?.type === "m.room.member") applyState(room, event, this.state.userID);
        }
      }
    }
    return room;
  }

  /**
   * Sends one room event. The transaction ID makes a repeated PUT (after a lost answer) the same event, so a send
   * is retried on connection failures without ever posting twice.
   */
  private async sendEvent(roomID: string, type: string, content: Record<string, unknown>): Promise<string> {
    const txn = `inboxd.${crypto.randomUUID()}`;
    // Encrypted once, before the first attempt: a repeated PUT carries the same ciphertext under the same txn.
    const room = this.rooms.get(roomID);
    if (room?.encrypted && this.crypto) {
      content = await this.crypto.encrypt(room, type, content);
      type = ENCRYPTED_TYPE;
    }
    this.txns.add(txn);
    if (this.txns.size > 5000) this.txns.delete(this.txns.values().next().value!);
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await this.http.request<{ event_id?: unknown }>(
          "PUT",
          `/_matrix/client/v3/rooms/${seg(roomID)}/send/${seg(type)}/${seg(txn)}`,
          { body: content },
        );
        if (typeof answer.event_id !== "string")
          throw new NetworkError("unavailable", "the homeserver did not say the event's ID");
        return answer.event_id;
      } catch (error) {
        if (attempt >= 3 || !(error instanceof NetworkError) || error.kind !== "unavailable") throw error;
        await sleep(500 * attempt, this.aborter.signal);
      }
    }
  }

  capabilities(chat: NetworkChat): ChatCapabilities {
    if (!this.rooms.get(chat.networkChatID)?.encrypted) return EVERYTHING;
    return this.crypto ? ENCRYPTED : ENCRYPTED_READ_ONLY;
  }

  async send(networkChatID: string, message: OutgoingMessage): Promise<SendReceipt> {
    const room = await this.writable(networkChatID);
    let content: Record<string, unknown>;
    if (message.attachment) {
      const { info } = message.attachment;
      const fileName = info.fileName ?? "file";
      this.authenticatedMedia ??= await this.offersAuthenticatedMedia();
      // In an encrypted room the file goes up encrypted, named by `file` (with its key) instead of `url`; the server
      // cannot make a thumbnail of ciphertext, so it has none.
      const where: { file: Record<string, unknown> } | { url: string } = room.encrypted
        ? { file: await this.uploadEncrypted(message.attachment) }
        : { url: await uploadMedia(this.http, message.attachment) };
      const details = {
        ...(info.mimeType ? { mimetype: info.mimeType } : {}),
        ...(info.fileSize !== undefined ? { size: info.fileSize } : {}),
        ...(info.size ? { w: info.size.width, h: info.size.height } : {}),
        ...(info.duration !== undefined ? { duration: Math.round(info.duration * 1000) } : {}),
        ...("url" in where ? await thumbnailFor(this.http, where.url, info, this.authenticatedMedia) : {}),
      };
      // A caption goes in `body` with the name in `filename` (spec 1.10); without one, `body` is the name.
      content = {
        msgtype: msgtypeFor(info.mimeType),
        body: message.text ?? fileName,
        filename: fileName,
        ...where,
        info: details,
      };
      if (message.text) Object.assign(content, formatted(message.text));
    } else content = { msgtype: "m.text", body: message.text ?? "", ...formatted(message.text ?? "") };
    if (message.replyTo) content["m.relates_to"] = { "m.in_reply_to": { event_id: message.replyTo } };
    const eventID = await this.sendEvent(networkChatID, "m.room.message", content);
    return { networkMessageID: eventID, timestamp: Date.now() };
  }

  async edit(networkChatID: string, networkMessageID: string, text: string) {
    await this.writable(networkChatID);
    const newContent = { msgtype: "m.text", body: text, ...formatted(text) };
    await this.sendEvent(networkChatID, "m.room.message", {
      msgtype: "m.text",
      body: `* ${text}`,
      "m.new_content": newContent,
      "m.relates_to": { rel_type: "m.replace", event_id: networkMessageID },
    });
  }

  async delete(networkChatID: string, networkMessageID: string) {
    this.room(networkChatID);
    const txn = `inboxd.${crypto.randomUUID()}`;
    await this.http.request(
      "PUT",
      `/_matrix/client/v3/rooms/${seg(networkChatID)}/redact/${seg(networkMessageID)}/${seg(txn)}`,
      { body: {} },
    );
  }

  async react(networkChatID: string, networkMessageID: string, key: string) {
    await this.writable(networkChatID);
    const eventID = await this.sendEvent(networkChatID, "m.reaction", {
      "m.relates_to": { rel_type: "m.annotation", event_id: networkMessageID, key },
    });
    this.reactions.set(reactionKey(networkChatID, networkMessageID, key), eventID);
  }

  async unreact(networkChatID: string, networkMessageID: string, key: string) {
    this.room(networkChatID);
    const eventID =
      this.reactions.get(reactionKey(networkChatID, networkMessageID, key)) ??
      (await this.findOwnReaction(networkChatID, networkMessageID, key));
    if (!eventID) return; // already gone on the server
    await this.delete(networkChatID, eventID);
    this.reactions.delete(reactionKey(networkChatID, networkMessageID, key));
  }

  /** Our reaction with this key on the message, from the server's relations of it (for one sent before a restart). */
  private async findOwnReaction(roomID: string, eventID: string, key: string): Promise<string | undefined> {
    // In an encrypted room a reaction is an m.room.encrypted event: every annotation is asked for, ours read.
    const encrypted = this.rooms.get(roomID)?.encrypted === true;
    const path = `/_matrix/client/v1/rooms/${seg(roomID)}/relations/${seg(eventID)}/m.annotation${encrypted ? "" : "/m.reaction"}`;
    let from: string | undefined;
    for (let page = 0; page < 20; page++) {
      const answer = await this.http.request<{ chunk?: unknown[]; next_batch?: unknown }>("GET", path, {
        query: { from, limit: 100 },
      });
      for (const raw of answer.chunk ?? []) {
        let event = parseEvent(raw, roomID);
        if (event?.sender !== this.state.userID) continue;
        if (event.type === ENCRYPTED_TYPE && this.crypto) {
          const clear = await this.crypto.decrypt(roomID, event);
          event = "type" in clear ? clear : undefined;
        }
        const rel = event?.content["m.relates_to"] as { key?: unknown } | undefined;
        if (event?.type === "m.reaction" && rel?.key === key) return event.event_id;
      }
      if (typeof answer.next_batch !== "string") return undefined;
      from = answer.next_batch;
    }
    return undefined;
  }

  async markRead(networkChatID: string, networkMessageID: string) {
    this.room(networkChatID);
    await this.http.request("POST", `/_matrix/client/v3/rooms/${seg(networkChatID)}/read_markers`, {
      body: { "m.fully_read": networkMessageID, "m.read": networkMessageID },
    });
  }

  async setTyping(networkChatID: string, state: TypingState) {
    this.room(networkChatID);
    await this.http.request("PUT", `/_matrix/client/v3/rooms/${seg(networkChatID)}/typing/${seg(this.state.userID)}`, {
      body: state === "typing" ? { typing: true, timeout: 30_000 } : { typing: false },
    });
  }

  /**
   * Pin and low priority are the m.favourite and m.lowpriority tags; mute is a push rule that does nothing
   * (Element's). Archiving an invitation declines it; archiving a joined room is this device's business only.
   */
  async setChatFlags(networkChatID: string, flags: ChatFlags) {
    const room = this.room(networkChatID);
    if (flags.isArchived && room.membership === "invite") {
      await this.http.request("POST", `/_matrix/client/v3/rooms/${seg(networkChatID)}/leave`, { body: {} });
      room.membership = "leave";
    }
    const tag = async (name: string, on: boolean) => {
      const path = `/_matrix/client/v3/user/${seg(this.state.userID)}/rooms/${seg(networkChatID)}/tags/${seg(name)}`;
      await this.http.request(on ? "PUT" : "DELETE", path, on ? { body: {} } : {});
    };
    if (flags.isPinned !== undefined) await tag("m.favourite", flags.isPinned);
    if (flags.isLowPriority !== undefined) await tag("m.lowpriority", flags.isLowPriority);
    if (flags.isMuted !== undefined) {
      const path = `/_matrix/client/v3/pushrules/global/override/${seg(networkChatID)}`;
      if (flags.isMuted)
        await this.http.request("PUT", path, {
          body: { conditions: [{ kind: "event_match", key: "room_id", pattern: networkChatID }], actions: [] },
        });
      else
        await this.http.request("DELETE", path).catch((error) => {
          if (!(error instanceof NetworkError && error.kind === "not_found")) throw error;
        });
      // A mute made by older clients (a room rule that does not notify) goes too.
      if (!flags.isMuted)
        await this.http
          .request("DELETE", `/_matrix/client/v3/pushrules/global/room/${seg(networkChatID)}`)
          .catch(() => undefined);
    }
  }

  /**
   * Older messages: /messages backwards from where the last page (or the first sync) ended, kept per room in the
   * state (a message no mark names is found with /context). Edits and reactions are events of their own, newer
   * than what they change, so paging backwards meets them first, and a first sync hands over the newest of them
   * while their messages are still on the server: both are held (held-relations.ts, in the state) until the
   * message they belong to arrives here, then handed over with it — its newest edit by its own sender as its
   * text, its reactions as `reactions`.
   */
  async fetchHistory(
    networkChatID: string,
    before: { networkMessageID: string; timestamp: number },
    limit: number,
  ): Promise<HistoryPage> {
    const room = this.room(networkChatID);
    const mark = this.state.synced?.history?.[networkChatID];
    const start =
      mark?.oldest === before.networkMessageID
        ? mark.token
        : await this.tokenBefore(networkChatID, before.networkMessageID);
    if (!start) return { messages: [], hasMore: false };
    let from: string = start;
    const messages: InboundMessage[] = [];
    let hasMore = true;
    // Whole pages, every message of them handed over, so that the token after the last page is where the next
    // call goes on from.
    for (let pages = 0; pages < 10 && messages.length < limit; pages++) {
      const page: { chunk?: unknown[]; end?: unknown } = await this.http.request(
        "GET",
        `/_matrix/client/v3/rooms/${seg(networkChatID)}/messages`,
        {
          query: {
            from,
            dir: "b",
            limit: Math.min(1000, Math.max(limit, 50)),
            filter: JSON.stringify(this.sync.filter().room.timeline),
          },
        },
      );
      const chunk = Array.isArray(page.chunk) ? page.chunk : [];
      const events = await this.decrypted(
        networkChatID,
        chunk.map((raw) => parseEvent(raw, networkChatID)).filter((e): e is MatrixEvent => e !== undefined),
      );
      for (const event of events) {
        for (const e of translate(event, { room, selfID: this.state.userID })) {
          if (e.type === "message") messages.push(this.held.attach(networkChatID, e.message));
          else this.held.hold(networkChatID, e, "older");
        }
      }
      if (typeof page.end !== "string" || chunk.length === 0 || page.end === from) {
        hasMore = false;
        break;
      }
      from = page.end;
    }
    const oldest = messages.at(-1);
    const synced = (this.state.synced ??= {});
    if (oldest && hasMore)
      synced.history = { ...synced.history, [networkChatID]: { oldest: oldest.networkMessageID, token: from } };
    else if (!hasMore) {
      delete synced.history?.[networkChatID];
      this.held.drop(networkChatID);
    }
    await this.host.saveState(this.state as unknown as Record<string, unknown>);
    return { messages: messages.reverse(), hasMore };
  }

  /** The pagination token just before a message (for history below a message no mark names: /context). */
  private async tokenBefore(roomID: string, eventID: string): Promise<string | undefined> {
    const context = await this.http.request<{ start?: unknown }>(
      "GET",
      `/_matrix/client/v3/rooms/${seg(roomID)}/context/${seg(eventID)}`,
      { query: { limit: 0 } },
    );
    return typeof context.start === "string" ? context.start : undefined;
  }

  async createChat(request: {
    type: "single" | "group";
    participantIDs: string[];
    title?: string;
  }): Promise<NetworkChat> {
    const invite = request.participantIDs.map((id) => {
      const userID = id.trim();
      if (!USER_ID.test(userID))
        throw new NetworkError("rejected", `${id} is not a Matrix user ID (@name:server)`, "invalid_user");
      return userID;
    });
    const direct = request.type === "single";
    const body = direct
      ? { is_direct: true, invite, preset: "trusted_private_chat" }
      : { invite, preset: "private_chat", ...(request.title ? { name: request.title } : {}) };
    const answer = await this.http.request<{ room_id?: unknown }>("POST", "/_matrix/client/v3/createRoom", { body });
    if (typeof answer.room_id !== "string")
      throw new NetworkError("unavailable", "the homeserver did not say the new room's ID");
    const room = this.rooms.get(answer.room_id) ?? newRoom(answer.room_id, "join");
    if (!this.rooms.has(room.id)) this.rooms.set(room.id, room);
    if (request.title && !direct) room.name = request.title;
    for (const userID of invite) if (!room.members.has(userID)) room.members.set(userID, { membership: "invite" });
    room.members.set(this.state.userID, { membership: "join", displayName: this.account.user.fullName });
    if (direct) await this.sync.addDirect(invite[0], room.id);
    return roomChat(room, this.state.userID, this.self, direct);
  }

  /** A user ID is looked up by its profile; anything else through the user directory. */
  async resolveIdentifier(user: Partial<User>): Promise<User | null> {
    const candidate = [user.id, user.username].find((s) => s && USER_ID.test(s.trim()))?.trim();
    if (candidate) {
      const profile = await this.http
        .request<{ displayname?: unknown; avatar_url?: unknown }>("GET", `/_matrix/client/v3/profile/${seg(candidate)}`)
        .catch((error) => {
          if (error instanceof NetworkError && error.kind === "not_found") return undefined;
          throw error;
        });
      if (!profile) return null;
      return {
        id: candidate,
        username: candidate,
        ...(typeof profile.displayname === "string" ? { fullName: profile.displayname } : {}),
        ...(typeof profile.avatar_url === "string" ? { imgURL: profile.avatar_url } : {}),
      };
    }
    const term = user.username ?? user.fullName ?? user.email;
    if (!term) return null;
    return (await this.searchContacts(term))[0] ?? null;
  }

  async searchContacts(query: string): Promise<User[]> {
    const answer = await this.http.request<{ results?: unknown[] }>(
      "POST",
      "/_matrix/client/v3/user_directory/search",
      { body: { search_term: query.slice(0, 200), limit: 50 } },
    );
    const out: User[] = [];
    for (const raw of answer.results ?? []) {
      const r = raw as { user_id?: unknown; display_name?: unknown; avatar_url?: unknown };
      if (typeof r.user_id !== "string" || !USER_ID.test(r.user_id) || r.user_id === this.state.userID) continue;
      out.push({
        id: r.user_id,
        username: r.user_id,
        ...(typeof r.display_name === "string" ? { fullName: r.display_name } : {}),
        ...(typeof r.avatar_url === "string" ? { imgURL: r.avatar_url } : {}),
      });
    }
    return out;
  }

  /** The people of the account's rooms: members of its DMs and groups. */
  async listContacts(): Promise<User[]> {
    const seen = new Map<string, User>();
    for (const room of this.rooms.values()) {
      if (room.membership !== "join") continue;
      for (const [userID, member] of room.members)
        if (userID !== this.state.userID && member.membership === "join" && !seen.has(userID))
          seen.set(userID, memberUser(room, userID, this.state.userID));
    }
    return [...seen.values()];
  }

  async downloadMedia(url: string): Promise<NetworkMedia | null> {
    this.authenticatedMedia ??= await this.offersAuthenticatedMedia();
    const encrypted = parseEncryptedMediaID(url);
    if (encrypted) return this.downloadEncrypted(encrypted);
    return downloadMedia(this.http, url, this.authenticatedMedia);
  }

  /** Encrypts a file and uploads the ciphertext; resolves with the event's `file` object (its URL and key). */
  private async uploadEncrypted(attachment: OutgoingFile): Promise<Record<string, unknown>> {
    if (!this.crypto) throw new NetworkError("unsupported", NO_DEVICE, "encrypted_room");
    const bytes = await readAtMost(attachment.open(), this.maxEncryptedMedia);
    if (!bytes) throw new NetworkError("rejected", tooLarge(this.maxEncryptedMedia), "file_too_large");
    const { ciphertext, file } = this.crypto.encryptFile(bytes);
    const url = await uploadBytes(this.http, ciphertext, "encrypted", "application/octet-stream");
    return { ...file, url };
  }

  /**
   * A file of an encrypted room: its key is read again from the event that sent it (decrypted with the room key),
   * then the ciphertext is downloaded, checked against its hash and opened.
   */
  private async downloadEncrypted(ref: { mxc: string; roomID: string; eventID: string }): Promise<NetworkMedia | null> {
    if (!this.rooms.get(ref.roomID)) return null; // not a room of this account: another account may serve it
    if (!this.crypto) throw new NetworkError("unavailable", NO_DEVICE, "encrypted_room");
    const raw = await this.http.request<MatrixEvent>(
      "GET",
      `/_matrix/client/v3/rooms/${seg(ref.roomID)}/event/${seg(ref.eventID)}`,
    );
    const event = raw.type === ENCRYPTED_TYPE ? await this.crypto.decrypt(ref.roomID, raw) : raw;
    if (!("type" in event))
      throw new NetworkError("unavailable", "the key of the message that sent this file has not arrived", "waiting");
    const file = findEncryptedFile(event.content, ref.mxc);
    if (!file) throw new NetworkError("not_found", "the message has no such encrypted file");
    const ciphertext = await downloadMediaBytes(
      this.http,
      ref.mxc,
      this.authenticatedMedia ?? false,
      this.maxEncryptedMedia,
    );
    if (ciphertext === null) return null;
    if (!ciphertext) throw new NetworkError("rejected", tooLarge(this.maxEncryptedMedia), "file_too_large");
    let bytes: Uint8Array;
    try {
      bytes = this.crypto.decryptFile(ciphertext, file as unknown as Record<string, unknown>);
    } catch {
      throw new NetworkError("rejected", "the encrypted file does not match its key or hash", "bad_file");
    }
    const c = event.content;
    const info = c.info && typeof c.info === "object" ? (c.info as Record<string, unknown>) : {};
    const isThumbnail = (c.file as { url?: unknown } | undefined)?.url !== ref.mxc;
    const mimeType = isThumbnail
      ? ((info.thumbnail_info as { mimetype?: unknown } | undefined)?.mimetype as string | undefined)
      : (info.mimetype as string | undefined);
    const fileName = typeof c.filename === "string" ? c.filename : typeof c.body === "string" ? c.body : undefined;
    return {
      content: (async function* () {
        yield bytes;
      })(),
      ...(fileName && !isThumbnail ? { fileName: fileName.slice(0, 255) } : {}),
      ...(typeof mimeType === "string" ? { mimeType } : {}),
    };
  }

  private async offersAuthenticatedMedia(): Promise<boolean> {
    const versions = await this.http
      .request<{ versions?: unknown; unstable_features?: Record<string, unknown> }>("GET", "/_matrix/client/versions")
      .catch(() => ({}) as { versions?: unknown; unstable_features?: Record<string, unknown> });
    const list = Array.isArray(versions.versions)
      ? versions.versions.filter((v): v is string => typeof v === "string")
      : [];
    return (
      list.some((v) => /^v1\.(1[1-9]|[2-9]\d)$/.test(v)) ||
      versions.unstable_features?.["org.matrix.msc3916.stable"] === true
    );
  }
}

function formatted(text: string): Record<string, string> {
  const html = markdownToHTML(text);
  return html ? { format: "org.matrix.custom.html", formatted_body: html } : {};
}

const reactionKey = (room: string, event: string, key: string) => `${room}\n${event}\n${key}`;
