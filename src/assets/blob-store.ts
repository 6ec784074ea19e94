import type { Storage } from "unstorage";

/**
 * Asset bytes as fixed-size raw items (`<id>_<n>`, 1 MiB each; flat keys, so a file-backed store keeps no
 * per-asset directory behind when an asset is removed) in an unstorage Storage — files under the data
 * directory on the daemon, R2 in the Worker. Chunking is what keeps memory flat: an upload is written and a
 * download is read one chunk at a time, whatever the file's size.
 */
export const CHUNK_BYTES = 1024 * 1024;

export class BlobTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`larger than ${limit} bytes`);
  }
}

/**
 * Thrown by a storage whose items are files (the daemon's, adapters/node/asset-storage.ts) for an item that is not a
 * regular file of the store — a symlink planted there, a FIFO, a directory — instead of reading through it.
 */
export class NotAStoredFileError extends Error {
  constructor(readonly path: string) {
    super(`not a regular file of the asset store (a symlink or another kind of file): ${path}`);
  }
}

/** A chunk of a blob that is not in the store (removed from under the daemon). */
export class MissingChunkError extends Error {}

export class BlobStore {
  constructor(private readonly storage: Storage) {}

  /**
   * Consumes `source` into blob `id`. Keeps the first `headBytes` in memory for inspection. On any error (or the
   * limit), removes what was written and rethrows.
   */
  async write(
    id: string,
    source: AsyncIterable<Uint8Array>,
    options: { limit: number; headBytes?: number },
  ): Promise<{ size: number; chunks: number; head: Uint8Array }> {
    const headLimit = options.headBytes ?? 256 * 1024;
    let head = new Uint8Array(0);
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    let size = 0;
    let chunks = 0;
    const flush = async (final: boolean) => {
      while (pendingBytes >= CHUNK_BYTES || (final && pendingBytes > 0)) {
        const take = Math.min(CHUNK_BYTES, pendingBytes);
        const out = new Uint8Array(take);
        let filled = 0;
        while (filled < take) {
          const first = pending[0];
          const n = Math.min(first.length, take - filled);
          out.set(first.subarray(0, n), filled);
          filled += n;
          if (n === first.length) pending.shift();
          else pending[0] = first.subarray(n);
        }
        pendingBytes -= take;
        await this.storage.setItemRaw(chunkKey(id, chunks++), out);
      }
    };
    try {
      for await (const piece of source) {
        if (piece.length === 0) continue;
        size += piece.length;
        if (size > options.limit) throw new BlobTooLargeError(options.limit);
        if (head.length < headLimit) {
          const merged = new Uint8Array(Math.min(headLimit, head.length + piece.length));
          merged.set(head);
          merged.set(piece.subarray(0, merged.length - head.length), head.length);
          head = merged;
        }
        // Copy: the source may reuse its buffer for the next piece.
        pending.push(piece.slice());
        pendingBytes += piece.length;
        await flush(false);
      }
      await flush(true);
      return { size, chunks, head };
    } catch (error) {
      pending = [];
      await this.remove(id, chunks + 1);
      throw error;
    }
  }

  /**
   * Makes sure every chunk holding bytes [start, end] is in the store, so that a stream of them does not break off
   * after an answer has begun: throws MissingChunkError, or the storage's NotAStoredFileError.
   */
  async check(id: string, start: number, end: number): Promise<void> {
    for (let n = Math.floor(start / CHUNK_BYTES); n <= Math.floor(end / CHUNK_BYTES); n++)
      if (!(await this.storage.hasItem(chunkKey(id, n))))
        throw new MissingChunkError(`asset ${id} is missing chunk ${n}`);
  }

  /** Streams bytes [start, end] (inclusive) of a blob, reading one chunk at a time on demand. */
  read(id: string, start: number, end: number): ReadableStream<Uint8Array> {
    let next = Math.floor(start / CHUNK_BYTES);
    const last = Math.floor(end / CHUNK_BYTES);
    const storage = this.storage;
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          if (next > last) return controller.close();
          const raw = await storage.getItemRaw<Uint8Array | ArrayBuffer>(chunkKey(id, next));
          if (!raw) return controller.error(new Error(`asset ${id} is missing chunk ${next}`));
          const bytes = raw instanceof Uint8Array ? raw : new Uint8Array(raw);
          const offset = next * CHUNK_BYTES;
          const from = Math.max(0, start - offset);
          const to = Math.min(bytes.length, end - offset + 1);
          next++;
          controller.enqueue(bytes.subarray(from, to));
          if (next > last) controller.close();
        },
      },
      { highWaterMark: 0 },
    );
  }

  async remove(id: string, chunks: number): Promise<void> {
    for (let n = 0; n < chunks; n++) await this.storage.removeItem(chunkKey(id, n));
  }
}

const chunkKey = (id: string, n: number) => `${id}_${n}`;
