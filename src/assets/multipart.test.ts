import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.ts";
import { streamMultipart } from "./multipart.ts";

const enc = new TextEncoder();
const BOUNDARY = "----inboxdTestBoundary7MA4YWxkTrZu0gW";

interface Part {
  name: string;
  filename?: string;
  /** `filename*` (RFC 5987) instead of filename */
  filenameStar?: string;
  type?: string;
  content: Uint8Array | string;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function multipart(parts: Part[], { close = true, boundary = BOUNDARY } = {}): Uint8Array {
  const out: Uint8Array[] = [];
  for (const p of parts) {
    let disposition = `form-data; name="${p.name}"`;
    if (p.filename !== undefined) disposition += `; filename="${p.filename}"`;
    if (p.filenameStar !== undefined) disposition += `; filename*=UTF-8''${encodeURIComponent(p.filenameStar)}`;
    out.push(
      enc.encode(
        `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ""}\r\n`,
      ),
    );
    out.push(typeof p.content === "string" ? enc.encode(p.content) : p.content);
    out.push(enc.encode("\r\n"));
  }
  if (close) out.push(enc.encode(`--${boundary}--\r\n`));
  return concat(out);
}

/** A request whose body arrives in reads of the given sizes (cycled), one read per pull. */
function request(
  body: Uint8Array,
  sizes: number[] = [65_536],
  contentType = `multipart/form-data; boundary=${BOUNDARY}`,
): Request {
  let at = 0;
  let k = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (at >= body.length) return c.close();
        const n = Math.min(sizes[k++ % sizes.length], body.length - at);
        c.enqueue(body.slice(at, at + n));
        at += n;
      },
    },
    { highWaterMark: 0 },
  );
  return new Request("http://127.0.0.1/v1/assets/upload", {
    method: "POST",
    body: stream,
    headers: { "content-type": contentType },
    duplex: "half",
  } as RequestInit);
}

/** A consumer that collects everything it is given. */
async function collect(content: AsyncIterable<Uint8Array>) {
  const pieces: Uint8Array[] = [];
  for await (const c of content) pieces.push(c.slice());
  return concat(pieces);
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.from(a).equals(Buffer.from(b));

function tricky(size: number): Uint8Array {
  // Binary content full of near-delimiters: CRLF, "--", a boundary with its last character changed, and the
  // boundary itself not preceded by CRLF (only "\r\n--" + boundary delimits a part).
  const near = enc.encode(`\r\n--${BOUNDARY.slice(0, -1)}X\r\n-\rx--${BOUNDARY}\r\n-`);
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (i * 37 + 11) & 0xff;
  for (let at = 100; at + near.length < size; at += 997) out.set(near, at);
  return out;
}

async function refusal(work: Promise<unknown>): Promise<{ status: number; code: string }> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return { status: error.status, code: error.code };
}

