/** wasm-bindgen's generated bindings of matrix-sdk-crypto, imported by path (matrix-crypto.ts says why). */
declare module "*/matrix_sdk_crypto_wasm_bg.js";
