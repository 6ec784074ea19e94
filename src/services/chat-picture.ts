import { ApiError, unprocessable } from "../http/errors.ts";
import { resolveLocalAsset, srcURL, takeUpload, type AssetRecord } from "./assets.ts";
import type { Context } from "./context.ts";

/**
 * A chat's picture (PATCH /v1/chats/{id} `imgURL`) is a local image asset, named the ways a client has one: the
 * `uploadID` or `srcURL` an upload answered, the asset's `mxc://inboxd/…` / `localmxc://inboxd/…` URL, or — as the
 * official clients send it, a filesystem path — an absolute path inside this daemon's asset directory. Anything
 * else (a path elsewhere, http(s), data: or another network's mxc:// URL) is refused: the server never reads a
 * file it did not store, and never fetches a URL for a picture.
 *
 * Returns the asset; the chat shows its srcURL as `imgURL` once the network took it (then `keepChatPicture`).
 */
export async function findChatPicture(ctx: Context, value: string): Promise<AssetRecord> {
  const refuse = (why: string) =>
    unprocessable(`imgURL ${why}: send an image's uploadID or srcURL from POST /v1/assets/upload`, ["body", "imgURL"]);
  // A bare uploadID is the asset's own mxc:// URL; a path is a file:// URL. Only URLs of this server resolve.
  const url = value.startsWith("/") ? `file://${encodeURI(value)}` : /^[a-z0-9]{1,40}$/i.test(value) ? `mxc://inboxd/${value}` : value;
  let asset: AssetRecord | undefined;
  try {
    asset = await resolveLocalAsset(ctx, ctx.assets, url);
  } catch (error) {
    // Unknown assets (404) and paths outside the asset directory (403) are both "not an asset of this server".
    if (error instanceof ApiError && error.status < 500) throw refuse("does not name an asset of this server");
    throw error;
  }
  if (!asset) throw refuse(/^(file:\/\/|(local)?mxc:\/\/inboxd\/)/i.test(url) ? "does not name an asset of this server" : "must be a local asset");
  if (!asset.mimeType.startsWith("image/")) throw refuse(`must be an image (this asset is ${asset.mimeType})`);
  return asset;
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
