import type * as Crypto from "@matrix-org/matrix-sdk-crypto-wasm";
import { MatrixError, seg } from "../http.ts";
import type { CryptoParts } from "./parts.ts";

const BACKUP_V1 = "m.megolm_backup.v1.curve25519-aes-sha2";
const ROOM_KEYS = "/_matrix/client/v3/room_keys";

/** A key-backup restore's progress, for a login step's text. */
export type Progress = (done: number, total: number) => void;

/** One backed-up room key as the homeserver keeps it (the session sealed to the backup's public key). */
interface BackedUp {
  session_data?: { ephemeral?: unknown; mac?: unknown; ciphertext?: unknown };
}

/**
 * The user's server-side key backup (`m.megolm_backup.v1.curve25519-aes-sha2`): what lets a new device read history
 * from before it, and a key that reached the user's other sessions but not this one. Once this device holds the
 * backup's private key (from the recovery key, or sent by a session that verified it), it reads keys from the
 * backup, and backs up the keys it receives, so the user's next session can read what this one could.
 */
export class KeyBackup {
  constructor(private readonly parts: CryptoParts) {}

  /**
   * Reads every room key of the current backup with its private key (base64) and imports them; keeps the key and
   * turns on backing up. Returns how many keys were imported (0 when the key is not the current backup's).
   */
  async restore(privateKey: string, progress?: Progress): Promise<number> {
    const { lib, machine, http } = this.parts;
    const version = await this.currentVersion();
    if (!version) return 0;
    const key = lib.BackupDecryptionKey.fromBase64(privateKey);
    try {
      // A key of an older backup than the current one reads nothing of it: not imported, not kept.
      if (key.megolmV1PublicKey.publicKeyBase64 !== version.publicKey) return 0;
      await machine.saveBackupDecryptionKey(key, version.version);
      await this.parts.commit();
      await this.enable();
      const answer = await http.request<{ rooms?: Record<string, { sessions?: Record<string, BackedUp> }> }>(
        "GET",
        `${ROOM_KEYS}/keys`,
        { query: { version: version.version }, timeoutMs: 120_000, maxBytes: 256 * 1024 * 1024 },
      );
      const entries = Object.entries(answer.rooms ?? {}).flatMap(([roomID, room]) =>
        Object.entries(room.sessions ?? {}).map(([sessionID, data]) => ({ roomID, sessionID, data })),
      );
      return await this.importSealed(key, version.version, entries, progress);
    } finally {
      key.free();
    }
  }

  /** Looks one room key up in the backup (a message waits for it); true when it was there and is imported now. */
  async fetch(roomID: string, sessionID: string): Promise<boolean> {
    const held = await this.parts.machine.getBackupKeys();
    const key = held.decryptionKey;
    const version = held.backupVersion;
    held.free();
    if (!key || !version) return false;
    try {
      const data = await this.parts.http
        .request<BackedUp>("GET", `${ROOM_KEYS}/keys/${seg(roomID)}/${seg(sessionID)}`, { query: { version } })
        .catch((error) => {
          if (error instanceof MatrixError && error.errcode === "M_NOT_FOUND") return undefined;
          throw error;
        });
      return data ? (await this.importSealed(key, version, [{ roomID, sessionID, data }])) > 0 : false;
    } finally {
      key.free();
    }
  }

  /** Whether this device can read the backup (it holds the private key of a version). */
  async held(): Promise<boolean> {
    const held = await this.parts.machine.getBackupKeys();
    try {
      return Boolean(held.decryptionKey && held.backupVersion);
    } finally {
      held.free();
    }
  }

  /** Turns on backing up to the version whose key this device holds (after a restart too: it is not stored). */
  async enable(): Promise<void> {
    const { machine } = this.parts;
    const held = await machine.getBackupKeys();
    try {
      const key = held.decryptionKey;
      if (!key || !held.backupVersion) return;
      if (!(await machine.isBackupEnabled()))
        await machine.enableBackupV1(key.megolmV1PublicKey.publicKeyBase64, held.backupVersion);
      key.free();
    } finally {
      held.free();
    }
  }

  /**
   * Uploads the room keys not backed up yet, a batch at a time. A backup replaced meanwhile (another session
   * made a new one) stops the uploads: its key is not this device's.
   */
  async upload(): Promise<void> {
    const { machine } = this.parts;
    if (!(await machine.isBackupEnabled())) return;
    for (let batch = 0; batch < 100; batch++) {
      const request = await machine.backupRoomKeys();
      if (!request) return;
      try {
        await this.parts.send(request);
      } catch (error) {
        if (error instanceof MatrixError && (error.errcode === "M_WRONG_ROOM_KEYS_VERSION" || error.status === 404)) {
          await machine.disableBackup();
          return;
        }
        throw error;
      }
    }
  }

  private async currentVersion(): Promise<{ version: string; publicKey: unknown } | undefined> {
    const answer = await this.parts.http
      .request<{ version?: unknown; algorithm?: unknown; auth_data?: { public_key?: unknown } }>(
        "GET",
        `${ROOM_KEYS}/version`,
      )
      .catch((error) => {
        if (error instanceof MatrixError && error.errcode === "M_NOT_FOUND") return undefined;
        throw error;
      });
    if (!answer || answer.algorithm !== BACKUP_V1 || typeof answer.version !== "string") return undefined;
    return { version: answer.version, publicKey: answer.auth_data?.public_key };
  }

  /** Opens backed-up keys with the backup's private key and imports them; returns how many were imported. */
  private async importSealed(
    key: Crypto.BackupDecryptionKey,
    version: string,
    entries: { roomID: string; sessionID: string; data: BackedUp }[],
    progress?: Progress,
  ): Promise<number> {
    const { lib, machine } = this.parts;
    const byRoom = new Map<string, Map<string, unknown>>();
    const sessionIDs: string[] = [];
    for (const { roomID, sessionID, data } of entries) {
      const sealed = data.session_data;
      if (
        typeof sealed?.ephemeral !== "string" ||
        typeof sealed.mac !== "string" ||
        typeof sealed.ciphertext !== "string"
      )
        continue;
      let session: Record<string, unknown>;
      try {
        session = JSON.parse(key.decryptV1(sealed.ephemeral, sealed.mac, sealed.ciphertext));
      } catch {
        continue; // one key the backup holds wrongly does not keep the others out
      }
      let sessions = byRoom.get(roomID);
      if (!sessions) byRoom.set(roomID, (sessions = new Map()));
      sessions.set(sessionID, { ...session, room_id: roomID, session_id: sessionID });
      sessionIDs.push(sessionID);
    }
    if (sessionIDs.length === 0) return 0;
    const result = await machine.importBackedUpRoomKeys(
      new Map([...byRoom].map(([roomID, sessions]) => [new lib.RoomId(roomID), sessions])),
      (done, total) => progress?.(Number(done), Number(total)),
      version,
    );
    const imported = result.importedCount;
    result.free();
    await this.parts.commit();
    this.parts.keysArrived(sessionIDs);
    return imported;
  }
}
