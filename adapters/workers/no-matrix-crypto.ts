import type { LoadCrypto } from "../../src/connectors/matrix/crypto/machine.ts";

/**
 * A Worker without Matrix end-to-end encryption, for a plan whose Worker size limit the crypto library's wasm
 * (7.8 MB) does not fit (docs/workers.md: `--alias`). Encrypted rooms are then shown but not read, as with a token
 * login.
 */
export const loadMatrixCrypto: LoadCrypto | undefined = undefined;
