import type { LoadCrypto } from "../../src/connectors/matrix/crypto/machine.ts";

/**
 * matrix-sdk-crypto on Node: the package reads its wasm from beside itself, so it stays out of the bundle
 * (build.ts) and is imported on first use, when a Matrix account that encrypts connects (the wasm is 8 MB).
 */
export const loadMatrixCrypto: LoadCrypto = async () => {
  const lib = await import("@matrix-org/matrix-sdk-crypto-wasm");
  await lib.initAsync();
  return lib;
};
