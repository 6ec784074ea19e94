import type * as Crypto from "@matrix-org/matrix-sdk-crypto-wasm";
import type { AccountRecords } from "../../../bridges/connector.ts";
import type { MatrixEvent } from "../event.ts";
import { seg, type MatrixHttp } from "../http.ts";
import type { Room } from "../rooms.ts";
import { IndexedDBJournal } from "./journal.ts";
import { KeyBackup } from "./backup.ts";
import type { CryptoParts } from "./parts.ts";
import { DeviceTrust } from "./trust.ts";

/** The Rust crypto library, loaded and initialised by the runtime (the wasm is loaded differently on each). */
export type CryptoLib = typeof Crypto;
export type LoadCrypto = () => Promise<CryptoLib>;

/** What a sync hands the crypto machine (device lists, one-time key counts, to-device messages). */
export interface CryptoSync {
  to_device?: { events?: unknown[] };
  device_lists?: { changed?: unknown[]; left?: unknown[] };
  device_one_time_keys_count?: Record<string, unknown>;
  device_unused_fallback_key_types?: unknown[];
  "org.matrix.msc2732.device_unused_fallback_key_types"?: unknown[];
}

/** An encrypted event that could not be read: the Megolm session whose key it waits for, when it is that. */
export interface Undecryptable {
  sessionID?: string;
  /** The key is missing (it may come later: it is worth waiting for), rather than the event being unreadable. */
  waiting: boolean;
}

const USER = /^@[^:]+:.+$/;

/**
 * One Matrix device's end-to-end encryption: an OlmMachine of matrix-sdk-crypto (the Rust implementation) over a
 * store kept in the account's records (journal.ts). It reads what each sync carries for it, sends what it asks the
 * homeserver for (key uploads, key queries and claims, to-device messages), decrypts room events and encrypts
 * outgoing ones, sharing the room key with every device of the room's members first.
 *
 * Durability: `checkpoint` puts everything the store changed into the account's records, to be committed with the
 * sync position that depends on it (or on its own, before an encrypted event is sent: a Megolm message index is
 * never used twice, even after a crash).
 */
export class MatrixCrypto {
  private outgoing?: Promise<void>;
  private again = false;
  /** Room keys that arrived since the last `takeArrivedKeys`. */
  private arrived = new Set<string>();
  /** One room's key share at a time (two sends to a room would otherwise race to make its outbound session). */
  private readonly sharing = new Map<string, Promise<unknown>>();

  private constructor(
    readonly lib: CryptoLib,
    private readonly machine: Crypto.OlmMachine,
    private readonly journal: IndexedDBJournal,
    private readonly http: MatrixHttp,
    private readonly records: AccountRecords,
  ) {
    machine.registerRoomKeyUpdatedCallback(async (infos) => {
      for (const info of infos) this.arrived.add(info.sessionId);
    });
  }

  /**
   * Opens the device's store (restored from the account's records) and its machine. `storeName` names the store's
   * databases; `storeKey` encrypts every value in them (the Rust store's own cipher).
   */
  static async open(options: {
    lib: CryptoLib;
    userID: string;
    deviceID: string;
    storeName: string;
    storeKey: string;
    records: AccountRecords;
    http: MatrixHttp;
  }): Promise<MatrixCrypto> {
    const { lib } = options;
    const journal = new IndexedDBJournal(options.records, options.storeName);
    await journal.restore();
    const store = await lib.StoreHandle.open(options.storeName, options.storeKey);
    try {
      const machine = await lib.OlmMachine.initFromStore(
        new lib.UserId(options.userID),
        new lib.DeviceId(options.deviceID),
        store,
      );
      const crypto = new MatrixCrypto(lib, machine, journal, options.http, options.records);
      await crypto.checkpoint(true);
      return crypto;
    } finally {
      store.free();
    }
  }

  /** The device's identity key (ed25519, base64): what other clients see for this device. */
  get fingerprint(): string {
    return this.machine.identityKeys.ed25519.toBase64();
  }

  /** Hands the machine a sync's to-device messages and key counts, then sends what it asks for. */
  async receiveSync(sync: CryptoSync): Promise<void> {
    const { lib } = this;
    const users = (list: unknown[] | undefined) =>
      (list ?? []).filter((u): u is string => typeof u === "string" && USER.test(u)).map((u) => new lib.UserId(u));
    const counts = new Map<string, number>();
    for (const [algorithm, count] of Object.entries(sync.device_one_time_keys_count ?? {}))
      if (typeof count === "number") counts.set(algorithm, count);
    const fallback =
      sync.device_unused_fallback_key_types ?? sync["org.matrix.msc2732.device_unused_fallback_key_types"];
    const toDevice = (sync.to_device?.events ?? []).filter((e) => e && typeof e === "object");
    await this.machine.receiveSyncChanges(
      JSON.stringify(toDevice),
      new lib.DeviceLists(users(sync.device_lists?.changed), users(sync.device_lists?.left)),
      counts,
      Array.isArray(fallback) ? new Set(fallback.filter((t): t is string => typeof t === "string")) : undefined,
    );
    await this.sendOutgoing();
  }

