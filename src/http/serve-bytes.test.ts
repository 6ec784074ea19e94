import { describe, expect, it } from "vitest";
import { serveBytes, type ServedBytes } from "./serve-bytes.ts";

/**
 * A file of `size` bytes whose byte i is `i & 0xff`; `reads` records every read(start, end) the server made, `checks`
 * every check(start, end).
 */
function file(size: number, extra: Partial<ServedBytes> = {}) {
  const reads: [number, number][] = [];
  const checks: [number, number][] = [];
  const bytes: ServedBytes = {
    size,
    async check(start, end) {
      checks.push([start, end]);
    },
    mimeType: "image/png",
    etag: `"abc-${size}"`,
    lastModified: Date.UTC(2025, 0, 2, 3, 4, 5, 678),
    fileName: "photo.png",
    read(start, end) {
      reads.push([start, end]);
      const out = new Uint8Array(end - start + 1);
      for (let i = start; i <= end; i++) out[i - start] = i & 0xff;
      // Two pieces, so that a consumer joining them is exercised too.
      const half = Math.floor(out.length / 2);
      return new ReadableStream({
        start(c) {
          if (half) c.enqueue(out.subarray(0, half));
          c.enqueue(out.subarray(half));
          c.close();
        },
      });
    },
    ...extra,
  };
  return { bytes, reads, checks };
}

const expected = (start: number, end: number) => Array.from({ length: end - start + 1 }, (_, k) => (start + k) & 0xff);

async function serve(
  size: number,
  headers: Record<string, string> = {},
  method = "GET",
  extra: Partial<ServedBytes> = {},
) {
  const { bytes, reads, checks } = file(size, extra);
  const res = await serveBytes(new Request("http://127.0.0.1/v1/assets/serve?url=x", { method, headers }), bytes);
  const body = res.body ? new Uint8Array(await res.arrayBuffer()) : null;
  return { res, body, reads, checks, status: res.status, h: (name: string) => res.headers.get(name) };
}

describe("serveBytes: whole file", () => {
  it("200 with type, length, validators, accept-ranges and an inline disposition; reads [0, size-1] once", async () => {
    const r = await serve(1000);
    expect(r.status).toBe(200);
    expect(r.h("content-type")).toBe("image/png");
    expect(r.h("content-length")).toBe("1000");
    expect(r.h("etag")).toBe('"abc-1000"');
    expect(r.h("last-modified")).toBe("Thu, 02 Jan 2025 03:04:05 GMT");
    expect(r.h("accept-ranges")).toBe("bytes");
    expect(r.h("content-disposition")).toBe("inline; filename*=UTF-8''photo.png");
    expect(r.h("x-content-type-options")).toBe("nosniff");
    expect(r.h("content-range")).toBeNull();
    expect(r.reads).toEqual([[0, 999]]);
    expect([...r.body!]).toEqual(expected(0, 999));
  });

  it("an empty file: 200, length 0, and nothing is read", async () => {
    const r = await serve(0);
    expect(r.status).toBe(200);
    expect(r.h("content-length")).toBe("0");
    expect(r.reads).toEqual([]);
    expect(r.body === null || r.body.length === 0).toBe(true);
  });

  it("encodes a non-ASCII, quote- and semicolon-bearing file name (RFC 8187), never raw in the header", async () => {
    const r = await serve(10, {}, "GET", { fileName: 'naïve "x"; y.png' });
    expect(r.h("content-disposition")).toBe(`inline; filename*=UTF-8''${encodeURIComponent('naïve "x"; y.png')}`);
    expect(r.h("content-disposition")).not.toContain('"');
  });

  it("HEAD: the same headers, no body, nothing read", async () => {
    const r = await serve(1000, {}, "HEAD");
    expect(r.status).toBe(200);
    expect(r.h("content-length")).toBe("1000");
    expect(r.h("etag")).toBe('"abc-1000"');
    expect(r.reads).toEqual([]);
    expect(r.body).toBeNull();
  });
});

