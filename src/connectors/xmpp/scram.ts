import ScramSha1 from "sasl-scram-sha-1";
import { NetworkError } from "../../bridges/connector.ts";

/**
 * What inboxd keeps to log in again without the password: SCRAM-SHA-1's ClientKey and ServerKey for the salt the
 * server uses (RFC 5802 §3). They let this client authenticate to this server only, and stop working when the
 * password (and with it the salt) changes; the password itself is never stored.
 */
export interface ScramKeys {
  mechanism: "SCRAM-SHA-1";
  salt: string;
  clientKey: string;
  serverKey: string;
}

interface ScramCache {
  salt: Uint8Array;
  clientKey: Uint8Array;
  serverKey: Uint8Array;
}

/** SASL credentials as the mechanism reads them: a password, or the cached keys (sasl-scram-sha-1's cache shape). */
export type ScramCredentials = {
  username: string;
  password?: string | null;
  onKeys?: (keys: ScramKeys) => void;
} & Partial<ScramCache>;

/**
 * sasl-scram-sha-1, reporting the keys it derived once a challenge is answered, so a login with the password can
 * leave only the keys behind. (The library computes them and keeps them on the instance; @xmpp/sasl creates the
 * instance and does not expose it.)
 */
export class KeyReportingScram extends (ScramSha1 as unknown as new () => {
  response(cred: ScramCredentials): Promise<string> | string;
  cache?: ScramCache;
}) {
  override async response(cred: ScramCredentials): Promise<string> {
    const out = await Promise.resolve(super.response(cred)).catch((error: unknown) => {
      // Keys only fit the salt they were made with; a new salt means the password changed.
      if (cred.password == null)
        throw new NetworkError(
          "rejected",
          "the saved credentials no longer fit: the password was changed",
          "invalid_credentials",
        );
      throw error;
    });
    if (this.cache?.clientKey && cred.onKeys)
      cred.onKeys({
        mechanism: "SCRAM-SHA-1",
        salt: toBase64(this.cache.salt),
        clientKey: toBase64(this.cache.clientKey),
        serverKey: toBase64(this.cache.serverKey),
      });
    return out;
  }
}

export function credentialsFromKeys(username: string, keys: ScramKeys): ScramCredentials {
  return {
    username,
    salt: fromBase64(keys.salt),
    clientKey: fromBase64(keys.clientKey),
    serverKey: fromBase64(keys.serverKey),
  };
}

function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}
