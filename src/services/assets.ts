import { createStorage, type Storage } from "unstorage";
import { BlobStore, BlobTooLargeError, MissingChunkError, NotAStoredFileError } from "../assets/blob-store.ts";
import { inspect } from "../assets/inspect.ts";
import type { LocalFiles } from "../assets/local-files.ts";
import { LIMITS } from "../schema/limits.ts";
import { ApiError, badRequest, notFound, unprocessable } from "../errors.ts";
import type { Attachment } from "../schema/wire.ts";
import { type AssetRecord, encodeKeyPart } from "../store/records.ts";
import type { AssetConfig, Context } from "./context.ts";

/**
 * Assets: uploads (to send as attachments), network media fetched on demand, and serving any of them with ranges
 * and conditional requests. Bytes live in the BlobStore; a record `asset:<id>` describes them.
 */

export const MAX_UPLOAD_BYTES = LIMITS.uploadBytes;
export const MAX_BASE64_BYTES = LIMITS.base64DataBytes;
export const UPLOAD_TTL_MS = 24 * 3_600_000;

/** Where asset bytes go (raw items; default: memory) and, on the daemon, the directory whose file:// URLs name them. */
export interface AssetOptions {
  storage?: Storage;
  dir?: string;
  maxUploadBytes?: number;
  /** Uploads never sent are deleted after this long (default 24 h). */
  uploadTtlMs?: number;
  localFiles?: LocalFiles;
}

export function assetConfig(options: AssetOptions = {}): AssetConfig {
  return {
    blobs: new BlobStore(options.storage ?? createStorage()),
    assetDir: options.dir,
    localFiles: options.localFiles,
    maxUploadBytes: options.maxUploadBytes ?? MAX_UPLOAD_BYTES,
    uploadTtlMs: options.uploadTtlMs ?? UPLOAD_TTL_MS,
    downloads: new Map(),
  };
}
const LOCAL_HOST = "inboxd";
/** The record key of an asset; IDs can come from clients (uploadID, URLs), so they are encoded. */
export const assetKey = (id: string) => `asset:${encodeKeyPart(id)}`;
const sourceKey = (url: string) => `assetsrc:${encodeKeyPart(url)}`;
const PENDING = "uploads";

function newAssetID(): string {
  return [...crypto.getRandomValues(new Uint8Array(12))]
    .map((b) => b.toString(36).padStart(2, "0"))
    .join("")
    .slice(0, 20);
}

export function srcURL(config: AssetConfig, asset: AssetRecord): string {
  if (!config.assetDir) return `localmxc://${LOCAL_HOST}/${asset.id}`;
  // Only the ID names the asset; the name is for people and tools that want an extension, so make it a plain segment.
  const name = asset.fileName.replace(/[\\/\0]/g, "_").replace(/^\.{1,2}$/, "_");
  // toWellFormed: a lone surrogate (which no URL can carry) becomes U+FFFD instead of a URIError.
  return `file://${encodeURI(config.assetDir.toWellFormed())}/${asset.id}/${encodeURIComponent(name.toWellFormed())}`;
}

export const mxcURL = (asset: AssetRecord) => `mxc://${LOCAL_HOST}/${asset.id}`;

export function presentUpload(config: AssetConfig, asset: AssetRecord) {
  const out: Record<string, unknown> = {
    uploadID: asset.id,
    srcURL: srcURL(config, asset),
    fileName: asset.fileName,
    mimeType: asset.mimeType,
    fileSize: asset.size,
  };
  if (asset.width !== undefined) out.width = asset.width;
  if (asset.height !== undefined) out.height = asset.height;
  if (asset.duration !== undefined) out.duration = asset.duration;
  return out;
}

