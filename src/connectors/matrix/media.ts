import { imageSize } from "image-size";
import { NetworkError, type NetworkMedia, type OutgoingFile } from "../../bridges/connector.ts";
import type { MatrixHttp } from "./http.ts";
import { seg } from "./http.ts";
import { readAtMost } from "../../util/read-at-most.ts";

const MXC = /^mxc:\/\/([A-Za-z0-9.:[\]-]+)\/([A-Za-z0-9_-]+)$/;

/**
 * Downloads the file behind an mxc:// URL through the account's own homeserver (which fetches remote media over
 * federation), with authenticated media (`/_matrix/client/v1/media`, spec 1.11) where the server offers it and the
 * older `/_matrix/media/v3` otherwise. Null for anything that is not an mxc:// URL.
 */
export async function downloadMedia(
  http: MatrixHttp,
  url: string,
  authenticated: boolean,
): Promise<NetworkMedia | null> {
  const match = MXC.exec(url);
  if (!match) return null;
  const path = authenticated
    ? `/_matrix/client/v1/media/download/${seg(match[1])}/${seg(match[2])}`
    : `/_matrix/media/v3/download/${seg(match[1])}/${seg(match[2])}`;
  const response = await http.stream(path, {
    timeoutMs: 60_000,
    query: authenticated ? undefined : { allow_redirect: "true" },
  });
  if (!response.body) throw new NetworkError("unavailable", "the homeserver sent no file");
  const disposition = response.headers.get("content-disposition") ?? "";
  const name = /filename\*=utf-8''([^;]+)/i.exec(disposition)?.[1] ?? /filename="?([^";]+)"?/i.exec(disposition)?.[1];
  let fileName: string | undefined;
  try {
    fileName = name ? decodeURIComponent(name) : undefined;
  } catch {
    fileName = name;
  }
  return {
    content: response.body as unknown as AsyncIterable<Uint8Array>,
    fileName,
    mimeType: response.headers.get("content-type") ?? undefined,
  };
}

/** The whole file behind an mxc:// URL in memory, up to `limit` bytes (undefined past it; null as downloadMedia). */
export async function downloadMediaBytes(
  http: MatrixHttp,
  url: string,
  authenticated: boolean,
  limit: number,
): Promise<Uint8Array | undefined | null> {
  const media = await downloadMedia(http, url, authenticated);
  // downloadMedia's content is the response's body stream, typed for the host as an iterable.
  return media && readAtMost(media.content as unknown as ReadableStream<Uint8Array>, limit);
}

/** Uploads a file to the homeserver's media repository; resolves with its mxc:// URL. */
export async function uploadMedia(http: MatrixHttp, file: OutgoingFile): Promise<string> {
  const { info } = file;
  if (info.fileSize === undefined) throw new NetworkError("rejected", "the attachment's size is unknown");
  const open = () => withLength(file.open(), info.fileSize!);
  return upload(http, open, {
    fileName: info.fileName ?? "file",
    contentType: info.mimeType ?? "application/octet-stream",
    length: info.fileSize,
  });
}

/** Uploads bytes already in memory (an encrypted file's ciphertext); resolves with their mxc:// URL. */
export function uploadBytes(http: MatrixHttp, bytes: Uint8Array, fileName: string, contentType: string) {
  return upload(http, () => bytes, { fileName, contentType, length: bytes.byteLength });
}

async function upload(
  http: MatrixHttp,
  open: () => ReadableStream<Uint8Array> | Uint8Array,
  file: { fileName: string; contentType: string; length: number },
): Promise<string> {
  const answer = await http.request<{ content_uri?: unknown }>("POST", "/_matrix/media/v3/upload", {
    query: { filename: file.fileName },
    raw: { body: open(), contentType: file.contentType, length: file.length, reopen: open },
    timeoutMs: 120_000,
  });
  if (typeof answer.content_uri !== "string" || !MXC.test(answer.content_uri))
    throw new NetworkError("unavailable", "the homeserver's upload answer has no mxc:// URI");
  return answer.content_uri;
}

/** Images larger than this are sent with a thumbnail (smaller ones serve as their own, as Element does). */
const THUMBNAIL = { width: 800, height: 600 };
const MAX_THUMBNAIL_BYTES = 4 * 1024 * 1024;

/**
 * A thumbnail for an image just uploaded, made by the homeserver itself (its thumbnail endpoint scales what it
 * stores) and uploaded as a file of its own, so clients that show `thumbnail_url` get a small image. Undefined for
 * images small enough to be their own thumbnail, and where the server cannot make one (sending goes on without).
 */
export async function thumbnailFor(
  http: MatrixHttp,
  url: string,
  info: { mimeType?: string; size?: { width: number; height: number } },
  authenticated: boolean,
): Promise<Record<string, unknown> | undefined> {
  const match = MXC.exec(url);
  if (
    !match ||
    !info.mimeType?.startsWith("image/") ||
    !info.size ||
    (info.size.width <= THUMBNAIL.width && info.size.height <= THUMBNAIL.height)
  )
    return undefined;
  const path = `${authenticated ? "/_matrix/client/v1/media" : "/_matrix/media/v3"}/thumbnail/${seg(match[1])}/${seg(match[2])}`;
  try {
    const response = await http.stream(path, {
      query: { width: THUMBNAIL.width, height: THUMBNAIL.height, method: "scale" },
      timeoutMs: 30_000,
    });
    // Too large, or no body: no thumbnail, as for any other failure here.
    const bytes = response.body && (await readAtMost(response.body, MAX_THUMBNAIL_BYTES));
    if (!bytes) return undefined;
    const { width, height } = imageSize(bytes);
    const mimetype = response.headers.get("content-type")?.split(";")[0] || "image/jpeg";
    if (!width || !height) return undefined;
    const thumbnail = await upload(http, () => bytes, {
      fileName: "thumbnail",
      contentType: mimetype,
      length: bytes.byteLength,
    });
    return { thumbnail_url: thumbnail, thumbnail_info: { w: width, h: height, mimetype, size: bytes.byteLength } };
  } catch {
    return undefined;
  }
}

/** Node's fetch sends the Content-Length given with a stream; workerd needs a FixedLengthStream for it. */
function withLength(body: ReadableStream<Uint8Array>, size: number): ReadableStream<Uint8Array> {
  const FixedLength = (
    globalThis as { FixedLengthStream?: new (length: number) => TransformStream<Uint8Array, Uint8Array> }
  ).FixedLengthStream;
  return FixedLength ? body.pipeThrough(new FixedLength(size)) : body;
}

/** The msgtype a file is sent as. */
export function msgtypeFor(mimeType: string | undefined): string {
  const kind = mimeType?.split("/")[0];
  return kind === "image" ? "m.image" : kind === "video" ? "m.video" : kind === "audio" ? "m.audio" : "m.file";
}
