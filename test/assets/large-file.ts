/**
 * A 50 MB file end to end (streamed upload, byte-exact download, ranges at chunk boundaries, validators, sending it)
 * and the real 500 MB upload limit.
 */
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { AssetEnv } from "./env.ts";
import { MiB } from "./env.ts";
import { bytesOf, hashOfGenerated, hashOfRange, sha256, text } from "./fixtures.ts";
import { ECHO_ID, waitFor } from "../kit/common.ts";
import { multipartType, sdk, serveAsset, serveHash, streamedUpload, uploadBytes, type Upload } from "./kit.ts";

export function largeFileCases(env: AssetEnv) {
  describe("a 50 MB file: streamed upload, byte-exact download, ranges, validators", () => {
    const SIZE = 50 * MiB + 4321;
    let up: Upload;
    let etag: string;
    let lastModified: string;

    beforeAll(async () => {
      const r = await env.api.raw<Upload>("POST", "/v1/assets/upload", {
        body: streamedUpload(SIZE, { fileName: "big.bin", fieldsAfter: { mimeType: "application/x-big" } }),
        headers: { "content-type": multipartType },
        duplex: true,
      });
      if (r.status !== 200) throw new Error(`50 MB upload → ${r.status}: ${r.text}`);
      up = r.body;
      const first = await serveAsset(env.api, up.srcURL, { range: "bytes=0-0" });
      etag = first.h("etag")!;
      lastModified = first.h("last-modified")!;
    }, 120_000);

    it("upload result: fileSize, the field's mimeType, srcURL", () => {
      expect(up).toMatchObject({ fileName: "big.bin", mimeType: "application/x-big", fileSize: SIZE });
      env.expectSrcURL(up);
    });

    it("GET serves it whole and byte-exact (SHA-256), with type, length, ETag, Last-Modified, Accept-Ranges", async () => {
      const r = await serveHash(env.api, up.srcURL);
      expect(r.status).toBe(200);
      expect(r.length).toBe(SIZE);
      expect(r.sha256).toBe(hashOfGenerated(SIZE));
      expect(r.headers.get("content-type")).toBe("application/x-big");
      expect(r.headers.get("accept-ranges")).toBe("bytes");
      expect(r.headers.get("etag")).toBe(etag);
      expect(r.headers.get("last-modified")).toBe(lastModified);
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(Date.parse(lastModified)).toBeGreaterThan(Date.now() - 3_600_000);
      // the same through the SDK's serve() and the mxc:// URL
      const res = await sdk(env.server.url, env.rwToken).assets.serve({ url: `mxc://inboxd/${up.uploadID}` });
      const hash = createHash("sha256");
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
      expect(hash.digest("hex")).toBe(hashOfGenerated(SIZE));
    }, 120_000);

    const ranges: [string, number, number][] = [
      ["the first byte", 0, 0],
      ["the first chunk exactly", 0, MiB - 1],
      ["the last byte of chunk 0 and the first of chunk 1", MiB - 1, MiB],
      ["chunk 1 exactly", MiB, 2 * MiB - 1],
      ["from a chunk's last byte across two boundaries", 2 * MiB - 1, 4 * MiB],
      ["the middle", 25_000_000, 25_000_999],
      ["3 MiB from the middle", 20 * MiB + 12_345, 23 * MiB + 12_344],
      ["the start of the last, partial chunk", 50 * MiB, 50 * MiB + 99],
      ["the last byte", SIZE - 1, SIZE - 1],
    ];
    for (const [label, start, end] of ranges)
      it(`Range bytes=${start}-${end} (${label}) → 206 with exactly those bytes`, async () => {
        const r = await serveAsset(env.api, up.srcURL, { range: `bytes=${start}-${end}` });
        expect(r.status).toBe(206);
        expect(r.h("content-range")).toBe(`bytes ${start}-${end}/${SIZE}`);
        expect(r.h("content-type")).toBe("application/x-big");
        env.expectLength(r, end - start + 1);
        expect(sha256(r.bytes)).toBe(sha256(bytesOf(start, end + 1)));
      });

    it("suffix range bytes=-100 → the last 100 bytes", async () => {
      const r = await serveAsset(env.api, up.srcURL, { range: "bytes=-100" });
      expect(r.status).toBe(206);
      expect(r.h("content-range")).toBe(`bytes ${SIZE - 100}-${SIZE - 1}/${SIZE}`);
      expect(sha256(r.bytes)).toBe(sha256(bytesOf(SIZE - 100, SIZE)));
    });

    it("open range bytes=100- → everything from byte 100", async () => {
      const r = await serveHash(env.api, up.srcURL, { range: "bytes=100-" });
      expect(r.status).toBe(206);
      expect(r.headers.get("content-range")).toBe(`bytes 100-${SIZE - 1}/${SIZE}`);
      expect(r.length).toBe(SIZE - 100);
      expect(r.sha256).toBe(hashOfRange(100, SIZE));
    }, 120_000);

    it("a range ending past the file is clamped", async () => {
      const r = await serveAsset(env.api, up.srcURL, { range: `bytes=${SIZE - 10}-${SIZE + 1000}` });
      expect(r.status).toBe(206);
      expect(r.h("content-range")).toBe(`bytes ${SIZE - 10}-${SIZE - 1}/${SIZE}`);
      expect(r.bytes.length).toBe(10);
    });

    it("416 with content-range bytes */size for a start at or past the end", async () => {
      for (const range of [`bytes=${SIZE}-`, `bytes=${SIZE + 5}-${SIZE + 10}`]) {
        const r = await serveAsset(env.api, up.srcURL, { range });
        expect(r.status, range).toBe(416);
        expect(r.h("content-range")).toBe(`bytes */${SIZE}`);
      }
    });

    it("several ranges → 200 with the whole file", async () => {
      const r = await serveHash(env.api, up.srcURL, { range: "bytes=0-9,100-109" });
      expect(r.status).toBe(200);
      expect(r.length).toBe(SIZE);
    }, 120_000);

    it("If-None-Match with the ETag → 304 without a body; another ETag → 200", async () => {
      const r = await serveAsset(env.api, up.srcURL, { "if-none-match": etag });
      expect(r.status).toBe(304);
      expect(r.bytes.length).toBe(0);
      expect(r.h("etag")).toBe(etag);
      const other = await serveAsset(env.api, up.srcURL, { "if-none-match": '"something-else"', range: "bytes=0-9" });
      expect(other.status).toBe(206);
    });

    it("If-Modified-Since with Last-Modified → 304; an older date → 200", async () => {
      expect((await serveAsset(env.api, up.srcURL, { "if-modified-since": lastModified })).status).toBe(304);
      const older = new Date(Date.parse(lastModified) - 86_400_000).toUTCString();
      expect((await serveAsset(env.api, up.srcURL, { "if-modified-since": older, range: "bytes=0-0" })).status).toBe(
        206,
      );
    });

    it("the ETag is the same on every URL form of the asset", async () => {
      for (const url of [`mxc://inboxd/${up.uploadID}`, `localmxc://inboxd/${up.uploadID}`]) {
        const r = await serveAsset(env.api, url, { range: "bytes=0-0" });
        expect(r.h("etag")).toBe(etag);
      }
    });

    it("Content-Length is declared: on 200 (the file's size) and on 206 (the range's length)", async () => {
      const whole = await fetch(`${env.server.url}/v1/assets/serve?url=${encodeURIComponent(up.srcURL)}`, {
        headers: { authorization: `Bearer ${env.rwToken}` },
      });
      expect(whole.status).toBe(200);
      await whole.body?.cancel();
      expect(whole.headers.get("content-length")).toBe(String(SIZE));
      const part = await serveAsset(env.api, up.srcURL, { range: "bytes=1048570-1048589" });
      expect(part.status).toBe(206);
      expect(part.h("content-length")).toBe("20");
      const small = await uploadBytes(env.api, text("twelve bytes"), "twelve.txt");
      const served = await serveAsset(env.api, small.srcURL);
      // Text types may be compressed on the way out (Cloudflare's edge does it, and Miniflare mimics it even with
      // no-transform); then the length is the compressed one, sent chunked. Otherwise it is the file's.
      if (served.h("content-encoding")) expect(served.h("content-encoding")).toMatch(/^(gzip|br)$/);
      else expect(served.h("content-length")).toBe("12");
    });

    it("HEAD → 200 with Content-Length and ETag, no body", async () => {
      const r = await serveAsset(env.api, up.srcURL, {}, "HEAD");
      expect(r.status).toBe(200);
      expect(r.h("content-length")).toBe(String(SIZE));
      expect(r.h("etag")).toBe(etag);
      expect(r.bytes.length).toBe(0);
    });

    it("sent as an attachment: the network receives all 50 MB (Echo answers), and it stays servable", async () => {
      const sent = await env.api.postMessage(env.echo.id, { attachment: { uploadID: up.uploadID } });
      expect(sent.status).toBe(200);
      const m = await env.api.settled(env.echo.id, sent.body.pendingMessageID);
      expect(m.sendStatus?.status).toBe("SUCCESS");
      expect(m.type).toBe("FILE");
      expect(m.attachments![0]).toMatchObject({ type: "unknown", fileSize: SIZE, fileName: "big.bin" });
      await waitFor(
        "Echo's reply",
        async () =>
          (await env.api.recent(env.echo.id)).find((r) => r.senderID === ECHO_ID && r.text === "Echo: [big.bin]"),
        30_000,
      );
      expect((await serveAsset(env.api, up.srcURL, { range: "bytes=-1" })).bytes[0]).toBe(bytesOf(SIZE - 1, SIZE)[0]);
    }, 120_000);
  });

  describe("the 500 MB upload limit", () => {
    it("500 MiB + 1 byte, streamed → 413 JSON; no chunk is left behind; uploads work afterwards", async () => {
      const before = env.runtime.chunkFiles?.(env.server);
      const r = await env.api.raw("POST", "/v1/assets/upload", {
        body: streamedUpload(500 * MiB + 1, { zeros: true }),
        headers: { "content-type": multipartType },
        duplex: true,
      });
      expect(r.status).toBe(413);
      expect(r.headers.get("content-type")).toMatch(/^application\/json/);
      expect(r.body).toMatchObject({ code: "PAYLOAD_TOO_LARGE", message: expect.any(String) });
      if (before) expect(env.runtime.chunkFiles!(env.server)).toEqual(before);
      expect((await uploadBytes(env.api, text("after the limit"), "after.txt")).fileSize).toBe(15);
    }, 180_000);
  });
}
