import type { CryptoLib, LoadCrypto } from "../../src/connectors/matrix/crypto/machine.ts";
// The package's generated bindings and its wasm, by path: its exports map offers only entry points that fetch the
// wasm by URL (the browser's) or read it from disk (Node's), and a Worker may do neither. workerd imports a .wasm
// file as a compiled WebAssembly.Module (wrangler's default rule; the test harness bundles it the same way), and
// compiling wasm from bytes at run time is not allowed there.
import * as bindings from "../../node_modules/@matrix-org/matrix-sdk-crypto-wasm/pkg/matrix_sdk_crypto_wasm_bg.js";
// @ts-expect-error: the package's .wasm.d.ts types the instance's exports; workerd hands over the compiled module.
import wasm from "../../node_modules/@matrix-org/matrix-sdk-crypto-wasm/pkg/matrix_sdk_crypto_wasm_bg.wasm";

let loaded: CryptoLib | undefined;

/** matrix-sdk-crypto in workerd: the module wasm-bindgen generated, instantiated once per isolate. */
export const loadMatrixCrypto: LoadCrypto = async () => {
  if (loaded) return loaded;
  // fake-indexeddb (the crypto store's IndexedDB, see journal.ts) schedules with setImmediate where it exists, and
  // otherwise with scheduler.postTask whenever a global `scheduler` exists: workerd has one, without postTask.
  const g = globalThis as { setImmediate?: (run: () => void) => unknown };
  g.setImmediate ??= (run) => setTimeout(run, 0);
  const lib = bindings as unknown as CryptoLib & { __wbg_set_wasm(exports: WebAssembly.Exports): void };
  const instance = new WebAssembly.Instance(wasm as WebAssembly.Module, {
    "./matrix_sdk_crypto_wasm_bg.js": bindings as unknown as WebAssembly.ModuleImports,
  });
  lib.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as () => void)();
  loaded = lib;
  return lib;
};
