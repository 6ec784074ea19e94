import {
  ClientEvent,
  createClient,
  MatrixEventEvent,
  RoomEvent,
  type MatrixClient,
  type MatrixEvent,
} from "matrix-js-sdk";
import { CryptoEvent, type GeneratedSecretStorageKey } from "matrix-js-sdk/lib/crypto-api/index.js";
import {
  VerificationRequestEvent,
  VerifierEvent,
  type VerificationRequest,
} from "matrix-js-sdk/lib/crypto-api/verification.js";
import { logger, type Logger } from "matrix-js-sdk/lib/logger.js";
import { decryptAttachment, encryptAttachment, type IEncryptedFile } from "matrix-encrypt-attachment";
import type { SynapseServer } from "../harness/synapse.ts";

const DEFAULT_WAIT_MS = 20_000;

const quiet = () => undefined;
const SILENT: Logger = {
  trace: quiet,
  debug: quiet,
  info: quiet,
  warn: quiet,
  error: quiet,
  getChild: () => SILENT,
};

/** A decrypted room event as the peer saw it. */
export interface Seen {
  roomID: string;
  eventID: string;
  type: string;
  sender: string;
  content: Record<string, any>;
  /** The event was encrypted on the wire. */
  encrypted: boolean;
  /** For a redaction: the event it removes. */
  redacts?: string;
}

/**
 * Another person with an end-to-end encrypting client: matrix-js-sdk with its Rust crypto (what Element runs), in
 * this process, keys in memory. It makes encrypted rooms, sends into them and hands over what it decrypted.
 */
export class EncryptedPeer {
  private readonly seen: Seen[] = [];
  private readonly waiters = new Set<() => void>();

  /** The secret storage key this session made (setUpRecovery): what the user writes down as the recovery key. */
  private recovery: { key?: GeneratedSecretStorageKey } = {};

  private constructor(
    readonly client: MatrixClient,
    readonly userID: string,
  ) {}

  static async start(
    server: SynapseServer,
    registered: { userID: string; accessToken: string; deviceID: string },
  ): Promise<EncryptedPeer> {
    // The module-wide logger (loglevel underneath) too: parts of the SDK log through it rather than the client's.
    (logger as unknown as { setLevel(level: string): void }).setLevel("silent");
    const recovery: { key?: GeneratedSecretStorageKey } = {};
    const client = createClient({
      cryptoCallbacks: {
        getSecretStorageKey: async ({ keys }) => {
          const [keyID] = Object.keys(keys);
          return recovery.key && keyID ? [keyID, recovery.key.privateKey] : null;
        },
      },
      logger: SILENT, // the SDK logs every sync and key operation
      baseUrl: server.url,
      userId: registered.userID,
      accessToken: registered.accessToken,
      deviceId: registered.deviceID,
    });
    await client.initRustCrypto({ useIndexedDB: false });
    const peer = new EncryptedPeer(client, registered.userID);
    peer.recovery = recovery;
    client.on(RoomEvent.Timeline, (event, room) => {
      if (!room) return;
      if (event.isBeingDecrypted() || event.shouldAttemptDecryption())
        // Every decryption, not the first: a key that comes late decrypts the event again.
        event.on(MatrixEventEvent.Decrypted, () => peer.note(event, room.roomId));
      else peer.note(event, room.roomId);
    });
    client.on(RoomEvent.MyMembership, (room, membership) => {
      if (membership === "invite") void client.joinRoom(room.roomId).catch(() => undefined);
    });
    const ready = new Promise<void>((resolve) =>
      client.on(ClientEvent.Sync, (state) => state === "PREPARED" && resolve()),
    );
    await client.startClient({ initialSyncLimit: 10 });
    await ready;
    return peer;
  }

  private note(event: MatrixEvent, roomID: string) {
    if (event.isDecryptionFailure() || this.seen.some((s) => s.eventID === event.getId())) return;
    this.seen.push({
      roomID,
      eventID: event.getId() ?? "",
      type: event.getType(),
      sender: event.getSender() ?? "",
      content: event.getContent(),
      encrypted: event.isEncrypted(),
      ...(event.getType() === "m.room.redaction" ? { redacts: event.event.redacts ?? event.getContent().redacts } : {}),
    });
    for (const wake of this.waiters) wake();
  }

