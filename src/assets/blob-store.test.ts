import { createStorage, type Storage } from "unstorage";
import { describe, expect, it } from "vitest";
import { BlobStore, BlobTooLargeError, CHUNK_BYTES } from "./blob-store.ts";

const MiB = 1024 * 1024;
const byteAt = (i: number) => (i ^ (i >>> 8) ^ (i >>> 16) ^ (i >>> 24)) & 0xff;
function bytesOf(start: number, end: number): Uint8Array {
  const out = new Uint8Array(end - start);
  for (let i = start; i < end; i++) out[i - start] = byteAt(i);
  return out;
}

/** The generated file of `size` bytes in pieces of the given sizes (cycled). */
async function* pieces(size: number, sizes: number[] = [65_521]) {
  let at = 0;
  for (let k = 0; at < size; k++) {
    const n = Math.min(sizes[k % sizes.length], size - at);
    yield bytesOf(at, at + n);
    at += n;
  }
}

/** Memory storage that counts raw reads and writes (a thin wrapper: every call reaches the real driver). */
function countingStorage() {
  const storage = createStorage();
  const counts = { get: 0, set: 0, remove: 0 };
  const wrapped = new Proxy(storage, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop === "getItemRaw")
        return (...a: Parameters<Storage["getItemRaw"]>) => (counts.get++, storage.getItemRaw(...a));
      if (prop === "setItemRaw")
        return (...a: Parameters<Storage["setItemRaw"]>) => (counts.set++, storage.setItemRaw(...a));
      if (prop === "removeItem")
        return (...a: Parameters<Storage["removeItem"]>) => (counts.remove++, storage.removeItem(...a));
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Storage;
  return { storage, wrapped, counts };
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const p of stream as unknown as AsyncIterable<Uint8Array>) parts.push(p);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const equalBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.from(a).equals(Buffer.from(b));