  /** This device's standing with the user's cross-signing identity, and the ways to verify it (trust.ts). */
  trust(): DeviceTrust {
    return new DeviceTrust(this.parts());
  }

  /** The user's key backup, as far as this device can read it (backup.ts). */
  backup(): KeyBackup {
    return new KeyBackup(this.parts());
  }

  private parts(): CryptoParts {
    return {
      lib: this.lib,
      machine: this.machine,
      http: this.http,
      send: (request) => this.send(request),
      sendOutgoing: () => this.sendOutgoing(),
      commit: () => this.checkpoint(true),
      keysArrived: (sessionIDs) => {
        for (const id of sessionIDs) this.arrived.add(id);
      },
    };
  }

  /** Says a session's key is here (to try its waiting events again: after a failed try). */
  markArrived(sessionID: string): void {
    this.arrived.add(sessionID);
  }

  /**
   * Of these sessions, marks those whose key the store holds as arrived: after a restart, a key stored just before
   * the stop whose waiting events were not read yet. (The store is walked once; nothing is exported.)
   */
  async markStored(sessionIDs: Iterable<string>): Promise<void> {
    const wanted = new Set(sessionIDs);
    if (wanted.size === 0) return;
    await this.machine.exportRoomKeys((session) => {
      if (wanted.has(session.sessionId)) this.arrived.add(session.sessionId);
      return false;
    });
  }

  /** The Megolm sessions whose keys arrived since the last call (events waiting for them can be read now). */
  takeArrivedKeys(): Set<string> {
    const arrived = this.arrived;
    this.arrived = new Set();
    return arrived;
  }

  /**
   * An `m.room.encrypted` event, decrypted: the same event with its clear type and content (the relation, which a
   * sender keeps outside the ciphertext, put back into it). Or why it could not be read.
   */
  async decrypt(roomID: string, event: MatrixEvent): Promise<MatrixEvent | Undecryptable> {
    const { lib } = this;
    const sessionID = typeof event.content.session_id === "string" ? event.content.session_id : undefined;
    try {
      const decrypted = await this.machine.decryptRoomEvent(
        JSON.stringify({ ...event, room_id: roomID }),
        new lib.RoomId(roomID),
        new lib.DecryptionSettings(lib.TrustRequirement.Untrusted),
      );
      const clear = JSON.parse(decrypted.event) as { type?: unknown; content?: unknown };
      if (typeof clear.type !== "string" || !clear.content || typeof clear.content !== "object")
        return { sessionID, waiting: false };
      const content = clear.content as Record<string, unknown>;
      if (!content["m.relates_to"] && event.content["m.relates_to"])
        content["m.relates_to"] = event.content["m.relates_to"];
      return { ...event, type: clear.type, content };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const waiting =
        code === lib.DecryptionErrorCode.MissingRoomKey || code === lib.DecryptionErrorCode.UnknownMessageIndex;
      return { sessionID, waiting };
    }
  }

  /**
   * Encrypts an event for the room: the room's members are tracked (their devices queried), Olm sessions claimed
   * where missing, the room key shared with every device, then the event encrypted. Saved before it is returned.
   */
  async encrypt(room: Room, type: string, content: Record<string, unknown>): Promise<Record<string, unknown>> {
    const previous = this.sharing.get(room.id) ?? Promise.resolve();
    const turn = previous.catch(() => undefined).then(() => this.encryptNow(room, type, content));
    this.sharing.set(room.id, turn);
    try {
      return await turn;
    } finally {
      if (this.sharing.get(room.id) === turn) this.sharing.delete(room.id);
    }
  }

  private async encryptNow(room: Room, type: string, content: Record<string, unknown>) {
    const { lib } = this;
    const roomID = new lib.RoomId(room.id);
    // Who can read it: joined members, and invited ones unless the room's history is for joined members only.
    const members = [...room.members]
      .filter(([, m]) => m.membership === "join" || (m.membership === "invite" && room.historyVisibility !== "joined"))
      .map(([userID]) => userID)
      .filter((userID) => USER.test(userID));
    const users = () => members.map((userID) => new lib.UserId(userID));
    await this.machine.updateTrackedUsers(users());
    await this.sendOutgoing(); // the key query for members new to the machine
    const claim = await this.machine.getMissingSessions(users());
    if (claim) await this.send(claim);
    const requests = await this.machine.shareRoomKey(roomID, users(), this.settings(room));
    if (requests.length > 0) await this.checkpoint(true); // the new room key and Olm steps, before they are sent
    for (const request of requests) await this.send(request);
    const encrypted = JSON.parse(await this.machine.encryptRoomEvent(roomID, type, JSON.stringify(content)));
    await this.checkpoint(true);
    return encrypted as Record<string, unknown>;
  }