  /** A new encrypted room (a DM when `direct`), with the others invited. */
  async createEncryptedRoom(invite: string[], options: { name?: string; direct?: boolean } = {}): Promise<string> {
    const { room_id } = await this.client.createRoom({
      invite,
      is_direct: options.direct,
      preset: "private_chat" as never,
      ...(options.name ? { name: options.name } : {}),
      initial_state: [
        { type: "m.room.encryption", state_key: "", content: { algorithm: "m.megolm.v1.aes-sha2" } },
        { type: "m.room.history_visibility", state_key: "", content: { history_visibility: "shared" } },
      ],
    });
    await this.waitForRoom(room_id);
    return room_id;
  }

  async waitForRoom(roomID: string): Promise<void> {
    await this.until(`room ${roomID}`, () => this.client.getRoom(roomID)?.getMyMembership() === "join");
  }

  /** Waits until `userID` is a joined member of the room as this client sees it (so keys are shared with them). */
  async waitForMember(roomID: string, userID: string): Promise<void> {
    await this.until(
      `${userID} joined ${roomID}`,
      () => this.client.getRoom(roomID)?.getMember(userID)?.membership === "join",
    );
  }

  async text(roomID: string, body: string): Promise<string> {
    return (await this.client.sendTextMessage(roomID, body)).event_id;
  }

  async reply(roomID: string, to: string, body: string): Promise<string> {
    return (
      await this.client.sendEvent(
        roomID,
        "m.room.message" as never,
        {
          msgtype: "m.text",
          body,
          "m.relates_to": { "m.in_reply_to": { event_id: to } },
        } as never,
      )
    ).event_id;
  }

  async edit(roomID: string, eventID: string, body: string): Promise<string> {
    return (
      await this.client.sendEvent(
        roomID,
        "m.room.message" as never,
        {
          msgtype: "m.text",
          body: `* ${body}`,
          "m.new_content": { msgtype: "m.text", body },
          "m.relates_to": { rel_type: "m.replace", event_id: eventID },
        } as never,
      )
    ).event_id;
  }

  async react(roomID: string, eventID: string, key: string): Promise<string> {
    return (
      await this.client.sendEvent(
        roomID,
        "m.reaction" as never,
        {
          "m.relates_to": { rel_type: "m.annotation", event_id: eventID, key },
        } as never,
      )
    ).event_id;
  }

  /**
   * Sends an image to an encrypted room the way Element does: encrypted with matrix-encrypt-attachment (Element's
   * own library, on Node's crypto), the ciphertext uploaded, the key in the event's `file` object.
   */
  async sendEncryptedImage(
    roomID: string,
    bytes: Uint8Array,
    image: { name: string; mimeType: string; width: number; height: number },
  ): Promise<{ eventID: string; file: IEncryptedFile & { url: string } }> {
    const plain = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const { data, info } = await encryptAttachment(plain);
    const { content_uri } = await this.client.uploadContent(new Uint8Array(data) as never, {
      type: "application/octet-stream",
      includeFilename: false,
    });
    const file = { ...info, url: content_uri };
    const { event_id } = await this.client.sendEvent(
      roomID,
      "m.room.message" as never,
      {
        msgtype: "m.image",
        body: image.name,
        filename: image.name,
        file,
        info: { mimetype: image.mimeType, size: bytes.byteLength, w: image.width, h: image.height },
      } as never,
    );
    return { eventID: event_id, file };
  }

  /** Downloads the file of an encrypted message and opens it with the key its event carries. */
  async openEncryptedFile(file: IEncryptedFile & { url: string }): Promise<Uint8Array> {
    const url = this.client.mxcUrlToHttp(file.url);
    if (!url) throw new Error(`not an mxc URL: ${file.url}`);
    const response = await fetch(url, { headers: { authorization: `Bearer ${this.client.getAccessToken()}` } });
    if (!response.ok) throw new Error(`${this.userID}: downloading ${file.url} answered ${response.status}`);
    return new Uint8Array(await decryptAttachment(await response.arrayBuffer(), file));
  }