describe("BlobStore.write: chunking", () => {
  it("CHUNK_BYTES is 1 MiB", () => expect(CHUNK_BYTES).toBe(MiB));

  for (const [label, size, chunks, last] of [
    ["0 bytes", 0, 0, 0],
    ["1 byte", 1, 1, 1],
    ["1 MiB - 1", MiB - 1, 1, MiB - 1],
    ["exactly 1 MiB", MiB, 1, MiB],
    ["1 MiB + 1", MiB + 1, 2, 1],
    ["exactly 3 MiB", 3 * MiB, 3, MiB],
    ["3 MiB + 12345", 3 * MiB + 12_345, 4, 12_345],
  ] as const)
    it(`${label} → ${chunks} chunk(s) of 1 MiB, the last of ${last}`, async () => {
      const storage = createStorage();
      const store = new BlobStore(storage);
      const result = await store.write("blob1", pieces(size, [65_521, 1, 300_000, 7]), { limit: 10 * MiB });
      expect(result.size).toBe(size);
      expect(result.chunks).toBe(chunks);
      expect((await storage.getKeys()).sort()).toEqual(Array.from({ length: chunks }, (_, n) => `blob1_${n}`).sort());
      for (let n = 0; n < chunks; n++) {
        const raw = (await storage.getItemRaw<Uint8Array>(`blob1_${n}`))!;
        expect(raw.length, `chunk ${n}`).toBe(n === chunks - 1 ? last : MiB);
        expect(equalBytes(raw, bytesOf(n * MiB, n * MiB + raw.length)), `chunk ${n} content`).toBe(true);
      }
    });

  it("one piece larger than several chunks is split at exact 1 MiB boundaries", async () => {
    const storage = createStorage();
    const result = await new BlobStore(storage).write("big", pieces(2 * MiB + 5, [2 * MiB + 5]), { limit: 10 * MiB });
    expect(result.chunks).toBe(3);
    expect(((await storage.getItemRaw<Uint8Array>("big_0")) as Uint8Array).length).toBe(MiB);
    expect(((await storage.getItemRaw<Uint8Array>("big_1")) as Uint8Array).length).toBe(MiB);
    expect(
      equalBytes((await storage.getItemRaw<Uint8Array>("big_2")) as Uint8Array, bytesOf(2 * MiB, 2 * MiB + 5)),
    ).toBe(true);
  });

  it("skips empty pieces", async () => {
    async function* source() {
      yield new Uint8Array(0);
      yield bytesOf(0, 10);
      yield new Uint8Array(0);
      yield bytesOf(10, 20);
    }
    const storage = createStorage();
    const result = await new BlobStore(storage).write("e", source(), { limit: 100 });
    expect(result).toMatchObject({ size: 20, chunks: 1 });
    expect(equalBytes((await storage.getItemRaw<Uint8Array>("e_0")) as Uint8Array, bytesOf(0, 20))).toBe(true);
  });

  it("copies each piece: a source that reuses its buffer does not corrupt what was stored", async () => {
    const buffer = new Uint8Array(100_000);
    async function* reusing() {
      for (let at = 0; at < 3 * MiB; at += buffer.length) {
        const n = Math.min(buffer.length, 3 * MiB - at);
        buffer.set(bytesOf(at, at + n));
        yield buffer.subarray(0, n);
        buffer.fill(0xee); // the next read overwrites it
      }
    }
    const store = new BlobStore(createStorage());
    await store.write("r", reusing(), { limit: 10 * MiB });
    expect(equalBytes(await readAll(store.read("r", 0, 3 * MiB - 1)), bytesOf(0, 3 * MiB))).toBe(true);
  });

  it("keeps the first headBytes (default 256 KiB) for inspection, across pieces", async () => {
    const store = new BlobStore(createStorage());
    const a = await store.write("h1", pieces(MiB, [1000, 3]), { limit: 2 * MiB });
    expect(equalBytes(a.head, bytesOf(0, 256 * 1024))).toBe(true);
    const b = await store.write("h2", pieces(5000, [7]), { limit: 2 * MiB, headBytes: 100 });
    expect(equalBytes(b.head, bytesOf(0, 100))).toBe(true);
    const c = await store.write("h3", pieces(50), { limit: 2 * MiB });
    expect(equalBytes(c.head, bytesOf(0, 50))).toBe(true);
  });

  it("writes as it goes: at most one chunk is buffered (a chunk is stored before the source is read further)", async () => {
    const { wrapped, counts } = countingStorage();
    const seen: number[] = [];
    async function* watched() {
      for (let at = 0; at < 4 * MiB; at += 256 * 1024) {
        // Before piece k is produced, every full chunk of the bytes already handed over was stored.
        seen.push(counts.set - Math.floor(at / MiB));
        yield bytesOf(at, at + 256 * 1024);
      }
    }
    await new BlobStore(wrapped).write("w", watched(), { limit: 8 * MiB });
    expect(seen.every((d) => d === 0)).toBe(true);
    expect(counts.set).toBe(4);
  });
});