describe("streamMultipart: content across part and read boundaries", () => {
  const file = tricky(300_000);
  const body = multipart([
    { name: "fileName", content: "naïve photo.png" },
    { name: "file", filename: "orig.bin", type: "image/png", content: file },
    { name: "mimeType", content: "image/png" },
  ]);

  for (const [label, sizes] of [
    ["one read", [body.length]],
    ["64 KiB reads", [65_536]],
    ["odd reads (1, 2, 3, 7, 13, 4093 bytes)", [1, 2, 3, 7, 13, 4093]],
    ["reads that split the closing boundary", [body.length - BOUNDARY.length, 5, 5, 1000]],
  ] as const)
    it(`${label}: the file arrives byte-exact; fields before and after it are collected`, async () => {
      const result = await streamMultipart(
        request(body, [...sizes]),
        "file",
        { maxFileBytes: 10_000_000 },
        async (content, info) => ({ bytes: await collect(content), info }),
      );
      expect(same(result.file.bytes, file)).toBe(true);
      expect(result.file.info).toMatchObject({ name: "file", filename: "orig.bin", contentType: "image/png" });
      expect(result.fileName).toBe("orig.bin");
      expect(result.fileType).toBe("image/png");
      expect(result.fields).toEqual({ fileName: "naïve photo.png", mimeType: "image/png" });
    });

  it("byte-by-byte delivery of a small body", async () => {
    const small = tricky(3000);
    const result = await streamMultipart(
      request(multipart([{ name: "file", filename: "s", content: small }]), [1]),
      "file",
      { maxFileBytes: 10_000 },
      collect,
    );
    expect(same(result.file, small)).toBe(true);
  });

  it("an empty file part is an empty file (not a missing one)", async () => {
    const result = await streamMultipart(
      request(multipart([{ name: "file", filename: "empty.txt", content: "" }])),
      "file",
      { maxFileBytes: 10_000 },
      collect,
    );
    expect(result.file.length).toBe(0);
    expect(result.fileName).toBe("empty.txt");
  });

  it("a filename* (RFC 5987) name is decoded", async () => {
    const result = await streamMultipart(
      request(multipart([{ name: "file", filenameStar: "résumé €.pdf", content: "x" }])),
      "file",
      { maxFileBytes: 10_000 },
      collect,
    );
    expect(result.fileName).toBe("résumé €.pdf");
  });

  it("only the first part named file is consumed; other file parts are read past", async () => {
    const body2 = multipart([
      { name: "other", filename: "o.bin", content: tricky(5000) },
      { name: "file", filename: "first", content: "first" },
      { name: "file", filename: "second", content: "second" },
      { name: "fileName", content: "after.txt" },
    ]);
    let calls = 0;
    const result = await streamMultipart(
      request(body2, [17]),
      "file",
      { maxFileBytes: 100_000 },
      async (content) => (calls++, collect(content)),
    );
    expect(calls).toBe(1);
    expect(new TextDecoder().decode(result.file)).toBe("first");
    expect(result.fileName).toBe("first");
    expect(result.fields).toEqual({ fileName: "after.txt" });
  });
});

