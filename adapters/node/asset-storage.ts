import { constants } from "node:fs";
import { lstat, open } from "node:fs/promises";
import { join, resolve } from "node:path";
import { createStorage, type Driver, type Storage } from "unstorage";
import fsLite from "unstorage/drivers/fs-lite";
import { NotAStoredFileError } from "../../src/assets/blob-store.ts";

/**
 * Asset bytes on the daemon: files under `<data dir>/assets` (unstorage fs-lite), written and read in 1 MiB chunks.
 * Nothing under that directory is followed through a symlink, for reading or writing: a link planted there (by anyone
 * with write access to the data directory), or anything else that is not a regular file (a FIFO, a directory), is
 * refused with NotAStoredFileError, which the API answers as a 403 that says so. Files are opened with O_NOFOLLOW
 * (and O_NONBLOCK, so a FIFO cannot hang the read), so a link swapped in after a check is not followed either.
 */
export function assetStorage(dir: string): Storage {
  const base = resolve(dir);
  const driver = fsLite({ base });
  const pathOf = (key: string) => join(base, ...key.split(":").filter(Boolean));
  /** False if the key's file is missing; throws if it, or a directory between it and `base`, is not what the store writes. */
  async function present(key: string): Promise<boolean> {
    const parts = key.split(":").filter(Boolean);
    for (let i = 1; i <= parts.length; i++) {
      const stat = await lstat(join(base, ...parts.slice(0, i))).catch(() => undefined);
      if (!stat) return false;
      const last = i === parts.length;
      if (stat.isSymbolicLink() || !(last ? stat.isFile() : stat.isDirectory()))
        throw new NotAStoredFileError(pathOf(key));
    }
    return true;
  }
  async function readRaw(key: string): Promise<Buffer | null> {
    if (!(await present(key))) return null;
    const handle = await open(pathOf(key), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return null;
        if (error.code === "ELOOP") throw new NotAStoredFileError(pathOf(key));
        throw error;
      },
    );
    if (!handle) return null;
    try {
      if (!(await handle.stat()).isFile()) throw new NotAStoredFileError(pathOf(key));
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }
  const guarded: Driver = {
    ...driver,
    name: "fs-lite-no-symlinks",
    hasItem: (key) => present(key),
    getItem: async (key) => (await readRaw(key))?.toString("utf8") ?? null,
    getItemRaw: (key) => readRaw(key),
    setItem: async (key, value, opts) => {
      await present(key);
      return driver.setItem!(key, value, opts);
    },
    setItemRaw: async (key, value, opts) => {
      await present(key);
      return driver.setItemRaw!(key, value, opts);
    },
  };
  return createStorage({ driver: guarded });
}
