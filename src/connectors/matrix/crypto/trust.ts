import type * as Crypto from "@matrix-org/matrix-sdk-crypto-wasm";
// The recovery key's format and secret storage's cipher, from matrix-js-sdk (what Element runs): these modules stand
// alone (WebCrypto and base58), so neither runtime loads the SDK's client for them.
import { deriveRecoveryKeyFromPassphrase } from "matrix-js-sdk/lib/crypto-api/key-passphrase.js";
import { decodeRecoveryKey } from "matrix-js-sdk/lib/crypto-api/recovery-key.js";
import decryptAESSecretStorageItem from "matrix-js-sdk/lib/utils/decryptAESSecretStorageItem.js";
import { NetworkError } from "../../../bridges/connector.ts";
import { MatrixError, seg } from "../http.ts";
import { KeyBackup, type Progress } from "./backup.ts";
import type { CryptoParts } from "./parts.ts";

/** Where this device stands with the user's cross-signing identity. */
export type TrustStatus =
  /** The user has no cross-signing identity: there is nothing to verify against (and nothing to warn about). */
  | "no_identity"
  /** The user's identity signs this device: other people's clients trust it, and its keys come from key backup. */
  | "verified"
  | "unverified";

const CROSS_SIGNING = ["m.cross_signing.master", "m.cross_signing.self_signing", "m.cross_signing.user_signing"];
const BACKUP_SECRET = "m.megolm_backup.v1";
const SECRET_STORAGE_V1 = "m.secret_storage.v1.aes-hmac-sha2";

/**
 * Trust for inboxd's own device, the way Element establishes it: the user's recovery key opens secret storage
 * (their cross-signing keys and key-backup key, kept encrypted in their account data), with which this device signs
 * itself and reads the room keys the user's other sessions backed up; or an emoji comparison (SAS) with another of
 * the user's sessions, which then cross-signs this device and hands it the backup key.
 */
export class DeviceTrust {
  private readonly backup: KeyBackup;

  constructor(private readonly parts: CryptoParts) {
    this.backup = new KeyBackup(parts);
  }

  private get self(): Crypto.UserId {
    return this.parts.machine.userId;
  }

  /** Asks the homeserver for the user's identity and devices as they are now, then says where this device stands. */
  async status(): Promise<TrustStatus> {
    const { machine } = this.parts;
    await machine.updateTrackedUsers([this.self]);
    await machine.markAllTrackedUsersAsDirty();
    await this.parts.sendOutgoing(); // the key upload of a new device, and the key query just asked for
    return this.knownStatus();
  }

  /** Where this device stands by what the machine already knows (no request). */
  async knownStatus(): Promise<TrustStatus> {
    const { machine } = this.parts;
    const identity = await machine.getIdentity(this.self);
    if (!identity) return "no_identity";
    identity.free();
    const device = await machine.getDevice(this.self, machine.deviceId);
    try {
      return device?.isCrossSignedByOwner() ? "verified" : "unverified";
    } finally {
      device?.free();
    }
  }

  /**
   * Verifies this device with the user's recovery key (or, for secret storage set up with one, their security
   * phrase): opens secret storage, imports the cross-signing keys, signs this device and trusts the identity, then
   * restores the room keys of the key backup. Wrong input is a "rejected" error saying what was wrong.
   */
  async useRecoveryKey(input: string, progress?: Progress): Promise<{ restoredKeys: number | undefined }> {
    const storage = await this.secretStorageKey(input.trim());
    const [master, selfSigning, userSigning] = await Promise.all(CROSS_SIGNING.map((name) => storage.read(name)));
    if (!master || !selfSigning)
      throw new NetworkError(
        "rejected",
        "your secret storage holds no cross-signing keys: verify with another session instead",
        "no_cross_signing_secrets",
      );
    await this.importCrossSigning(master, selfSigning, userSigning);
    const backupKey = await storage.read(BACKUP_SECRET);
    // Signed by now: a backup that cannot be read at this moment (the homeserver slow, the answer too large) must
    // not fail the verification. The key is kept before the read, so messages' lookups use it later (undefined).
    const restoredKeys = backupKey ? await this.backup.restore(backupKey, progress).catch(() => undefined) : 0;
    await this.parts.commit();
    return { restoredKeys };
  }

