import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { LocalFileRefusedError, type LocalFiles } from "../../src/assets/local-files.ts";

/**
 * The daemon's local files (src/assets/local-files.ts). The file is opened with O_NOFOLLOW, so a path whose last
 * part is a symbolic link is refused rather than followed, and O_NONBLOCK, so a FIFO cannot hang the read; what
 * was opened is checked to be a regular file before a byte of it is read.
 */
export const localFiles: LocalFiles = {
  async read(path, maxBytes) {
    if (!isAbsolute(path)) throw new LocalFileRefusedError("is not an absolute path");
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
      (error: NodeJS.ErrnoException) => {
        const why: Record<string, string> = {
          ENOENT: "does not exist",
          ENOTDIR: "does not exist (a part of the path is not a directory)",
          ELOOP: "is a symbolic link (links are not followed: name the file itself)",
          EACCES: "is not readable by the daemon",
          EPERM: "is not readable by the daemon",
          EISDIR: "is a directory, not a regular file",
        };
        throw new LocalFileRefusedError(why[error.code ?? ""] ?? `cannot be opened (${error.code ?? error.message})`);
      },
    );
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw new LocalFileRefusedError("is not a regular file");
      if (stat.size > maxBytes)
        throw new LocalFileRefusedError(`is larger than the ${maxBytes}-byte limit for a chat picture`);
      // One byte more than the size said is room to see that the file grew meanwhile (it is then refused).
      const buffer = new Uint8Array(stat.size + 1);
      let filled = 0;
      for (let n = -1; n !== 0 && filled < buffer.length; filled += n)
        n = (await handle.read(buffer, filled, buffer.length - filled)).bytesRead;
      if (filled > stat.size) throw new LocalFileRefusedError("changed while it was read");
      return buffer.subarray(0, filled);
    } finally {
      await handle.close();
    }
  },
};
