import { fileTypeFromBuffer } from "file-type/core";
import { imageSize } from "image-size";
import { parseBuffer, parseWebStream } from "music-metadata";

export interface Inspection {
  mimeType: string;
  width?: number;
  height?: number;
  /** seconds */
  duration?: number;
}

/**
 * What an upload is, from its first bytes (all pure-JS libraries, no native code): the type by magic numbers
 * (file-type), pixel size of images (image-size), duration of audio and video when their headers say it
 * (music-metadata). A declared type wins over sniffing; anything unreadable is simply left out.
 */
export async function inspect(
  head: Uint8Array,
  size: number,
  declaredType?: string,
  open?: () => ReadableStream<Uint8Array>,
): Promise<Inspection> {
  const sniffed = await fileTypeFromBuffer(head).catch(() => undefined);
  const mimeType = declaredType || sniffed?.mime || (looksLikeText(head) ? "text/plain" : "application/octet-stream");
  const out: Inspection = { mimeType };
  if (mimeType.startsWith("image/")) {
    try {
      const dims = imageSize(head);
      if (dims.width && dims.height) {
        out.width = dims.width;
        out.height = dims.height;
      }
    } catch {
      // not enough of the header, or a format image-size does not read
    }
  }
  if (mimeType.startsWith("audio/") || mimeType.startsWith("video/")) {
    try {
      // The head alone misleads: music-metadata would take its length for the file's. When the file is larger,
      // let it read the stored bytes as a stream (chunk by chunk; often it stops after the headers).
      const options = { duration: true, skipCovers: true };
      const meta =
        open && head.length < size
          ? await parseWebStream(open(), { mimeType, size }, options)
          : await parseBuffer(head, { mimeType, size }, options);
      if (meta.format.duration && Number.isFinite(meta.format.duration))
        out.duration = Math.round(meta.format.duration * 1000) / 1000;
    } catch {
      // headers beyond the inspected bytes, or an unknown container
    }
  }
  return out;
}

function looksLikeText(head: Uint8Array): boolean {
  if (head.length === 0) return false;
  const sample = head.subarray(0, 4096);
  if (sample.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(sample.subarray(0, sample.length - 4));
    return true;
  } catch {
    return false;
  }
}
