import { fileTypeFromBuffer } from "file-type/core";
import { LocalFileRefusedError } from "../assets/local-files.ts";
import { ApiError, unprocessable } from "../errors.ts";
import { LIMITS } from "../schema/limits.ts";
import { checkAssetBytes, resolveLocalAsset, srcURL, storeBytes, takeUpload } from "./assets.ts";
import type { AssetRecord } from "../store/records.ts";
import type { Context } from "./context.ts";

/** The image formats a chat picture may be in, told by their content (the file name's extension is not trusted). */
const PICTURE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/**
 * A chat's picture (PATCH /v1/chats/{id} `imgURL`) is an image asset, named the ways a client has one: the `uploadID`
 * or `srcURL` an upload answered, the asset's `mxc://inboxd/…` / `localmxc://inboxd/…` URL, or — as the 5.0.0
 * document describes it, "a local filesystem path" — an absolute path or file:// URL. A path inside this daemon's
 * asset directory names that asset; any other is read as a local file (src/assets/local-files.ts: a regular file,
 * not a link, readable by the daemon, at most LIMITS.avatarBytes, whose content is a PNG, JPEG, GIF or WebP image)
 * and stored as a new asset, all checked before any byte of it goes to a network. A Worker has no files: a path
 * there is refused with the advice to upload first. Anything else (http(s), data:, another network's mxc:// URL)
 * is refused: the server never fetches a URL for a picture.
 *
 * Returns the asset; the chat shows its srcURL as `imgURL` once the network took it (then `keepChatPicture`).
 */
export async function findChatPicture(ctx: Context, value: string): Promise<AssetRecord> {
  const path = localPath(value);
  // A bare uploadID is the asset's own mxc:// URL; a path is a file:// URL. Only URLs of this server resolve.
  const url =
    path !== undefined
      ? `file://${encodeURI(path)}`
      : /^[a-z0-9]{1,40}$/i.test(value)
        ? `mxc://inboxd/${value}`
        : value;
  let asset: AssetRecord | undefined;
  try {
    asset = await resolveLocalAsset(ctx, ctx.assets, url);
  } catch (error) {
    // A path outside the asset directory (403) is a local file; an unknown asset (404) is not an asset of this server.
    if (error instanceof ApiError && error.code === "PATH_NOT_ALLOWED" && path !== undefined)
      return readLocalPicture(ctx, path);
    if (error instanceof ApiError && error.status < 500) throw refuse("does not name an asset of this server");
    throw error;
  }
  if (!asset) {
    if (!/^[a-z][a-z0-9+.-]*:/i.test(value))
      throw refuse("is neither an uploadID nor an absolute path (a local file's path must start with /)");
    throw refuse(
      /^(file:\/\/|(local)?mxc:\/\/inboxd\/)/i.test(url)
        ? "does not name an asset of this server"
        : "must be a local asset or file",
    );
  }
  if (!asset.mimeType.startsWith("image/")) throw refuse(`must be an image (this asset is ${asset.mimeType})`);
  if (asset.size > LIMITS.avatarBytes)
    throw refuse(`is larger than the ${LIMITS.avatarBytes}-byte limit for a chat picture`);
  await checkAssetBytes(ctx.assets, asset);
  return asset;
}

const refuse = (why: string) =>
  unprocessable(
    `imgURL ${why}: send an image's uploadID or srcURL from POST /v1/assets/upload, or the absolute path of an image file on this machine`,
    ["body", "imgURL"],
  );

/** The absolute path an `imgURL` names (`/…`, or a `file://` URL of this host), or undefined for anything else. */
function localPath(value: string): string | undefined {
  if (value.startsWith("/")) return value;
  if (!/^file:/i.test(value)) return undefined;
  try {
    const url = new URL(value);
    if (url.host !== "" && url.host !== "localhost") return undefined; // another host's file: refused as not local
    return decodeURIComponent(url.pathname);
  } catch {
    return undefined;
  }
}

/** Reads a local image file into a new asset, after every rule is checked; nothing of a refused file is kept. */
async function readLocalPicture(ctx: Context, path: string): Promise<AssetRecord> {
  const files = ctx.assets.localFiles;
  if (!files)
    throw unprocessable(
      "imgURL is a local file path, which this server cannot read (a Worker has no file system): upload the image first (POST /v1/assets/upload) and send its uploadID",
      ["body", "imgURL"],
    );
  if (path.includes("\0")) throw refuse("is not a valid path (it contains NUL)");
  let bytes: Uint8Array;
  try {
    bytes = await files.read(path, LIMITS.avatarBytes);
  } catch (error) {
    if (error instanceof LocalFileRefusedError) throw refuse(`names a local file that ${error.message}`);
    throw error;
  }
  const type = await fileTypeFromBuffer(bytes).catch(() => undefined);
  if (!type || !PICTURE_TYPES.has(type.mime))
    throw refuse(
      `names a local file that is not a PNG, JPEG, GIF or WebP image by its content${type ? ` (it is ${type.mime})` : ""}`,
    );
  const fileName = path.slice(path.lastIndexOf("/") + 1) || `picture.${type.ext}`;
  return storeBytes(ctx, ctx.assets, bytes, {
    fileName,
    mimeType: type.mime,
    kind: "upload",
    limit: LIMITS.avatarBytes,
  });
}

/** Keeps a chat's picture for good, and answers the srcURL the chat shows as its `imgURL`. */
export async function keepChatPicture(ctx: Context, asset: AssetRecord): Promise<string> {
  if (asset.kind === "upload" && asset.usedAt === undefined) {
    // Taking the upload keeps it: unsent uploads are deleted after a day, a chat's picture must stay.
    await takeUpload(ctx, asset.id).catch((error) => {
      // Another request took it meanwhile: it is kept all the same.
      if (!(error instanceof ApiError)) throw error;
    });
  }
  return srcURL(ctx.assets, asset);
}