/** Stores bytes as a new asset, inspecting them; removes them again if anything fails. */
export async function storeAsset(
  ctx: Context,
  config: AssetConfig,
  source: AsyncIterable<Uint8Array>,
  meta: { fileName?: string; mimeType?: string; kind: AssetRecord["kind"]; sourceURL?: string; limit: number },
): Promise<AssetRecord> {
  const id = newAssetID();
  let written: Awaited<ReturnType<BlobStore["write"]>>;
  try {
    written = await config.blobs.write(id, source, { limit: meta.limit });
  } catch (error) {
    if (error instanceof BlobTooLargeError)
      throw new ApiError(413, "PAYLOAD_TOO_LARGE", `the file is larger than ${meta.limit} bytes`);
    throw error;
  }
  const info = await inspect(written.head, written.size, meta.mimeType, () =>
    config.blobs.read(id, 0, Math.max(0, written.size - 1)),
  );
  const asset: AssetRecord = {
    id,
    fileName: meta.fileName || `${id}${extensionFor(info.mimeType)}`,
    mimeType: info.mimeType,
    size: written.size,
    chunks: written.chunks,
    width: info.width,
    height: info.height,
    duration: info.duration,
    createdAt: ctx.now(),
    kind: meta.kind,
    sourceURL: meta.sourceURL,
  };
  ctx.db.kv.put(assetKey(id), asset);
  if (meta.kind === "upload") {
    const pending = (await ctx.db.kv.get<Record<string, number>>(PENDING)) ?? {};
    pending[id] = asset.createdAt;
    ctx.db.kv.put(PENDING, pending);
  }
  if (meta.sourceURL) ctx.db.kv.put(sourceKey(meta.sourceURL), id);
  await ctx.db.commit();
  if (meta.kind === "upload") expireUploadAt(ctx, asset.createdAt + config.uploadTtlMs);
  return asset;
}

/** Makes sure the runtime wakes the app by `expires`, when an unsent upload is to be deleted. */
function expireUploadAt(ctx: Context, expires: number) {
  if (ctx.nextUploadExpiry === undefined || expires < ctx.nextUploadExpiry) {
    ctx.nextUploadExpiry = expires;
    ctx.rearm();
  }
}

/**
 * Applies a declared type that arrived after the bytes (a multipart `mimeType` field following the file part):
 * inspects the stored file again under that type, so an image still gets its dimensions.
 */
export async function retypeAsset(
  ctx: Context,
  config: AssetConfig,
  asset: AssetRecord,
  mimeType: string,
): Promise<void> {
  const headBytes = Math.min(asset.size, 256 * 1024);
  const head = new Uint8Array(headBytes);
  let at = 0;
  if (headBytes > 0)
    for await (const piece of config.blobs.read(asset.id, 0, headBytes - 1) as unknown as AsyncIterable<Uint8Array>)
      head.set(piece, (at += piece.length) - piece.length);
  const info = await inspect(head, asset.size, mimeType, () => openAsset(config, asset));
  Object.assign(asset, { mimeType: info.mimeType, width: info.width, height: info.height, duration: info.duration });
  ctx.db.kv.put(assetKey(asset.id), asset);
}

/** The asset's bytes as a stream (an empty file is an empty stream). */
export function openAsset(config: AssetConfig, asset: AssetRecord): ReadableStream<Uint8Array> {
  return asset.size ? config.blobs.read(asset.id, 0, asset.size - 1) : new ReadableStream({ start: (c) => c.close() });
}

/**
 * Makes sure bytes [start, end] of an asset (all of it by default) can be read from the store before any of them is
 * answered or handed to a network, so that a broken store is a clear error instead of a stream cut off midway: 403
 * when a stored file is not a regular file of the store (a symlink planted in the daemon's asset directory is
 * never followed), 404 when the bytes are gone.
 */
export async function checkAssetBytes(
  config: AssetConfig,
  asset: AssetRecord,
  start = 0,
  end = asset.size - 1,
): Promise<void> {
  if (asset.size === 0) return;
  try {
    await config.blobs.check(asset.id, start, end);
  } catch (error) {
    if (error instanceof NotAStoredFileError)
      throw new ApiError(
        403,
        "NOT_A_STORED_FILE",
        `the stored file of asset ${asset.id} is not a regular file of the asset store (a symbolic link or another kind of file), so it is not read`,
      );
    if (error instanceof MissingChunkError)
      throw new ApiError(404, "NOT_FOUND", `the stored bytes of asset ${asset.id} are missing`);
    throw error;
  }
}

