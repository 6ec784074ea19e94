import type { NetworkMedia } from "../../bridges/connector.ts";
import { prng } from "./corpus.ts";

/**
 * Deterministic media for seeded sandbox messages: a real file header for the kind (so type sniffing and image
 * dimensions work: a JPEG's SOF0 says 1280×720) followed by pseudo-random filler up to the stated size, produced
 * 64 KiB at a time.
 */
const HEADERS: Record<"img" | "video" | "audio" | "file", { mime: string; ext: string; bytes: number[] }> = {
  img: {
    mime: "image/jpeg",
    ext: "jpg",
    // SOI, APP0 "JFIF", SOF0: 8-bit, 720 high, 1280 wide, 3 components
    bytes: [
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
      0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x02, 0xd0, 0x05, 0x00, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11,
      0x01,
    ],
  },
  video: {
    mime: "video/mp4",
    ext: "mp4",
    bytes: [
      0x00, 0x00, 0x00, 0x18, 0x66, 0x74, 0x79, 0x70, 0x6d, 0x70, 0x34, 0x32, 0x00, 0x00, 0x00, 0x00, 0x6d, 0x70, 0x34,
      0x32, 0x69, 0x73, 0x6f, 0x6d,
    ],
  },
  audio: { mime: "audio/ogg", ext: "ogg", bytes: [0x4f, 0x67, 0x67, 0x53, 0x00, 0x02] },
  file: { mime: "application/pdf", ext: "pdf", bytes: [...new TextEncoder().encode("%PDF-1.4\n")] },
};

export function sandboxMedia(kind: keyof typeof HEADERS, size: number, tag: string): NetworkMedia {
  const header = HEADERS[kind];
  const total = Math.max(size, header.bytes.length);
  const random = prng(parseInt(tag.slice(0, 8), 36) || 1);
  async function* content() {
    let sent = 0;
    while (sent < total) {
      const chunk = new Uint8Array(Math.min(65536, total - sent));
      for (let i = 0; i < chunk.length; i++) {
        const at = sent + i;
        chunk[i] = at < header.bytes.length ? header.bytes[at] : Math.floor(random() * 256);
      }
      sent += chunk.length;
      yield chunk;
    }
  }
  return { content: content(), mimeType: header.mime, fileName: `sandbox-${tag}.${header.ext}` };
}
