/** Uploads: multipart (SDK and hand-built bodies) and base64, what comes back, refusals and auth. */
import { toFile } from "@beeper/desktop-api";
import { describe, expect, it } from "vitest";
import type { AssetEnv } from "./env.ts";
import { MiB } from "./env.ts";
import { b64, multipart, multipartType, sdk, serveAsset, uploadBytes, uploadForm, type Upload } from "./kit.ts";
import { binaryBlob, gif, jpeg, mp3, png, sha256, text, wav } from "./fixtures.ts";

export function uploadCases(env: AssetEnv) {
  describe("multipart upload", () => {
    const ID = /^[a-z0-9]{1,40}$/;

    it("a PNG through the SDK: uploadID, srcURL, fileName, mimeType, fileSize, width and height; served back byte-exact", async () => {
      const bytes = png(64, 48);
      const up = (await sdk(env.server.url, env.rwToken).assets.upload({
        file: await toFile(bytes, "gradient.png", { type: "image/png" }),
      })) as Upload;
      expect(up).toEqual({
        uploadID: expect.stringMatching(ID),
        srcURL: expect.any(String),
        fileName: "gradient.png",
        mimeType: "image/png",
        fileSize: bytes.length,
        width: 64,
        height: 48,
      });
      env.expectSrcURL(up);
      await env.expectServed(up, bytes);
    });

    it("a JPEG sent as application/octet-stream: the type is sniffed, the SOF0 size read", async () => {
      const bytes = jpeg(1280, 720);
      const up = await uploadBytes(env.api, bytes, "camera.dat", "application/octet-stream");
      expect(up).toMatchObject({
        fileName: "camera.dat",
        mimeType: "image/jpeg",
        fileSize: bytes.length,
        width: 1280,
        height: 720,
      });
      expect(up.duration).toBeUndefined();
      await env.expectServed(up, bytes);
    });

    it("a GIF without a part type: image/gif with its size", async () => {
      const bytes = gif(33, 17);
      const up = await uploadBytes(env.api, bytes, "anim.gif");
      expect(up).toMatchObject({ mimeType: "image/gif", width: 33, height: 17, fileSize: bytes.length });
    });

    it("a WAV (1.5 s PCM): audio/wav with duration 1.5, no width/height", async () => {
      const bytes = wav(1.5);
      const up = await uploadBytes(env.api, bytes, "tone.wav");
      expect(up).toMatchObject({ mimeType: "audio/wav", duration: 1.5, fileSize: bytes.length });
      expect(up.width).toBeUndefined();
      await env.expectServed(up, bytes);
    });

    it("a WAV longer than the inspected head (20 s, 320 KB): duration 20", async () => {
      const up = await uploadBytes(env.api, wav(20), "long.wav");
      expect(up).toMatchObject({ mimeType: "audio/wav", duration: 20 });
    });

    it("an MP3 (10.005 s CBR): audio/mpeg with its duration", async () => {
      const up = await uploadBytes(env.api, mp3(383), "song.mp3");
      expect(up.mimeType).toBe("audio/mpeg");
      expect(up.duration).toBeCloseTo(10.005, 1);
    });

    it("a text file: text/plain, no dimensions or duration", async () => {
      const bytes = text("Dear diary,\nnaïve café ☕\n");
      const up = await uploadBytes(env.api, bytes, "notes.txt");
      expect(up).toEqual({
        uploadID: expect.stringMatching(ID),
        srcURL: expect.any(String),
        fileName: "notes.txt",
        mimeType: "text/plain",
        fileSize: bytes.length,
      });
      await env.expectServed(up, bytes);
    });

    it("a binary blob: application/octet-stream", async () => {
      const bytes = binaryBlob(5000);
      const up = await uploadBytes(env.api, bytes, "data.bin");
      expect(up).toMatchObject({ fileName: "data.bin", mimeType: "application/octet-stream", fileSize: 5000 });
      await env.expectServed(up, bytes);
    });

    it("an empty file: size 0, served as an empty body", async () => {
      const up = await uploadBytes(env.api, new Uint8Array(0), "empty.txt");
      expect(up).toMatchObject({ fileName: "empty.txt", fileSize: 0 });
      const r = await serveAsset(env.api, up.srcURL);
      expect(r.status).toBe(200);
      expect(r.bytes.length).toBe(0);
    });

    it("the part's own type wins over sniffing", async () => {
      const up = await uploadBytes(env.api, png(8, 8), "x.png", "image/webp");
      expect(up.mimeType).toBe("image/webp");
    });

    it("fileName and mimeType fields win over the part's name and type, whether before or after the file part", async () => {
      const bytes = png(20, 10);
      const after = new FormData();
      after.append("file", new Blob([bytes], { type: "application/octet-stream" }), "orig.bin");
      after.append("fileName", "chosen.png");
      after.append("mimeType", "image/x-chosen");
      const a = await uploadForm(env.api, after);
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({
        fileName: "chosen.png",
        mimeType: "image/x-chosen",
        fileSize: bytes.length,
        width: 20,
        height: 10,
      });
      expect(a.body.srcURL).toBe(env.runtime.srcURL(env.server, a.body.uploadID, "chosen.png"));
      // Raw body, fields first
      const body = multipart([
        { name: "mimeType", content: "image/png" },
        { name: "fileName", content: "first.png" },
        { name: "file", filename: "orig.txt", type: "text/plain", content: bytes },
      ]);
      const b = await env.api.raw<Upload>("POST", "/v1/assets/upload", {
        body,
        headers: { "content-type": multipartType },
      });
      expect(b.status).toBe(200);
      expect(b.body).toMatchObject({ fileName: "first.png", mimeType: "image/png", fileSize: bytes.length });
      // The stored record took the fields: serving says image/png.
      await env.expectServed(b.body, bytes, "image/png");
    });

    it("a mimeType field that turns a file into an image (after the file part) still yields its dimensions", async () => {
      const bytes = png(24, 12);
      const body = multipart([
        { name: "file", filename: "orig.txt", type: "text/plain", content: bytes },
        { name: "mimeType", content: "image/png" },
      ]);
      const res = await env.api.raw<Upload>("POST", "/v1/assets/upload", {
        body,
        headers: { "content-type": multipartType },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ mimeType: "image/png", width: 24, height: 12 });
      const again = await env.api.raw<Upload>("POST", "/v1/assets/download", {
        json: { url: `mxc://inboxd/${res.body.uploadID}` },
      });
      expect(again.status).toBe(200);
    });

    it("a file name with spaces, non-ASCII and URL-special characters keeps its name; its srcURL serves it", async () => {
      const name = "Été 2025 #1 (100% ok?) & more.txt";
      const bytes = text("special");
      const up = await uploadBytes(env.api, bytes, name);
      expect(up.fileName).toBe(name);
      env.expectSrcURL(up);
      await env.expectServed(up, bytes);
    });

    it("each upload gets its own uploadID", async () => {
      const ids = await Promise.all(
        [1, 2, 3, 4].map((i) => uploadBytes(env.api, text(`n${i}`), `n${i}.txt`).then((u) => u.uploadID)),
      );
      expect(new Set(ids).size).toBe(4);
    });
  });

  describe("base64 upload", () => {
    it("a file name with a lone surrogate: 400 naming body.fileName, and nothing is stored", async () => {
      const before = env.runtime.chunkFiles?.(env.server);
      const r = await env.api.raw("POST", "/v1/assets/upload/base64", {
        body: '{"content":"aGk=","fileName":"\\ud800.txt"}',
        headers: { "content-type": "application/json" },
      });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "INVALID_REQUEST", details: { issues: [{ path: ["body", "fileName"] }] } });
      if (before) expect(env.runtime.chunkFiles!(env.server)).toEqual(before);
    });

    it("a PNG through the SDK, with fileName: the same shape as multipart", async () => {
      const bytes = png(30, 40);
      const up = (await sdk(env.server.url, env.rwToken).assets.uploadBase64({
        content: b64(bytes),
        fileName: "b64.png",
      })) as Upload;
      expect(up).toEqual({
        uploadID: expect.any(String),
        srcURL: expect.any(String),
        fileName: "b64.png",
        mimeType: "image/png",
        fileSize: bytes.length,
        width: 30,
        height: 40,
      });
      env.expectSrcURL(up);
      await env.expectServed(up, bytes);
    });

    it("without fileName: a generated name from the uploadID and the sniffed type", async () => {
      const up = await env.api.ok<Upload>("POST", "/v1/assets/upload/base64", { content: b64(jpeg(10, 20)) });
      expect(up).toMatchObject({ fileName: `${up.uploadID}.jpg`, mimeType: "image/jpeg", width: 10, height: 20 });
      env.expectSrcURL(up);
    });

    it("a WAV: duration comes back", async () => {
      const up = await env.api.ok<Upload>("POST", "/v1/assets/upload/base64", {
        content: b64(wav(2.25)),
        fileName: "v.wav",
      });
      expect(up).toMatchObject({ mimeType: "audio/wav", duration: 2.25 });
    });

    it("the given mimeType wins over sniffing", async () => {
      const up = await env.api.ok<Upload>("POST", "/v1/assets/upload/base64", {
        content: b64(png(4, 4)),
        mimeType: "image/x-icon-ish",
        fileName: "i.png",
      });
      expect(up.mimeType).toBe("image/x-icon-ish");
    });

    it("accepts a data: URL prefix, URL-safe alphabet, missing padding and line breaks", async () => {
      const bytes = binaryBlob(1001); // 1001 % 3 = 2 → one '=' of padding normally
      const plain = b64(bytes);
      const variants = [
        `data:application/octet-stream;base64,${plain}`,
        Buffer.from(bytes).toString("base64url"),
        plain.replace(/=+$/, ""),
        plain.replace(/(.{76})/g, "$1\r\n"),
      ];
      for (const content of variants) {
        const up = await env.api.ok<Upload>("POST", "/v1/assets/upload/base64", { content, fileName: "v.bin" });
        expect(up.fileSize, content.slice(0, 40)).toBe(1001);
        expect(sha256((await serveAsset(env.api, up.srcURL)).bytes)).toBe(sha256(bytes));
      }
    });

    it("400 for a missing or empty content, text that is not base64, or an invalid mimeType", async () => {
      for (const body of [
        {},
        { content: "" },
        { content: "not base64!!" },
        { content: "aGk=", mimeType: "nope" },
        { content: 42 },
      ]) {
        const r = await env.api.raw("POST", "/v1/assets/upload/base64", { json: body });
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.headers.get("content-type")).toMatch(/^application\/json/);
        expect(r.body).toMatchObject({
          code: "INVALID_REQUEST",
          message: expect.any(String),
          details: { issues: [{ path: expect.arrayContaining(["body"]) }] },
        });
      }
    });

    it("400 (not 500) for base64 of an impossible length", async () => {
      const answers: string[] = [];
      for (const content of ["abcde", "a", "=", "abcd=", "ab=c", "ab==cd=="]) {
        const r = await env.api.raw("POST", "/v1/assets/upload/base64", { json: { content } });
        answers.push(`${content} → ${r.status}`);
      }
      expect(answers).toEqual(["abcde → 400", "a → 400", "= → 400", "abcd= → 400", "ab=c → 400", "ab==cd== → 400"]);
    });

    it("415 for a body that is not JSON", async () => {
      const r = await env.api.raw("POST", "/v1/assets/upload/base64", {
        body: `content=${b64(text("x"))}`,
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      expect(r.status).toBe(415);
      expect(r.body).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE" });
    });

    it("413 JSON above 25 MiB of decoded bytes (the multipart upload is the way for those)", async () => {
      const big = Buffer.alloc(25 * MiB + 3, 0x41).toString("base64");
      const r = await env.api.raw("POST", "/v1/assets/upload/base64", { json: { content: big, fileName: "big.bin" } });
      expect(r.status).toBe(413);
      expect(r.body).toMatchObject({ code: "PAYLOAD_TOO_LARGE", message: expect.any(String) });
    }, 60_000);
  });

  describe("upload refusals and auth", () => {
    it("400 for a multipart body without a file part (fields only, or a file under another name)", async () => {
      const fields = new FormData();
      fields.append("fileName", "a.txt");
      const r1 = await uploadForm(env.api, fields);
      expect(r1.status).toBe(400);
      expect(r1.body).toMatchObject({ code: "INVALID_REQUEST", details: { issues: [{ path: ["body", "file"] }] } });
      const other = new FormData();
      other.append("attachment", new Blob(["x"]), "a.txt");
      expect((await uploadForm(env.api, other)).status).toBe(400);
    });

    it("400 for a truncated multipart body (no closing boundary)", async () => {
      const body = multipart([{ name: "file", filename: "t.bin", content: binaryBlob(50_000) }], {
        close: false,
      }).subarray(0, 30_000);
      const r = await env.api.raw("POST", "/v1/assets/upload", { body, headers: { "content-type": multipartType } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "INVALID_REQUEST" });
    });

    it("400 for a mimeType field that is not a MIME type", async () => {
      const body = multipart([
        { name: "file", filename: "a.txt", content: "abc" },
        { name: "mimeType", content: "not a type" },
      ]);
      const r = await env.api.raw("POST", "/v1/assets/upload", { body, headers: { "content-type": multipartType } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ details: { issues: [{ path: ["body", "mimeType"] }] } });
    });

    it("415 for a JSON or text body, or multipart without a boundary", async () => {
      const json = await env.api.raw("POST", "/v1/assets/upload", { json: { file: "abc" } });
      expect(json.status).toBe(415);
      expect(json.body).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE" });
      const plain = await env.api.raw("POST", "/v1/assets/upload", {
        body: "abc",
        headers: { "content-type": "text/plain" },
      });
      expect(plain.status).toBe(415);
      const noBoundary = await env.api.raw("POST", "/v1/assets/upload", {
        body: multipart([{ name: "file", filename: "a", content: "x" }]),
        headers: { "content-type": "multipart/form-data" },
      });
      expect([400, 415]).toContain(noBoundary.status);
    });

    it("401 without a token or with an unknown one, on every asset endpoint", async () => {
      const form = () => {
        const f = new FormData();
        f.append("file", new Blob(["x"]), "x.txt");
        return f;
      };
      const bad = env.api.withToken("nope_not_a_token");
      for (const client of [env.anon, bad]) {
        const upload = await uploadForm(client, form());
        expect(upload.status).toBe(401);
        expect(upload.body).toMatchObject({ code: "UNAUTHORIZED" });
        expect((await client.raw("POST", "/v1/assets/upload/base64", { json: { content: "eA==" } })).status).toBe(401);
        expect((await client.raw("POST", "/v1/assets/download", { json: { url: "mxc://inboxd/abc" } })).status).toBe(
          401,
        );
        expect((await serveAsset(client, "mxc://inboxd/abc")).status).toBe(401);
      }
    });

    it("403 for a read-only token on uploads and downloads (they write); it may serve", async () => {
      const f = new FormData();
      f.append("file", new Blob(["x"]), "x.txt");
      const upload = await uploadForm(env.ro, f);
      expect(upload.status).toBe(403);
      expect(upload.body).toMatchObject({ code: "FORBIDDEN" });
      expect((await env.ro.raw("POST", "/v1/assets/upload/base64", { json: { content: "eA==" } })).status).toBe(403);
      expect((await env.ro.raw("POST", "/v1/assets/download", { json: { url: "mxc://inboxd/abc" } })).status).toBe(403);
      await expect(
        sdk(env.server.url, env.roToken).assets.upload({ file: await toFile(text("x"), "x.txt") }),
      ).rejects.toMatchObject({ status: 403 });
      const up = await uploadBytes(env.api, text("readable"), "r.txt");
      const served = await serveAsset(env.ro, up.srcURL);
      expect(served.status).toBe(200);
      expect(new TextDecoder().decode(served.bytes)).toBe("readable");
    });
  });
}
