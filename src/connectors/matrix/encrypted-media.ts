/**
 * Media in encrypted rooms (the spec's `file` object: AES-CTR with a key per file, and the ciphertext's SHA-256).
 *
 * The key of a file received lives only in its (encrypted) event: an attachment's ID names the file and the event
 * (`mxc://server/media#inboxd-e2ee:<room>:<event>`), never the key, so no API client or log sees it. A download
 * fetches the event again, decrypts it with the room key and opens the file with the key found there. The cipher
 * itself is matrix-sdk-crypto's (MatrixCrypto.encryptFile / decryptFile), never ours.
 */

const MXC = /^mxc:\/\/[A-Za-z0-9.:[\]-]+\/[A-Za-z0-9_-]+$/;
const MARK = "#inboxd-e2ee:";

/**
 * The largest file sent to or read from an encrypted room by default: the cipher works on the whole file in memory
 * (held about four times over at its peak), where other rooms' files stream. The Worker, with 128 MB, sets less
 * (MatrixOptions.maxEncryptedMediaBytes).
 */
export const MAX_ENCRYPTED_MEDIA_BYTES = 50 * 1024 * 1024;

/** The parts of an encrypted file that open it (url aside), as the spec's `file` object has them. */
export interface EncryptedFile {
  url: string;
  key: Record<string, unknown>;
  iv: string;
  hashes: Record<string, unknown>;
  v: string;
}

/** An attachment ID for an encrypted file: the file and the event that holds its key. */
export function encryptedMediaID(mxc: string, roomID: string, eventID: string): string {
  return `${mxc}${MARK}${encodeURIComponent(roomID)}:${encodeURIComponent(eventID)}`;
}

export function parseEncryptedMediaID(id: string): { mxc: string; roomID: string; eventID: string } | undefined {
  const at = id.indexOf(MARK);
  if (at < 0) return undefined;
  const mxc = id.slice(0, at);
  const [room, event, ...rest] = id.slice(at + MARK.length).split(":");
  if (!MXC.test(mxc) || !room || !event || rest.length > 0) return undefined;
  try {
    return { mxc, roomID: decodeURIComponent(room), eventID: decodeURIComponent(event) };
  } catch {
    return undefined;
  }
}

/** A content's `file` object when it is a well-formed encrypted file (what an image, video, audio or file carries). */
export function encryptedFileOf(value: unknown): EncryptedFile | undefined {
  if (!value || typeof value !== "object") return undefined;
  const f = value as Record<string, unknown>;
  if (typeof f.url !== "string" || !MXC.test(f.url)) return undefined;
  if (!f.key || typeof f.key !== "object" || typeof f.iv !== "string") return undefined;
  if (!f.hashes || typeof f.hashes !== "object" || typeof (f.hashes as Record<string, unknown>).sha256 !== "string")
    return undefined;
  return {
    url: f.url,
    key: f.key as Record<string, unknown>,
    iv: f.iv,
    hashes: f.hashes as Record<string, unknown>,
    v: typeof f.v === "string" ? f.v : "v2",
  };
}

/** The encrypted file in a message's content whose URL is `mxc`: the file itself or its thumbnail. */
export function findEncryptedFile(content: Record<string, unknown>, mxc: string): EncryptedFile | undefined {
  const info = content.info && typeof content.info === "object" ? (content.info as Record<string, unknown>) : {};
  for (const candidate of [content.file, info.thumbnail_file]) {
    const file = encryptedFileOf(candidate);
    if (file?.url === mxc) return file;
  }
  return undefined;
}