describe("BlobStore.write: limit and failures", () => {
  it("a blob of exactly the limit is accepted", async () => {
    const result = await new BlobStore(createStorage()).write("x", pieces(2 * MiB + 1), { limit: 2 * MiB + 1 });
    expect(result.size).toBe(2 * MiB + 1);
  });

  it("one byte over the limit: BlobTooLargeError, and every chunk already written is removed", async () => {
    const storage = createStorage();
    await storage.setItemRaw("other_0", new Uint8Array([1, 2, 3])); // someone else's blob stays
    const store = new BlobStore(storage);
    const error = await store.write("x", pieces(3 * MiB + 1), { limit: 3 * MiB }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlobTooLargeError);
    expect((error as BlobTooLargeError).limit).toBe(3 * MiB);
    expect(await storage.getKeys()).toEqual(["other_0"]);
  });

  it("far over the limit: stops reading the source soon after the limit", async () => {
    const storage = createStorage();
    let produced = 0;
    async function* endless() {
      for (;;) {
        produced += 65_536;
        yield new Uint8Array(65_536);
      }
    }
    await expect(new BlobStore(storage).write("x", endless(), { limit: 2 * MiB })).rejects.toBeInstanceOf(
      BlobTooLargeError,
    );
    expect(produced).toBeLessThanOrEqual(2 * MiB + 65_536);
    expect(await storage.getKeys()).toEqual([]);
  });

  it("a source that fails midway: the error is rethrown and the written chunks are removed", async () => {
    const storage = createStorage();
    async function* failing() {
      yield* pieces(2 * MiB + 100);
      throw new Error("connection reset");
    }
    await expect(new BlobStore(storage).write("f", failing(), { limit: 10 * MiB })).rejects.toThrow("connection reset");
    expect(await storage.getKeys()).toEqual([]);
  });

  it("a storage write that fails: the error is rethrown and earlier chunks are removed", async () => {
    const storage = createStorage();
    let writes = 0;
    const flaky = new Proxy(storage, {
      get(target, prop, receiver) {
        if (prop === "setItemRaw")
          return async (key: string, value: Uint8Array) => {
            if (++writes === 3) throw new Error("disk full");
            return storage.setItemRaw(key, value);
          };
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Storage;
    await expect(new BlobStore(flaky).write("d", pieces(5 * MiB), { limit: 10 * MiB })).rejects.toThrow("disk full");
    expect(await storage.getKeys()).toEqual([]);
  });
});

describe("BlobStore.read", () => {
  const size = 3 * MiB + 12_345;
  const setup = async () => {
    const counting = countingStorage();
    const store = new BlobStore(counting.wrapped);
    await store.write("r", pieces(size, [99_991]), { limit: 10 * MiB });
    counting.counts.get = 0;
    return { store, counts: counting.counts };
  };

  const ranges: [number, number][] = [
    [0, 0],
    [0, size - 1],
    [0, MiB - 1],
    [MiB - 1, MiB],
    [MiB, MiB],
    [MiB, 2 * MiB - 1],
    [MiB - 1, 2 * MiB],
    [12_345, 2 * MiB + 777],
    [3 * MiB, size - 1],
    [size - 1, size - 1],
    [size - 100, size - 1],
  ];
  for (const [start, end] of ranges)
    it(`[${start}, ${end}] reads exactly those bytes, touching only the chunks they span`, async () => {
      const { store, counts } = await setup();
      const got = await readAll(store.read("r", start, end));
      expect(got.length).toBe(end - start + 1);
      expect(equalBytes(got, bytesOf(start, end + 1))).toBe(true);
      expect(counts.get).toBe(Math.floor(end / MiB) - Math.floor(start / MiB) + 1);
    });

  it("is lazy: nothing is read until pulled, then one chunk per pull", async () => {
    const { store, counts } = await setup();
    const reader = store.read("r", 0, size - 1).getReader();
    await new Promise((r) => setTimeout(r, 10));
    expect(counts.get).toBe(0);
    const first = await reader.read();
    expect(first.value!.length).toBe(MiB);
    expect(counts.get).toBe(1);
    await reader.read();
    expect(counts.get).toBe(2);
    await reader.cancel();
  });

  it("a missing chunk makes the stream fail (not end early with fewer bytes)", async () => {
    const storage = createStorage();
    const store = new BlobStore(storage);
    await store.write("m", pieces(3 * MiB), { limit: 10 * MiB });
    await storage.removeItem("m_1");
    await expect(readAll(store.read("m", 0, 3 * MiB - 1))).rejects.toThrow(/missing chunk 1/);
  });

  it("remove() deletes every chunk of that blob only", async () => {
    const storage = createStorage();
    const store = new BlobStore(storage);
    await store.write("a", pieces(2 * MiB + 1), { limit: 10 * MiB });
    await store.write("ab", pieces(10), { limit: 10 * MiB });
    await store.remove("a", 3);
    expect(await storage.getKeys()).toEqual(["ab_0"]);
  });
});
