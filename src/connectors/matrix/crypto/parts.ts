import type * as Crypto from "@matrix-org/matrix-sdk-crypto-wasm";
import type { MatrixHttp } from "../http.ts";

/** What the device needs of its crypto machine (MatrixCrypto hands these to trust.ts and backup.ts). */
export interface CryptoParts {
  lib: typeof Crypto;
  machine: Crypto.OlmMachine;
  http: MatrixHttp;
  send(request: Crypto.OutgoingRequest | Crypto.ToDeviceRequest | Crypto.SignatureUploadRequest): Promise<void>;
  sendOutgoing(): Promise<void>;
  /** Makes what the store changed durable. */
  commit(): Promise<void>;
  /** Room keys imported from the backup: events waiting for them can be read. */
  keysArrived(sessionIDs: string[]): void;
}