  /** The first event (seen or to come) that matches; fails after the wait, listing what was seen. */
  async waitFor(what: string, match: (seen: Seen) => boolean, timeoutMs = DEFAULT_WAIT_MS): Promise<Seen> {
    let found: Seen | undefined;
    await this.until(
      what,
      () => (found = this.seen.find(match)) !== undefined,
      timeoutMs,
      () => this.seen.slice(-10).map((s) => `${s.type} ${JSON.stringify(s.content).slice(0, 200)}`),
    );
    return found!;
  }

  private until(what: string, ok: () => boolean, timeoutMs = DEFAULT_WAIT_MS, seen?: () => string[]) {
    return new Promise<void>((resolve, reject) => {
      if (ok()) return resolve();
      const check = () => {
        if (!ok()) return;
        cleanup();
        resolve();
      };
      const poll = setInterval(check, 100);
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`${this.userID} waited ${timeoutMs} ms for ${what}; saw:\n${(seen?.() ?? []).join("\n")}`));
      }, timeoutMs);
      const cleanup = () => {
        clearInterval(poll);
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }

  /**
   * What Element does when a user turns on "secure backup": a cross-signing identity (this session signed by it),
   * secret storage under a new recovery key, and a key backup this session uploads room keys to. Returns the key.
   */
  async setUpRecovery(password: string): Promise<string> {
    const crypto = this.client.getCrypto()!;
    await crypto.bootstrapCrossSigning({
      authUploadDeviceSigningKeys: async (makeRequest) => {
        await makeRequest({
          type: "m.login.password",
          identifier: { type: "m.id.user", user: this.userID },
          password,
        } as never);
      },
    });
    await crypto.bootstrapSecretStorage({
      createSecretStorageKey: async () => (this.recovery.key = await crypto.createRecoveryKeyFromPassphrase()),
      setupNewSecretStorage: true,
      setupNewKeyBackup: true,
    });
    return this.recovery.key!.encodedPrivateKey!;
  }

  /** How this session sees another device of the user: is it signed by the user's identity? */
  async crossSigningVerified(deviceID: string): Promise<boolean> {
    const crypto = this.client.getCrypto()!;
    await crypto.getUserDeviceInfo([this.userID], true);
    return (await crypto.getDeviceVerificationStatus(this.userID, deviceID))?.crossSigningVerified ?? false;
  }

  /**
   * Answers the next verification request from another of the user's sessions, as a person in Element would: accepts
   * it, waits for the other side to start the emoji comparison (or, with `start`, starts it), and confirms when
   * `compare` says they match (else says they do not). Resolves with the emoji it showed, once it is over.
   */
  async answerVerification(
    compare: (emoji: string[]) => Promise<boolean>,
    options: { start?: boolean } = {},
  ): Promise<string[]> {
    const request = await new Promise<VerificationRequest>((resolve) =>
      this.client.once(CryptoEvent.VerificationRequestReceived, resolve),
    );
    await request.accept();
    // As when one picks "compare emoji" in Element: this side starts the comparison, not the requester.
    if (options.start) await request.startVerification("m.sas.v1");
    const verifier = await new Promise<NonNullable<VerificationRequest["verifier"]>>((resolve) => {
      const check = () => {
        if (!request.verifier) return;
        request.off(VerificationRequestEvent.Change, check);
        resolve(request.verifier);
      };
      request.on(VerificationRequestEvent.Change, check);
      check();
    });
    let shown: string[] = [];
    verifier.on(VerifierEvent.ShowSas, (sas) => {
      shown = (sas.sas.emoji ?? []).map(([symbol]) => symbol);
      void compare(shown).then((match) => (match ? sas.confirm() : sas.mismatch()));
    });
    await verifier.verify();
    return shown;
  }

  async close(): Promise<void> {
    this.client.stopClient();
  }
}
