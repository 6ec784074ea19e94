import { lstat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { createStorage, type Driver, type Storage } from "unstorage";
import fsLite from "unstorage/drivers/fs-lite";

/**
 * Asset bytes on the daemon: files under `<data dir>/assets` (unstorage fs-lite), written and read in 1 MiB chunks.
 * Nothing under that directory is followed through a symlink, for reading or writing: a link planted there (by
 * anyone with write access to the data directory) reads as a missing file instead of serving what it points at.
 */
export function assetStorage(dir: string): Storage {
  const base = resolve(dir);
  const driver = fsLite({ base });
  const pathOf = (key: string) => join(base, key.replace(/:/g, "/"));
  /** True if the file or any directory between it and `base` is a symlink. */
  async function linked(key: string): Promise<boolean> {
    const parts = key.split(":").filter(Boolean);
    for (let i = 1; i <= parts.length; i++) {
      const stat = await lstat(join(base, ...parts.slice(0, i))).catch(() => undefined);
      if (!stat) return false; // missing: fs-lite answers that itself
      if (stat.isSymbolicLink()) return true;
    }
    return false;
  }
  const refuseLinks = (key: string) =>
    linked(key).then((isLink) => {
      if (isLink) throw new Error(`refusing a symlink in the asset directory: ${pathOf(key)}`);
    });
  const guarded: Driver = {
    ...driver,
    name: "fs-lite-no-symlinks",
    hasItem: async (key, opts) => !(await linked(key)) && driver.hasItem(key, opts),
    getItem: async (key, opts) => ((await linked(key)) ? null : driver.getItem(key, opts)),
    getItemRaw: async (key, opts) => ((await linked(key)) ? null : driver.getItemRaw!(key, opts)),
    setItem: async (key, value, opts) => {
      await refuseLinks(key);
      return driver.setItem!(key, value, opts);
    },
    setItemRaw: async (key, value, opts) => {
      await refuseLinks(key);
      return driver.setItemRaw!(key, value, opts);
    },
  };
  return createStorage({ driver: guarded });
}