/** Takes an upload for sending: it must exist, not have been sent yet, and have its bytes in the store. */
export async function takeUpload(ctx: Context, uploadID: string): Promise<AssetRecord> {
  const unsent = async () => {
    const asset = await ctx.db.kv.get<AssetRecord>(assetKey(uploadID));
    if (asset?.kind !== "upload")
      throw unprocessable(`unknown uploadID ${uploadID}`, ["body", "attachment", "uploadID"]);
    if (asset.usedAt !== undefined)
      throw unprocessable(`uploadID ${uploadID} was already sent; upload the file again`, [
        "body",
        "attachment",
        "uploadID",
      ]);
    return asset;
  };
  await checkAssetBytes(ctx.assets, await unsent());
  // Read again, with no wait before it is marked used: another send may have taken it during the check.
  const asset = await unsent();
  asset.usedAt = ctx.now();
  ctx.db.kv.put(assetKey(uploadID), asset);
  const pending = (await ctx.db.kv.get<Record<string, number>>(PENDING)) ?? {};
  delete pending[uploadID];
  ctx.db.kv.put(PENDING, pending);
  return asset;
}

/**
 * Keeps uploads past the time unsent uploads are deleted, without using them up (a chat's draft holds them): they
 * can still be sent once. Written with the caller's next commit.
 */
export async function keepUploads(ctx: Context, uploadIDs: string[]): Promise<void> {
  const pending = (await ctx.db.kv.get<Record<string, number>>(PENDING)) ?? {};
  if (!uploadIDs.some((id) => id in pending)) return;
  for (const id of uploadIDs) delete pending[id];
  ctx.db.kv.put(PENDING, pending);
}

/** Lets kept uploads that were never sent be deleted again, a day (the upload TTL) from now. */
export async function releaseUploads(ctx: Context, config: AssetConfig, uploadIDs: string[]): Promise<void> {
  const pending = (await ctx.db.kv.get<Record<string, number>>(PENDING)) ?? {};
  const now = ctx.now();
  let released = false;
  for (const id of uploadIDs) {
    const asset = await ctx.db.kv.get<AssetRecord>(assetKey(id));
    if (asset?.kind !== "upload" || asset.usedAt !== undefined || id in pending) continue;
    pending[id] = now;
    released = true;
  }
  if (!released) return;
  ctx.db.kv.put(PENDING, pending);
  await ctx.db.commit();
  expireUploadAt(ctx, now + config.uploadTtlMs);
}

/**
 * The asset a URL of this server names (`mxc://inboxd/<id>`, `localmxc://inboxd/<id>`, a file:// URL inside the asset
 * directory), or undefined for any other URL. Never fetches anything.
 */
export async function resolveLocalAsset(
  ctx: Context,
  config: AssetConfig,
  url: string,
): Promise<AssetRecord | undefined> {
  const local = /^(?:local)?mxc:\/\/inboxd\/([a-z0-9]{1,40})$/i.exec(url);
  if (local) return requireAsset(ctx, local[1]);
  if (url.startsWith("file://")) return requireAsset(ctx, assetIDFromFileURL(config, url));
  return undefined;
}

/** Resolves an asset URL (mxc://, localmxc://, file://) to a local asset, fetching network media when needed. */
export async function resolveAsset(ctx: Context, config: AssetConfig, url: string): Promise<AssetRecord> {
  const local = await resolveLocalAsset(ctx, config, url);
  if (local) return local;
  if (!/^(?:local)?mxc:\/\/[^/\s]+\/[^\s]+$/i.test(url))
    throw badRequest("url must be an mxc://, localmxc:// or file:// URL", [
      { code: "invalid_url", message: "unsupported URL", path: ["url"] },
    ]);
  const known = await ctx.db.kv.get<string>(sourceKey(url));
  if (known) {
    const asset = await ctx.db.kv.get<AssetRecord>(assetKey(known));
    if (asset) return asset;
  }
  // One fetch per URL at a time: concurrent requests for the same media share it instead of storing copies.
  const running = config.downloads.get(url);
  if (running) return running;
  const fetching = fetchMedia(ctx, config, url).finally(() => config.downloads.delete(url));
  config.downloads.set(url, fetching);
  return fetching;
}

