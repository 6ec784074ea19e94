import { NetworkError } from "../../bridges/connector.ts";
import { isPrivateHost } from "../../util/hosts.ts";
import { base64url, fromBase64url, hmacHex, randomHex, sameSecret } from "../../util/encoding.ts";
import type { Attachment } from "../../schema/wire.ts";

/**
 * Files shared over XMPP are plain HTTP links (XEP-0066, XEP-0363). An attachment's `id` (`mxc://xmpp/…`) names such a link with a
 * signature made with a key only this account holds, so `POST /v1/assets/download` fetches only links that arrived
 * in this account's messages — never an arbitrary URL a caller makes up (which would let any token holder make the
 * daemon request internal addresses).
 */
const PREFIX = "mxc://xmpp/"; // the form POST /v1/assets/download takes

export async function mediaID(key: string, url: string): Promise<string> {
  return `${PREFIX}${base64url(url)}.${await sign(key, url)}`;
}

/** A 128-bit tag is plenty to make an ID unforgeable, and keeps IDs short. */
const sign = async (key: string, url: string) => (await hmacHex(key, url)).slice(0, 32);

/** The link behind an attachment ID this account issued; undefined for anything else. */
export async function mediaURL(key: string, id: string): Promise<string | undefined> {
  if (!id.startsWith(PREFIX)) return undefined;
  const [encoded, signature] = id.slice(PREFIX.length).split(".");
  if (!encoded || !signature) return undefined;
  let url: string;
  try {
    url = fromBase64url(encoded);
  } catch {
    return undefined;
  }
  return sameSecret(await sign(key, url), signature) && /^https?:\/\//i.test(url) ? url : undefined;
}

export const newMediaKey = () => randomHex(32);

/** What a link's name says about the file (the bytes are fetched only when a client asks for them). */
export async function attachmentForLink(key: string, url: string, description?: string): Promise<Attachment> {
  const fileName = decodeURIComponent(new URL(url).pathname.split("/").pop() || "file");
  const mimeType = MIME_BY_EXTENSION[fileName.split(".").pop()?.toLowerCase() ?? ""];
  const kind = mimeType?.split("/")[0];
  return {
    type: kind === "image" ? "img" : kind === "video" ? "video" : kind === "audio" ? "audio" : "unknown",
    id: await mediaID(key, url),
    fileName: description && !/^https?:/i.test(description) ? description : fileName,
    ...(mimeType ? { mimeType } : {}),
  };
}

const MIME_BY_EXTENSION: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  mp4: "video/mp4",
  webm: "video/webm",
  mp3: "audio/mpeg",
  ogg: "audio/ogg",
  m4a: "audio/mp4",
  opus: "audio/ogg",
  pdf: "application/pdf",
  txt: "text/plain",
};

/**
 * Fetches a shared file. The link is the sender's choice, so it may point into this machine's network: addresses
 * on loopback, private and link-local ranges are refused (unless the account's own server lives there, as a
 * server on this machine hands out loopback links), redirects are followed by hand and checked the same way, and
 * an answer must start within 30 s. Host names are judged as written: one that resolves to a private address is
 * not caught (a Worker cannot resolve names; noted in docs/networks.md).
 */
export async function fetchMedia(url: string, allowPrivate: boolean): Promise<Response> {
  let target = url;
  for (let hop = 0; hop < 5; hop++) {
    const parsed = new URL(target);
    if (
      (parsed.protocol !== "http:" && parsed.protocol !== "https:") ||
      (!allowPrivate && isPrivateHost(parsed.hostname))
    )
      throw new NetworkError(
        "rejected",
        `the file's link points to ${parsed.hostname}, which inboxd does not fetch from`,
      );
    // The limit is on the answer's start only: a large file may take longer to stream.
    const started = new AbortController();
    const timer = setTimeout(() => started.abort(new Error("no answer within 30 s")), 30_000);
    const response = await fetch(target, { redirect: "manual", signal: started.signal })
      .catch((error: Error) => {
        throw new NetworkError("unavailable", `cannot fetch the file: ${error.message}`);
      })
      .finally(() => clearTimeout(timer));
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      target = new URL(location, target).toString();
      continue;
    }
    if (!response.ok || !response.body)
      throw new NetworkError(
        response.status === 404 ? "not_found" : "unavailable",
        `the file's server answered HTTP ${response.status}`,
      );
    return response;
  }
  throw new NetworkError("unavailable", "the file's link redirects too often");
}
