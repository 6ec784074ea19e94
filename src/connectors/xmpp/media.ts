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

/** The link behind an attachment ID this account issued; undefined for anything else. */
export async function mediaURL(key: string, id: string): Promise<string | undefined> {
  if (!id.startsWith(PREFIX)) return undefined;
  const [encoded, signature] = id.slice(PREFIX.length).split(".");
  if (!encoded || !signature) return undefined;
  let url: string;
  try {
    url = new TextDecoder().decode(Uint8Array.from(atob(encoded.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
  return (await sign(key, url)) === signature && /^https?:\/\//i.test(url) ? url : undefined;
}

export function newMediaKey(): string {
  return base64url(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
}

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
  png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp",
  mp4: "video/mp4", webm: "video/webm", mp3: "audio/mpeg", ogg: "audio/ogg", m4a: "audio/mp4", opus: "audio/ogg",
  pdf: "application/pdf", txt: "text/plain",
};

async function sign(key: string, text: string): Promise<string> {
  const hmac = await crypto.subtle.importKey("raw", new TextEncoder().encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", hmac, new TextEncoder().encode(text)));
  return base64url(String.fromCharCode(...mac.slice(0, 16)));
}

function base64url(binary: string): string {
  return btoa(unescape(encodeURIComponent(binary))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
