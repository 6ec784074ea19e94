/**
 * Real media files built in memory, byte by byte, so that type sniffing, image dimensions and audio durations are
 * checked against files whose facts the test itself wrote down. Also a deterministic large-file generator whose
 * byte at any offset can be recomputed (for range checks without keeping the file).
 */
import { createHash } from "node:crypto";
import { deflateSync } from "node:zlib";

/** Bytes over a plain ArrayBuffer (what Blob and fetch bodies accept). */
export type Bytes = Uint8Array<ArrayBuffer>;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function concat(...parts: Uint8Array[]): Bytes {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const ascii = (s: string): Bytes => new TextEncoder().encode(s) as Bytes;
const u32be = (n: number) => new Uint8Array([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
const u16be = (n: number) => new Uint8Array([(n >>> 8) & 0xff, n & 0xff]);
const u32le = (n: number) => new Uint8Array([n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24]);
const u16le = (n: number) => new Uint8Array([n & 0xff, (n >>> 8) & 0xff]);

function pngChunk(type: string, data: Uint8Array): Bytes {
  const typed = concat(ascii(type), data);
  return concat(u32be(data.length), typed, u32be(crc32(typed)));
}

/** A valid RGB PNG (IHDR, one zlib-deflated IDAT of filtered rows, IEND): a colour gradient. */
export function png(width: number, height: number): Bytes {
  const ihdr = concat(u32be(width), u32be(height), new Uint8Array([8, 2, 0, 0, 0]));
  const raw = new Uint8Array(height * (1 + width * 3));
  for (let y = 0; y < height; y++) {
    const row = y * (1 + width * 3);
    raw[row] = 0; // filter: none
    for (let x = 0; x < width; x++) {
      raw[row + 1 + x * 3] = (x * 255) / Math.max(1, width - 1);
      raw[row + 2 + x * 3] = (y * 255) / Math.max(1, height - 1);
      raw[row + 3 + x * 3] = 128;
    }
  }
  return concat(
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(raw)),
    pngChunk("IEND", new Uint8Array(0)),
  );
}

/** A baseline JPEG header: SOI, APP0 JFIF, DQT, SOF0 (the dimensions), then filler and EOI. */
export function jpeg(width: number, height: number): Bytes {
  const app0 = concat(
    new Uint8Array([0xff, 0xe0]),
    u16be(16),
    ascii("JFIF\0"),
    new Uint8Array([1, 1, 0, 0, 1, 0, 1, 0, 0]),
  );
  const dqt = concat(new Uint8Array([0xff, 0xdb]), u16be(67), new Uint8Array([0]), new Uint8Array(64).fill(1));
  const sof0 = concat(
    new Uint8Array([0xff, 0xc0]),
    u16be(17),
    new Uint8Array([8]),
    u16be(height),
    u16be(width),
    new Uint8Array([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]),
  );
  const sos = concat(new Uint8Array([0xff, 0xda]), u16be(12), new Uint8Array([3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3f, 0]));
  return concat(
    new Uint8Array([0xff, 0xd8]),
    app0,
    dqt,
    sof0,
    sos,
    new Uint8Array(256).fill(0x55),
    new Uint8Array([0xff, 0xd9]),
  );
}

/** A GIF89a with a global colour table and one 1-colour image (logical screen width × height). */
export function gif(width: number, height: number): Bytes {
  return concat(
    ascii("GIF89a"),
    u16le(width),
    u16le(height),
    new Uint8Array([0x80, 0, 0]), // global colour table of 2 entries
    new Uint8Array([0, 0, 0, 255, 255, 255]),
    new Uint8Array([0x2c]),
    u16le(0),
    u16le(0),
    u16le(width),
    u16le(height),
    new Uint8Array([0]),
    new Uint8Array([2, 2, 0x44, 0x01, 0]), // LZW min code size 2, one tiny data block
    new Uint8Array([0x3b]),
  );
}

/** A RIFF/WAVE file: PCM, 16-bit mono at `rate` Hz, `seconds` long (a sine tone). */
export function wav(seconds: number, rate = 8000): Bytes {
  const samples = Math.round(seconds * rate);
  const data = new Uint8Array(samples * 2);
  const view = new DataView(data.buffer);
  for (let i = 0; i < samples; i++)
    view.setInt16(i * 2, Math.round(Math.sin((i / rate) * 2 * Math.PI * 440) * 12000), true);
  const fmt = concat(ascii("fmt "), u32le(16), u16le(1), u16le(1), u32le(rate), u32le(rate * 2), u16le(2), u16le(16));
  const body = concat(ascii("WAVE"), fmt, ascii("data"), u32le(data.length), data);
  return concat(ascii("RIFF"), u32le(body.length), body);
}

/**
 * An MPEG-1 Layer III stream of `frames` frames at 128 kbit/s, 44.1 kHz, mono, no padding: 417 bytes and 1152
 * samples per frame, so `frames × 1152 / 44100` seconds.
 */
export function mp3(frames: number): Bytes {
  const frame = new Uint8Array(417);
  frame.set([0xff, 0xfb, 0x90, 0xc4]);
  const out = new Uint8Array(frame.length * frames);
  for (let i = 0; i < frames; i++) out.set(frame, i * frame.length);
  return out;
}

/** The start of an MP4 (an `ftyp` box, as the sandbox's seeded videos have) plus filler. */
export function mp4(bytes = 4096): Bytes {
  const out = new Uint8Array(bytes);
  out.set([
    0x00, 0x00, 0x00, 0x18, 0x66, 0x74, 0x79, 0x70, 0x6d, 0x70, 0x34, 0x32, 0x00, 0x00, 0x00, 0x00, 0x6d, 0x70, 0x34,
    0x32, 0x69, 0x73, 0x6f, 0x6d,
  ]);
  for (let i = 24; i < bytes; i++) out[i] = (i * 7) & 0xff;
  return out;
}

/** Bytes no sniffer recognises and that are not text (a NUL early on). */
export function binaryBlob(bytes = 3000): Bytes {
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) out[i] = (i * 131 + 7) & 0xff;
  out[0] = 0x00;
  out[1] = 0xb7;
  return out;
}

export const text = (s: string): Bytes => ascii(s);

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

// ---------------------------------------------------------------------------------------------------------------
// A large file that is never held whole: byte i is a function of i.

export const byteAt = (i: number) => (i ^ (i >>> 8) ^ (i >>> 16) ^ ((i >>> 24) * 31)) & 0xff;

/** Bytes [start, end) of the generated file. */
export function bytesOf(start: number, end: number): Bytes {
  const out = new Uint8Array(end - start);
  for (let i = start; i < end; i++) out[i - start] = byteAt(i);
  return out;
}

/**
 * The generated file of `size` bytes, in pieces of `piece` bytes (an odd size by default, so pieces never line up
 * with 1 MiB chunks), and its SHA-256 once the generator has run to the end.
 */
export function* generated(size: number, piece = 65_521): Generator<Bytes> {
  for (let at = 0; at < size; at += piece) yield bytesOf(at, Math.min(size, at + piece));
}

export function hashOfGenerated(size: number): string {
  const hash = createHash("sha256");
  for (const p of generated(size)) hash.update(p);
  return hash.digest("hex");
}

/** SHA-256 of bytes [start, end) of the generated file, computed piece by piece. */
export function hashOfRange(start: number, end: number): string {
  const hash = createHash("sha256");
  for (let at = start; at < end; at += 1 << 20) hash.update(bytesOf(at, Math.min(end, at + (1 << 20))));
  return hash.digest("hex");
}

/** The frame size a JPEG's SOF0 states (scans the marker segments), or undefined. */
export function jpegSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  let at = 2;
  while (at + 9 < bytes.length && bytes[at] === 0xff) {
    const marker = bytes[at + 1];
    const length = (bytes[at + 2] << 8) | bytes[at + 3];
    if (marker === 0xc0)
      return { height: (bytes[at + 5] << 8) | bytes[at + 6], width: (bytes[at + 7] << 8) | bytes[at + 8] };
    at += 2 + length;
  }
  return undefined;
}