  private async importCrossSigning(master: string, selfSigning: string, userSigning: string | undefined) {
    const { machine } = this.parts;
    const status = await machine.importCrossSigningKeys(master, selfSigning, userSigning ?? null);
    try {
      // The machine imports a private key only when it fits the public key the homeserver published.
      if (!status.hasMaster || !status.hasSelfSigning)
        throw new NetworkError(
          "rejected",
          "the cross-signing keys in your secret storage do not match your published identity",
          "cross_signing_mismatch",
        );
    } finally {
      status.free();
    }
    await this.signSelf();
  }

  /** Signs this device with the self-signing key and trusts the user's own identity (both uploaded). */
  private async signSelf(): Promise<void> {
    const { machine } = this.parts;
    const device = await machine.getDevice(this.self, machine.deviceId);
    if (!device) throw new Error("the crypto machine does not know its own device");
    try {
      await this.parts.commit(); // the imported keys, before a signature made with them goes out
      await this.parts.send(await device.verify());
    } finally {
      device.free();
    }
    const identity = await machine.getIdentity(this.self);
    if (identity && "trustsOurOwnDevice" in identity && !identity.isVerified())
      await this.parts.send(await identity.verify());
    identity?.free();
    await this.status(); // the signature, read back from the homeserver
  }

  /**
   * The account's secret storage, opened with what the user typed: the default key's description says whether a
   * security phrase can stand for the key. Every secret carries a MAC, so a wrong key is found at the first read.
   */
  private async secretStorageKey(input: string) {
    if (!input) throw new NetworkError("rejected", "enter your recovery key", "invalid_recovery_key");
    const keyID = (await this.accountData<{ key?: unknown }>("m.secret_storage.default_key"))?.key;
    if (typeof keyID !== "string")
      throw new NetworkError(
        "rejected",
        "this account has no secret storage (no recovery key was set up): verify with another session instead",
        "no_secret_storage",
      );
    const description = await this.accountData<{
      algorithm?: unknown;
      passphrase?: { algorithm?: unknown; salt?: unknown; iterations?: unknown; bits?: unknown };
    }>(`m.secret_storage.key.${keyID}`);
    if (description?.algorithm !== SECRET_STORAGE_V1)
      throw new NetworkError(
        "rejected",
        `this account's secret storage uses ${String(description?.algorithm ?? "an unknown algorithm")}, which inboxd cannot open`,
        "unsupported_secret_storage",
      );
    let key: Uint8Array;
    try {
      key = decodeRecoveryKey(input);
    } catch (error) {
      const phrase = description.passphrase;
      if (phrase?.algorithm !== "m.pbkdf2" || typeof phrase.salt !== "string" || typeof phrase.iterations !== "number")
        throw new NetworkError(
          "rejected",
          `that is not a recovery key (${(error as Error).message}): it is 48 letters and digits in groups of four`,
          "invalid_recovery_key",
        );
      key = await deriveRecoveryKeyFromPassphrase(
        input,
        phrase.salt,
        phrase.iterations,
        typeof phrase.bits === "number" ? phrase.bits : undefined,
      );
    }
    return {
      read: async (name: string): Promise<string | undefined> => {
        const secret = await this.accountData<{ encrypted?: Record<string, unknown> }>(name);
        const payload = secret?.encrypted?.[keyID] as { iv: string; ciphertext: string; mac: string } | undefined;
        if (!payload) return undefined;
        try {
          return await decryptAESSecretStorageItem(payload, key, name);
        } catch {
          throw new NetworkError(
            "rejected",
            "that recovery key does not open this account's secret storage",
            "wrong_recovery_key",
          );
        }
      },
    };
  }

