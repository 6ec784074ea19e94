/**
 * The built web inbox and API reference (web/dist/assets.js), imported on their first request rather than at
 * start-up: they are about 1.9 MB of strings, two fifths of the daemon's bundle, and most starts of the daemon never
 * serve a page. The daemon's build leaves them in a file of their own beside the bundle (adapters/node/build.ts);
 * the Worker's bundle carries them inline, where this costs nothing.
 */
type Built = typeof import("../../web/dist/assets.js");

let loading: Promise<Built> | undefined;

/** A failed import (the file beside the daemon's bundle missing) is tried again on the next request. */
export const webAssets = (): Promise<Built> =>
  (loading ??= import("../../web/dist/assets.js").catch((error: unknown) => {
    loading = undefined;
    throw error;
  }));