describe("serveBytes: single ranges", () => {
  const size = 5000;
  const cases: [string, number, number][] = [
    ["bytes=0-0", 0, 0],
    ["bytes=0-99", 0, 99],
    ["bytes=100-", 100, size - 1],
    ["bytes=-100", size - 100, size - 1],
    ["bytes=-1", size - 1, size - 1],
    ["bytes=4999-", 4999, 4999],
    ["bytes=4999-4999", 4999, 4999],
    ["bytes=1234-2345", 1234, 2345],
    // an end past the file is clamped to its last byte
    ["bytes=10-999999", 10, size - 1],
    ["bytes=0-99999999999999999999", 0, size - 1],
    // a suffix longer than the file is the whole file
    ["bytes=-999999", 0, size - 1],
    // unit name and whitespace are tolerated
    ["BYTES=5-9", 5, 9],
    ["bytes= 5 - 9 ", 5, 9],
  ];
  for (const [range, start, end] of cases)
    it(`${range} → 206 bytes ${start}-${end}/${size}`, async () => {
      const r = await serve(size, { range });
      expect(r.status).toBe(206);
      expect(r.h("content-range")).toBe(`bytes ${start}-${end}/${size}`);
      expect(r.h("content-length")).toBe(String(end - start + 1));
      expect(r.h("content-type")).toBe("image/png");
      expect(r.reads).toEqual([[start, end]]);
      expect([...r.body!]).toEqual(expected(start, end));
    });

  it("HEAD with a range: 206 headers, no body, nothing read", async () => {
    const r = await serve(size, { range: "bytes=10-19" }, "HEAD");
    expect(r.status).toBe(206);
    expect(r.h("content-range")).toBe(`bytes 10-19/${size}`);
    expect(r.h("content-length")).toBe("10");
    expect(r.reads).toEqual([]);
  });
});

describe("serveBytes: unsatisfiable ranges → 416 with content-range bytes */size", () => {
  for (const [size, range] of [
    [5000, "bytes=5000-"],
    [5000, "bytes=5000-6000"],
    [5000, "bytes=99999-"],
    [5000, "bytes=-0"],
    [0, "bytes=0-0"],
    [0, "bytes=0-"],
    [0, "bytes=-5"],
  ] as const)
    it(`${range} on ${size} bytes`, async () => {
      const r = await serve(size, { range });
      expect(r.status).toBe(416);
      expect(r.h("content-range")).toBe(`bytes */${size}`);
      expect(r.h("content-type")).toBe("application/json");
      expect(JSON.parse(new TextDecoder().decode(r.body!))).toMatchObject({
        code: "RANGE_NOT_SATISFIABLE",
        message: expect.any(String),
      });
      expect(r.reads).toEqual([]);
    });
});

describe("serveBytes: ranges that are ignored (200 with the whole file, as RFC 9110 allows)", () => {
  for (const range of [
    "bytes=0-1,5-6",
    "bytes=-5, 0-1",
    "bytes=abc",
    "bytes=",
    "bytes=-",
    "bytes=5-2",
    "items=0-5",
    "0-5",
    "bytes=1.5-3",
    "bytes=--5",
  ])
    it(JSON.stringify(range), async () => {
      const r = await serve(300, { range });
      expect(r.status).toBe(200);
      expect(r.h("content-length")).toBe("300");
      expect(r.h("content-range")).toBeNull();
      expect(r.reads).toEqual([[0, 299]]);
      expect(r.body!.length).toBe(300);
    });
});

describe("serveBytes: If-Range", () => {
  it("a matching ETag lets the range apply", async () => {
    const r = await serve(300, { range: "bytes=10-19", "if-range": '"abc-300"' });
    expect(r.status).toBe(206);
    expect(r.h("content-range")).toBe("bytes 10-19/300");
  });

  it("another ETag, a weak one, or a date: the whole file (200)", async () => {
    for (const ifRange of ['"other"', 'W/"abc-300"', "Thu, 02 Jan 2025 03:04:05 GMT"]) {
      const r = await serve(300, { range: "bytes=10-19", "if-range": ifRange });
      expect(r.status, ifRange).toBe(200);
      expect(r.body!.length).toBe(300);
    }
  });
});