describe("streamMultipart: backpressure", () => {
  it("100 MB through a slow consumer: the body is read only as fast as it is consumed, and arrives intact", async () => {
    const total = 100 * 1024 * 1024;
    const read = 64 * 1024;
    const head = enc.encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`);
    const tail = enc.encode(`\r\n--${BOUNDARY}--\r\n`);
    const sent = createHash("sha256");
    let pulled = 0; // file bytes handed to the request body so far
    let n = 0;
    const stream = new ReadableStream<Uint8Array>(
      {
        start(c) {
          c.enqueue(head);
        },
        pull(c) {
          if (pulled >= total) {
            c.enqueue(tail);
            return c.close();
          }
          const chunk = new Uint8Array(read).fill(n & 0xff);
          new DataView(chunk.buffer).setUint32(0, n++); // every read distinct
          sent.update(chunk);
          pulled += chunk.length;
          c.enqueue(chunk);
        },
      },
      { highWaterMark: 0 },
    );
    const req = new Request("http://127.0.0.1/v1/assets/upload", {
      method: "POST",
      body: stream,
      headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
      duplex: "half",
    } as RequestInit);
    let consumed = 0;
    let maxAhead = 0;
    const got = createHash("sha256");
    const result = await streamMultipart(req, "file", { maxFileBytes: total + 1024 * 1024 }, async (content) => {
      let k = 0;
      for await (const c of content) {
        maxAhead = Math.max(maxAhead, pulled - consumed);
        got.update(c);
        consumed += c.length;
        // Slow: a storage write every ~16 pieces that takes a few milliseconds.
        if (++k % 16 === 0) {
          await new Promise((r) => setTimeout(r, 2));
        }
      }
      return consumed;
    });
    expect(result.file).toBe(total);
    expect(got.digest("hex")).toBe(sent.digest("hex"));
    // What was read from the network but not yet taken by the consumer: about one read (plus a boundary's worth
    // held back by the parser), never megabytes.
    // (Measured rather than memoryUsage(): garbage not yet collected would blur a heap number.)
    expect(maxAhead).toBeLessThanOrEqual(4 * read);
  }, 60_000);
});

describe("streamMultipart: refusals", () => {
  it("415 when the content type is not multipart/form-data, or there is no body", async () => {
    const body = multipart([{ name: "file", filename: "a", content: "x" }]);
    expect(
      await refusal(
        streamMultipart(request(body, [100], "application/json"), "file", { maxFileBytes: 10_000 }, collect),
      ),
    ).toEqual({ status: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
    expect(
      await refusal(
        streamMultipart(request(body, [100], "multipart/mixed; boundary=x"), "file", { maxFileBytes: 10_000 }, collect),
      ),
    ).toMatchObject({ status: 415 });
    const empty = new Request("http://127.0.0.1/", {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
    });
    expect(await refusal(streamMultipart(empty, "file", { maxFileBytes: 10_000 }, collect))).toMatchObject({
      status: 415,
    });
  });

  it("400 without a part named file (fields only, or a file under another name)", async () => {
    for (const parts of [
      [{ name: "fileName", content: "a.txt" }],
      [{ name: "upload", filename: "a.txt", content: "abc" }],
    ] as Part[][]) {
      let consumed = false;
      const r = await refusal(
        streamMultipart(request(multipart(parts)), "file", { maxFileBytes: 10_000 }, async () => (consumed = true)),
      );
      expect(r).toEqual({ status: 400, code: "INVALID_REQUEST" });
      expect(consumed).toBe(false);
    }
  });

  it("400 when the multipart boundary parameter is missing", async () => {
    const body = multipart([{ name: "file", filename: "a", content: "x" }]);
    expect(
      await refusal(
        streamMultipart(request(body, [100], "multipart/form-data"), "file", { maxFileBytes: 10_000 }, collect),
      ),
    ).toMatchObject({ status: 400 });
  });

  it("413 when the file exceeds maxFileBytes; the consumer sees the failure (so it can clean up)", async () => {
    let consumerError: unknown;
    const body = multipart([{ name: "file", filename: "big", content: tricky(200_000) }]);
    const r = await refusal(
      streamMultipart(request(body, [4096]), "file", { maxFileBytes: 100_000 }, async (content) => {
        try {
          return await collect(content);
        } catch (error) {
          consumerError = error;
          throw error;
        }
      }),
    );
    expect(r).toEqual({ status: 413, code: "PAYLOAD_TOO_LARGE" });
    expect(consumerError).toBeDefined();
  });

  it("a file of exactly maxFileBytes is accepted (the part's own headers do not count against the file)", async () => {
    const file = tricky(100_000);
    const body = multipart([
      {
        name: "file",
        filename: "a-rather-long-file-name-to-make-the-part-headers-longer.bin",
        type: "application/octet-stream",
        content: file,
      },
    ]);
    const result = await streamMultipart(request(body), "file", { maxFileBytes: 100_000 }, collect);
    expect(result.file.length).toBe(100_000);
  });

  it("400 for a truncated body (no closing boundary); the consumer sees the failure instead of a short file", async () => {
    let consumerError: unknown;
    const body = multipart([{ name: "file", filename: "t", content: tricky(50_000) }], { close: false }).subarray(
      0,
      30_000,
    );
    const r = await refusal(
      streamMultipart(request(body, [4096]), "file", { maxFileBytes: 100_000 }, async (content) => {
        try {
          return await collect(content);
        } catch (error) {
          consumerError = error;
          throw error;
        }
      }),
    );
    expect(r.status).toBe(400);
    expect(consumerError).toBeDefined();
  });

  it("a consumer that fails after the body was read: its error is the outcome", async () => {
    const body = multipart([{ name: "file", filename: "a", content: "abc" }]);
    await expect(
      streamMultipart(request(body), "file", { maxFileBytes: 10_000 }, async (content) => {
        await collect(content);
        throw new Error("storage is full");
      }),
    ).rejects.toThrow("storage is full");
  });

  // Run in a child process: if streamMultipart spins, it spins in microtasks and would freeze this test runner.
  it("a consumer that fails while the body is still arriving: streamMultipart settles with that error, and the event loop keeps running", async () => {
    const script = fileURLToPath(new URL("../../test/assets/children/multipart-consumer-fails.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const code = await new Promise<number | string>((resolve) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        resolve("killed after 10 s: streamMultipart never settled");
      }, 10_000);
      child.on("exit", (c) => {
        clearTimeout(timer);
        resolve(c ?? -1);
      });
    });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ settled: "rejected", message: "storage write failed", timerRan: true });
  }, 30_000);
});