async function fetchMedia(ctx: Context, config: AssetConfig, url: string): Promise<AssetRecord> {
  // Several networks use mxc:// URLs (Matrix for any server name; desktop-api for its own): one that cannot serve a
  // URL may fail on it rather than decline, so the others are still asked, and its failure counts only if none can.
  let failure: unknown;
  for (const client of ctx.bridges.clientsList()) {
    if (!client.downloadMedia) continue;
    const media = await client.downloadMedia(url).catch((error: unknown) => void (failure ??= error));
    if (!media) continue;
    return storeAsset(ctx, config, media.content, {
      fileName: media.fileName,
      mimeType: media.mimeType,
      kind: "remote",
      sourceURL: url,
      limit: MAX_UPLOAD_BYTES,
    });
  }
  if (failure) throw failure;
  throw notFound(`asset ${url}`);
}

async function requireAsset(ctx: Context, id: string): Promise<AssetRecord> {
  const asset = await ctx.db.kv.get<AssetRecord>(assetKey(id));
  if (!asset) throw notFound(`asset ${id}`);
  return asset;
}

/**
 * file:// URLs name assets only inside the daemon's own asset directory, as `<dir>/<id>/<name>`. The path is
 * decoded and normalised before the check, and only the asset ID is used afterwards: the file system is never
 * opened by path, so `..`, encoded separators and symlinks cannot reach anything else.
 */
function assetIDFromFileURL(config: AssetConfig, url: string): string {
  const refuse = () =>
    new ApiError(403, "PATH_NOT_ALLOWED", "file:// URLs may only name assets inside this server's asset directory");
  if (!config.assetDir) throw refuse();
  let path: string;
  try {
    const parsed = new URL(url);
    if (parsed.host !== "" && parsed.host !== "localhost") throw refuse();
    path = decodeURIComponent(parsed.pathname);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw refuse();
  }
  if (path.includes("\0") || path.includes("\\") || path.split("/").some((s) => s === ".." || s === "."))
    throw refuse();
  const prefix = `${config.assetDir.replace(/\/+$/, "")}/`;
  if (!path.startsWith(prefix)) throw refuse();
  const [id] = path.slice(prefix.length).split("/");
  if (!/^[a-z0-9]{1,40}$/i.test(id)) throw refuse();
  return id;
}

/** The attachment a sent upload becomes, and the message type that follows from it. */
export function attachmentFor(
  config: AssetConfig,
  asset: AssetRecord,
  overrides: {
    fileName?: string;
    mimeType?: string;
    duration?: number;
    size?: { width: number; height: number };
    type?: string;
  },
): { attachment: Attachment; messageType: "IMAGE" | "VIDEO" | "VOICE" | "AUDIO" | "FILE" | "STICKER" } {
  const mimeType = overrides.mimeType ?? asset.mimeType;
  const type = overrides.type === "voice-note" ? "voiceNote" : overrides.type;
  const isGif = type === "gif" || mimeType === "image/gif";
  const isSticker = type === "sticker";
  const isVoiceNote = type === "voiceNote";
  const forced: Record<string, Attachment["type"]> = { image: "img", video: "video", audio: "audio", file: "unknown" };
  const kind: Attachment["type"] =
    (type ? forced[type] : undefined) ??
    (mimeType.startsWith("image/") || isSticker
      ? "img"
      : mimeType.startsWith("video/") || (isGif && !mimeType.startsWith("image/"))
        ? "video"
        : mimeType.startsWith("audio/") || isVoiceNote
          ? "audio"
          : "unknown");
  const attachment: Attachment = {
    type: kind,
    id: mxcURL(asset),
    srcURL: srcURL(config, asset),
    mimeType,
    fileName: overrides.fileName ?? asset.fileName,
    fileSize: asset.size,
  };
  const width = overrides.size?.width ?? asset.width,
    height = overrides.size?.height ?? asset.height;
  if (width !== undefined && height !== undefined) attachment.size = { width, height };
  const duration = overrides.duration ?? asset.duration;
  if (duration !== undefined) attachment.duration = duration;
  if (isGif) attachment.isGif = true;
  if (isSticker) attachment.isSticker = true;
  if (isVoiceNote) attachment.isVoiceNote = true;
  const messageType = isSticker
    ? "STICKER"
    : isVoiceNote
      ? "VOICE"
      : kind === "img"
        ? "IMAGE"
        : kind === "video"
          ? "VIDEO"
          : kind === "audio"
            ? "AUDIO"
            : "FILE";
  return { attachment, messageType };
}