describe("serveBytes: conditional requests", () => {
  const notModified = async (headers: Record<string, string>, method = "GET") => {
    const r = await serve(300, headers, method);
    expect(r.status, JSON.stringify(headers)).toBe(304);
    expect(r.body).toBeNull();
    expect(r.reads).toEqual([]);
    expect(r.h("etag")).toBe('"abc-300"');
    return r;
  };
  const modified = async (headers: Record<string, string>) => {
    const r = await serve(300, headers);
    expect(r.status, JSON.stringify(headers)).toBe(200);
    expect(r.body!.length).toBe(300);
  };

  it("If-None-Match with the ETag, its weak form, *, or a list containing it → 304", async () => {
    await notModified({ "if-none-match": '"abc-300"' });
    await notModified({ "if-none-match": 'W/"abc-300"' });
    await notModified({ "if-none-match": "*" });
    await notModified({ "if-none-match": '"x", "abc-300" , "y"' });
    await notModified({ "if-none-match": '"abc-300"' }, "HEAD");
  });

  it("If-None-Match with other tags → 200", async () => {
    await modified({ "if-none-match": '"abc-301"' });
    await modified({ "if-none-match": '"x", "y"' });
    await modified({ "if-none-match": "abc-300" }); // unquoted: not the same entity tag
  });

  it("If-Modified-Since at or after Last-Modified (second precision) → 304; before, or not a date → 200", async () => {
    await notModified({ "if-modified-since": "Thu, 02 Jan 2025 03:04:05 GMT" }); // the exact Last-Modified (ms dropped)
    await notModified({ "if-modified-since": "Fri, 03 Jan 2025 00:00:00 GMT" });
    await modified({ "if-modified-since": "Thu, 02 Jan 2025 03:04:04 GMT" });
    await modified({ "if-modified-since": "not a date" });
  });

  it("If-None-Match takes precedence over If-Modified-Since (RFC 9110 §13.1.3)", async () => {
    await modified({ "if-none-match": '"other"', "if-modified-since": "Fri, 03 Jan 2030 00:00:00 GMT" });
    await notModified({ "if-none-match": '"abc-300"', "if-modified-since": "Thu, 01 Jan 1970 00:00:00 GMT" });
  });

  it("a conditional hit with a Range header is still 304 (the cached copy is current)", async () => {
    await notModified({ "if-none-match": '"abc-300"', range: "bytes=0-9" });
  });
});

describe("serveBytes: the bytes are checked before any answer that stands for them", () => {
  it("checks the range answered (206), the whole file (200, HEAD, 304), nothing for 416 or an empty file", async () => {
    expect((await serve(1000, { range: "bytes=10-19" })).checks).toEqual([[10, 19]]);
    expect((await serve(1000)).checks).toEqual([[0, 999]]);
    expect((await serve(1000, {}, "HEAD")).checks).toEqual([[0, 999]]);
    expect((await serve(1000, { "if-none-match": '"abc-1000"' })).checks).toEqual([[0, 999]]);
    expect((await serve(1000, { range: "bytes=2000-" })).checks).toEqual([]);
    expect((await serve(0)).checks).toEqual([]);
  });

  it("a failed check is thrown (for the route's error answer) before anything is read, whatever the request", async () => {
    const refused = new Error("not a regular file");
    for (const [headers, method] of [
      [{}, "GET"],
      [{}, "HEAD"],
      [{ range: "bytes=0-9" }, "GET"],
      [{ "if-none-match": '"abc-100"' }, "GET"],
    ] as const) {
      const { bytes, reads } = file(100, { check: () => Promise.reject(refused) });
      await expect(
        serveBytes(new Request("http://127.0.0.1/x", { method, headers }), bytes),
        `${method} ${JSON.stringify(headers)}`,
      ).rejects.toBe(refused);
      expect(reads).toEqual([]);
    }
  });
});