  /** Asks the user's other sessions to verify this one (they show "verify this session?"). */
  async requestVerification(): Promise<Crypto.VerificationRequest> {
    const { lib, machine } = this.parts;
    const identity = await machine.getIdentity(this.self);
    if (!identity || !("trustsOurOwnDevice" in identity))
      throw new NetworkError("rejected", "this account has no cross-signing identity to verify with", "no_identity");
    try {
      const [request, outgoing] = await (identity as Crypto.OwnUserIdentity).requestVerification([
        lib.VerificationMethod.SasV1,
      ]);
      await this.parts.send(outgoing as Crypto.ToDeviceRequest);
      return request;
    } finally {
      identity.free();
    }
  }

  /**
   * Goes on only with a session the user's identity signs: inboxd confirms its side as it shows the emoji (the
   * person compares on the other session), so a device the homeserver could add on its own must not be the one that
   * answers. Cancels the request and says so otherwise.
   */
  async answeredBySignedSession(request: Crypto.VerificationRequest): Promise<void> {
    const { machine } = this.parts;
    const other = request.otherDeviceId;
    const device = other ? await machine.getDevice(this.self, other) : undefined;
    const signed = device?.isCrossSignedByOwner() ?? false;
    device?.free();
    if (signed) return;
    await this.cancel(request);
    throw new NetworkError(
      "rejected",
      `the session that answered (${other?.toString() ?? "unknown"}) is not one your identity signs: compare emoji ` +
        "from a verified session, or use the recovery key",
      "verification_untrusted_session",
    );
  }

  /** Accepts an emoji comparison the other session started (nothing when inboxd started it, or accepted it). */
  async acceptSas(sas: Crypto.Sas): Promise<void> {
    const outgoing = sas.accept();
    if (outgoing) await this.parts.send(outgoing as Crypto.ToDeviceRequest);
  }

  /** Starts the emoji comparison on a request the other session accepted. */
  async startSas(request: Crypto.VerificationRequest): Promise<Crypto.Sas> {
    const started = await request.startSas();
    if (!started) throw new NetworkError("rejected", "the other session does not offer emoji verification", "no_sas");
    const [sas, outgoing] = started;
    await this.parts.send(outgoing as Crypto.ToDeviceRequest);
    return sas;
  }

  /** Confirms this side of the comparison (the person decides on the other session: see login.ts). */
  async confirmSas(sas: Crypto.Sas): Promise<void> {
    for (const outgoing of await sas.confirm()) await this.parts.send(outgoing as Crypto.ToDeviceRequest);
    await this.parts.commit();
  }

  async cancel(target: Crypto.VerificationRequest | Crypto.Sas): Promise<void> {
    const outgoing = target.cancel();
    if (outgoing) await this.parts.send(outgoing as Crypto.ToDeviceRequest).catch(() => undefined);
  }

  /**
   * After a verification by another session: asks it for the secrets this device lacks (the backup key; the
   * cross-signing keys, which the machine imports as they come). The answers arrive as to-device messages.
   */
  async requestSecrets(): Promise<void> {
    if (await this.parts.machine.requestMissingSecretsIfNeeded()) await this.parts.sendOutgoing();
  }

  /** The backup key another session sent this one, restored from; 0 while none has arrived. */
  async restoreFromGossip(progress?: Progress): Promise<number | undefined> {
    const { machine } = this.parts;
    const keys = await machine.getSecretsFromInbox(BACKUP_SECRET);
    const [key] = [...keys];
    if (!key) return undefined;
    const restored = await this.backup.restore(key, progress);
    await machine.deleteSecretsFromInbox(BACKUP_SECRET);
    return restored;
  }

  private async accountData<T>(type: string): Promise<T | undefined> {
    return this.parts.http
      .request<T>("GET", `/_matrix/client/v3/user/${seg(this.self.toString())}/account_data/${seg(type)}`)
      .catch((error) => {
        if (error instanceof MatrixError && error.errcode === "M_NOT_FOUND") return undefined;
        throw error;
      });
  }
}