/** Deletes uploads never sent within the TTL; returns when the next one expires. */
export async function cleanupUploads(ctx: Context, config: AssetConfig): Promise<number | undefined> {
  const pending = (await ctx.db.kv.get<Record<string, number>>(PENDING)) ?? {};
  const now = ctx.now();
  let next: number | undefined;
  let changed = false;
  for (const [id, createdAt] of Object.entries(pending)) {
    const expires = createdAt + config.uploadTtlMs;
    if (expires > now) {
      next = next === undefined ? expires : Math.min(next, expires);
      continue;
    }
    const asset = await ctx.db.kv.get<AssetRecord>(assetKey(id));
    if (asset) await config.blobs.remove(id, asset.chunks);
    ctx.db.kv.remove(assetKey(id));
    delete pending[id];
    changed = true;
  }
  if (changed) {
    ctx.db.kv.put(PENDING, pending);
    await ctx.db.commit();
  }
  ctx.nextUploadExpiry = next;
  return next;
}

function extensionFor(mime: string): string {
  const map: Record<string, string> = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "video/mp4": ".mp4",
    "audio/ogg": ".ogg",
    "audio/mpeg": ".mp3",
    "audio/wav": ".wav",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
  };
  return map[mime] ?? "";
}

/**
 * Stores a file sent as base64 text (POST /v1/assets/upload/base64, MCP tools): standard or URL-safe alphabet,
 * padded or not, with an optional data: URL prefix and whitespace. `at` is where `content` was in the request, for
 * the 400 that names it.
 */
export async function uploadBase64(
  ctx: Context,
  config: AssetConfig,
  file: { content: string; fileName?: string; mimeType?: string },
  at: (string | number)[],
): Promise<AssetRecord> {
  const bytes = decodeBase64(file.content, at);
  if (bytes.length > MAX_BASE64_BYTES)
    throw new ApiError(
      413,
      "PAYLOAD_TOO_LARGE",
      `base64 uploads are limited to ${MAX_BASE64_BYTES} bytes; use the multipart upload`,
    );
  return storeBytes(ctx, config, bytes, {
    fileName: file.fileName,
    mimeType: file.mimeType,
    kind: "upload",
    limit: MAX_BASE64_BYTES,
  });
}

function decodeBase64(text: string, at: (string | number)[]): Uint8Array {
  const clean = text.replace(/^data:[^,]*,/, "").replace(/\s+/g, "");
  const invalid = () =>
    badRequest("content is not base64", [{ code: "invalid_base64", message: "expected base64", path: at }]);
  // Padding only at the end, and never a length no encoder produces (one character past a group of four).
  if (
    !/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean) ||
    clean.replace(/=+$/, "").length % 4 === 1 ||
    (clean.includes("=") && clean.length % 4 !== 0)
  )
    throw invalid();
  let binary: string;
  try {
    binary = atob(clean.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    throw invalid();
  }
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** storeAsset for bytes already in memory. */
export function storeBytes(
  ctx: Context,
  config: AssetConfig,
  bytes: Uint8Array,
  meta: Parameters<typeof storeAsset>[3],
): Promise<AssetRecord> {
  return storeAsset(ctx, config, once(bytes), meta);
}

async function* once(bytes: Uint8Array) {
  yield bytes;
}
