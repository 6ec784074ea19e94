import { NetworkError, type NetworkMedia, type OutgoingFile } from "../../bridges/connector.ts";
import type { MatrixHttp } from "./http.ts";
import { seg } from "./http.ts";

const MXC = /^mxc:\/\/([A-Za-z0-9.:[\]-]+)\/([A-Za-z0-9_-]+)$/;

/**
 * Downloads the file behind an mxc:// URL through the account's own homeserver (which fetches remote media over
 * federation), with authenticated media (`/_matrix/client/v1/media`, spec 1.11) where the server offers it and the
 * older `/_matrix/media/v3` otherwise. Null for anything that is not an mxc:// URL.
 */
export async function downloadMedia(http: MatrixHttp, url: string, authenticated: boolean): Promise<NetworkMedia | null> {
  const match = MXC.exec(url);
  if (!match) return null;
  const path = authenticated ? `/_matrix/client/v1/media/download/${seg(match[1])}/${seg(match[2])}` : `/_matrix/media/v3/download/${seg(match[1])}/${seg(match[2])}`;
  const response = await http.stream(path, { timeoutMs: 60_000, query: authenticated ? undefined : { allow_redirect: "true" } });
  if (!response.body) throw new NetworkError("unavailable", "the homeserver sent no file");
  const disposition = response.headers.get("content-disposition") ?? "";
  const name = /filename\*=utf-8''([^;]+)/i.exec(disposition)?.[1] ?? /filename="?([^";]+)"?/i.exec(disposition)?.[1];
  let fileName: string | undefined;
  try {
    fileName = name ? decodeURIComponent(name) : undefined;
  } catch {
    fileName = name;
  }
  return { content: response.body as unknown as AsyncIterable<Uint8Array>, fileName, mimeType: response.headers.get("content-type") ?? undefined };
}

/** Uploads a file to the homeserver's media repository; resolves with its mxc:// URL. */
export async function uploadMedia(http: MatrixHttp, file: OutgoingFile): Promise<string> {
  const { info } = file;
  if (info.fileSize === undefined) throw new NetworkError("rejected", "the attachment's size is unknown");
  const answer = await http.request<{ content_uri?: unknown }>("POST", "/_matrix/media/v3/upload", {
    query: { filename: info.fileName ?? "file" },
    raw: { body: withLength(file.open(), info.fileSize), contentType: info.mimeType ?? "application/octet-stream", length: info.fileSize },
    timeoutMs: 120_000,
  });
  if (typeof answer.content_uri !== "string" || !MXC.test(answer.content_uri)) throw new NetworkError("unavailable", "the homeserver's upload answer has no mxc:// URI");
  return answer.content_uri;
}

/** Node's fetch sends the Content-Length given with a stream; workerd needs a FixedLengthStream for it. */
function withLength(body: ReadableStream<Uint8Array>, size: number): ReadableStream<Uint8Array> {
  const FixedLength = (globalThis as { FixedLengthStream?: new (length: number) => TransformStream<Uint8Array, Uint8Array> }).FixedLengthStream;
  return FixedLength ? body.pipeThrough(new FixedLength(size)) : body;
}

/** The msgtype a file is sent as. */
export function msgtypeFor(mimeType: string | undefined): string {
  const kind = mimeType?.split("/")[0];
  return kind === "image" ? "m.image" : kind === "video" ? "m.video" : kind === "audio" ? "m.audio" : "m.file";
}
