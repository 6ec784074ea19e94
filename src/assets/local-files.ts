/**
 * Files of the machine the server runs on, read for a client that names one by path: a chat picture
 * (`PATCH /v1/chats/{chatID}` `imgURL`), as the 5.0.0 document describes it. Only the daemon has them
 * (adapters/node/local-files.ts); a Worker has no file system and leaves `AssetConfig.localFiles` unset.
 */
export interface LocalFiles {
  /**
   * The bytes of the regular file at an absolute path, opened without following a link; throws
   * LocalFileRefusedError, saying which rule the file broke, when it is missing, unreadable, a link, not a regular
   * file, or larger than `maxBytes` (nothing past `maxBytes` is read).
   */
  read(path: string, maxBytes: number): Promise<Uint8Array>;
}

/** A local file refused, with the rule it broke as its message ("is a symbolic link", …). */
export class LocalFileRefusedError extends Error {}
