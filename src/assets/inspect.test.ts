import { describe, expect, it } from "vitest";
import { binaryBlob, gif, jpeg, mp3, mp4, png, text, wav } from "../../test/assets/fixtures.ts";
import { inspect } from "./inspect.ts";

/** What the upload path hands to inspect(): the first 256 KiB (BlobStore's default head) and the full size. */
const HEAD = 256 * 1024;
// As an upload calls it: the first HEAD bytes in memory, and the stored file readable as a stream.
const asUploaded = (bytes: Uint8Array, declared?: string) =>
  inspect(
    bytes.subarray(0, HEAD),
    bytes.length,
    declared,
    () => new ReadableStream({ start: (c) => (c.enqueue(bytes), c.close()) }),
  );

describe("inspect: type by magic numbers, dimensions of images", () => {
  it("PNG: image/png with its IHDR size", async () => {
    expect(await asUploaded(png(37, 21))).toEqual({ mimeType: "image/png", width: 37, height: 21 });
  });

  it("JPEG: image/jpeg with its SOF0 size", async () => {
    expect(await asUploaded(jpeg(1280, 720))).toEqual({ mimeType: "image/jpeg", width: 1280, height: 720 });
  });

  it("GIF: image/gif with its logical screen size", async () => {
    expect(await asUploaded(gif(33, 17))).toEqual({ mimeType: "image/gif", width: 33, height: 17 });
  });

  it("a large PNG (IDAT far beyond the head) still has its size: IHDR comes first", async () => {
    const big = png(1000, 800); // ~ a few hundred KB of deflated gradient
    expect(await asUploaded(big)).toMatchObject({ mimeType: "image/png", width: 1000, height: 800 });
  });

  it("MP4: video/mp4 (no duration: no moov box in the header)", async () => {
    expect(await asUploaded(mp4())).toEqual({ mimeType: "video/mp4" });
  });
});

describe("inspect: duration of audio", () => {
  it("WAV (1.5 s, 16-bit mono 8 kHz): audio/wav, duration 1.5", async () => {
    expect(await asUploaded(wav(1.5))).toEqual({ mimeType: "audio/wav", duration: 1.5 });
  });

  it("MP3 (383 frames of 1152 samples at 44.1 kHz = 10.005 s): audio/mpeg, about 10 s", async () => {
    const r = await asUploaded(mp3(383));
    expect(r.mimeType).toBe("audio/mpeg");
    expect(r.duration).toBeCloseTo(10.005, 1);
  });

  // The upload path inspects only the first 256 KiB. A WAV's header states the data size, and a CBR MP3's first
  // frame states its bitrate, so the duration of the whole file is known from the head plus the file size.
  it("WAV longer than the inspected head (20 s = 320 KB): duration of the whole file, 20", async () => {
    expect(await asUploaded(wav(20))).toEqual({ mimeType: "audio/wav", duration: 20 });
  });

  it("MP3 longer than the inspected head (60 s ≈ 960 KB CBR): about 60 s", async () => {
    const frames = Math.round((60 * 44_100) / 1152);
    const r = await asUploaded(mp3(frames));
    expect(r.mimeType).toBe("audio/mpeg");
    expect(r.duration).toBeCloseTo((frames * 1152) / 44_100, 0);
  });
});

describe("inspect: text, unknown and declared types", () => {
  it("UTF-8 text (also with a multi-byte character cut at the end of the sample): text/plain", async () => {
    expect(await asUploaded(text("hello wörld\n"))).toEqual({ mimeType: "text/plain" });
    const long = text("ö".repeat(5000)); // 10 000 bytes; the 4096-byte sample ends inside nothing, but is trimmed anyway
    expect(await asUploaded(long)).toEqual({ mimeType: "text/plain" });
  });

  it("binary without a known signature: application/octet-stream", async () => {
    expect(await asUploaded(binaryBlob())).toEqual({ mimeType: "application/octet-stream" });
    expect(
      await asUploaded(new Uint8Array([0xc3, 0x28, 0xa0, 0xa1, 0x80, 0x81, 0xfe, 0xff, 0x41, 0x42, 0x43, 0x44])),
    ).toEqual({ mimeType: "application/octet-stream" });
  });

  it("empty: application/octet-stream", async () => {
    expect(await inspect(new Uint8Array(0), 0)).toEqual({ mimeType: "application/octet-stream" });
  });

  it("a declared type wins over sniffing, and decides which facts are read", async () => {
    expect(await asUploaded(png(10, 10), "image/x-custom")).toEqual({
      mimeType: "image/x-custom",
      width: 10,
      height: 10,
    });
    expect(await asUploaded(png(10, 10), "application/octet-stream")).toEqual({ mimeType: "application/octet-stream" });
    expect(await asUploaded(text("plain words"), "text/markdown")).toEqual({ mimeType: "text/markdown" });
    expect(await asUploaded(wav(2), "audio/x-wav")).toMatchObject({ mimeType: "audio/x-wav", duration: 2 });
  });

  it("a truncated or lying image header is not an error: the facts are left out", async () => {
    expect(await asUploaded(png(10, 10).subarray(0, 12), "image/png")).toEqual({ mimeType: "image/png" });
    expect(await asUploaded(text("just text"), "image/png")).toEqual({ mimeType: "image/png" });
    expect(await asUploaded(binaryBlob(), "audio/mpeg")).toMatchObject({ mimeType: "audio/mpeg" });
  });
});