  private settings(room: Room): Crypto.EncryptionSettings {
    const { lib } = this;
    const settings = new lib.EncryptionSettings();
    settings.historyVisibility =
      {
        invited: lib.HistoryVisibility.Invited,
        joined: lib.HistoryVisibility.Joined,
        world_readable: lib.HistoryVisibility.WorldReadable,
      }[room.historyVisibility ?? ""] ?? lib.HistoryVisibility.Shared;
    const period = room.encryption?.rotation_period_ms;
    const messages = room.encryption?.rotation_period_msgs;
    if (typeof period === "number" && period > 0) settings.rotationPeriod = BigInt(Math.round(period * 1000));
    if (typeof messages === "number" && messages > 0) settings.rotationPeriodMessages = BigInt(Math.round(messages));
    settings.sharingStrategy = lib.CollectStrategy.allDevices();
    return settings;
  }

  /** Sends everything the machine has queued for the homeserver, until it has nothing more (one sender at a time). */
  async sendOutgoing(): Promise<void> {
    if (this.outgoing) {
      this.again = true;
      return this.outgoing;
    }
    this.outgoing = (async () => {
      try {
        do {
          this.again = false;
          const requests = await this.machine.outgoingRequests();
          // New one-time keys, Olm ratchet steps and signatures are durable before anyone sees them: after a crash
          // the device must not upload another key under the same ID, or use a ratchet step twice.
          const { KeysUpload, ToDevice, SignatureUpload } = this.lib.RequestType;
          if (requests.some((r) => r.type === KeysUpload || r.type === ToDevice || r.type === SignatureUpload))
            await this.checkpoint(true);
          for (const request of requests) await this.send(request);
        } while (this.again);
      } finally {
        this.outgoing = undefined;
      }
    })();
    return this.outgoing;
  }

  /** One request of the machine's, to the endpoint its type names; the answer goes back to the machine. */
  private async send(
    request: Crypto.OutgoingRequest | Crypto.KeysClaimRequest | Crypto.ToDeviceRequest | Crypto.SignatureUploadRequest,
  ) {
    const { RequestType } = this.lib;
    const body = JSON.parse(request.body);
    const path = "/_matrix/client/v3";
    let answer: unknown;
    switch (request.type) {
      case RequestType.KeysUpload:
        answer = await this.http.request("POST", `${path}/keys/upload`, { body });
        break;
      case RequestType.KeysQuery:
        answer = await this.http.request("POST", `${path}/keys/query`, { body });
        break;
      case RequestType.KeysClaim:
        answer = await this.http.request("POST", `${path}/keys/claim`, { body });
        break;
      case RequestType.SignatureUpload:
        answer = await this.http.request("POST", `${path}/keys/signatures/upload`, { body });
        break;
      case RequestType.ToDevice: {
        const r = request as Crypto.ToDeviceRequest;
        answer = await this.http.request("PUT", `${path}/sendToDevice/${seg(r.event_type)}/${seg(r.txn_id)}`, { body });
        break;
      }
      case RequestType.RoomMessage: {
        const r = request as Crypto.RoomMessageRequest;
        answer = await this.http.request(
          "PUT",
          `${path}/rooms/${seg(r.room_id)}/send/${seg(r.event_type)}/${seg(r.txn_id)}`,
          { body },
        );
        break;
      }
      case RequestType.KeysBackup: {
        const r = request as Crypto.KeysBackupRequest;
        answer = await this.http.request("PUT", `${path}/room_keys/keys`, { body, query: { version: r.version } });
        break;
      }
      default:
        return;
    }
    if (request.id) await this.machine.markRequestAsSent(request.id, request.type, JSON.stringify(answer));
  }

  /**
   * Encrypts a file for an encrypted room: the ciphertext to upload, and what goes in the event's `file` object
   * beside its URL (the key, the counter's start, the ciphertext's hash).
   */
  encryptFile(bytes: Uint8Array): { ciphertext: Uint8Array; file: Record<string, unknown> } {
    const encrypted = this.lib.Attachment.encrypt(bytes);
    try {
      return { ciphertext: encrypted.encryptedData, file: JSON.parse(encrypted.mediaEncryptionInfo!) };
    } finally {
      encrypted.free();
    }
  }

  /** Opens a file received in an encrypted room; throws where its hash or key does not fit. */
  decryptFile(ciphertext: Uint8Array, file: Record<string, unknown>): Uint8Array {
    const { url: _, ...info } = file;
    const encrypted = new this.lib.EncryptedAttachment(ciphertext, JSON.stringify(info));
    try {
      return this.lib.Attachment.decrypt(encrypted);
    } finally {
      encrypted.free();
    }
  }

  /** Puts what the store changed into the account's records; `commit` also makes them durable now. */
  async checkpoint(commit = false): Promise<void> {
    await this.journal.flush();
    if (commit) await this.records.commit();
  }

  close(): void {
    this.machine.close();
    this.journal.close();
  }

  /** Closes the machine and deletes its store from memory (a login's new device that no account will hold). */
  async discard(): Promise<void> {
    this.machine.close();
    await this.journal.discard();
  }
}

/** The key that encrypts a new device's store: 32 random bytes, base64. */
export function newStoreKey(): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
}

/** The encrypted event's endpoint for a room (what the client sends an encrypted event through). */
export const ENCRYPTED_TYPE = "m.room.encrypted";
