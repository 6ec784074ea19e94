/**
 * Base64 files from tools (upload_asset, send_message's attachment) become uploads like POST /v1/assets/upload/base64
 * makes them. The decoding belongs beside storeAsset in services/assets.ts, where the REST route could share it;
 * until it moves there, it lives here.
 */
import type * as v from "valibot";
import { ApiError, badRequest } from "../http/errors.ts";
import { MAX_BASE64_BYTES, presentUpload, storeAsset, type AssetRecord } from "../services/assets.ts";
import type { Context } from "../services/context.ts";
import type { Upload } from "../schema/bridges.ts";

/** Characters of base64 an MCP request may carry: MCP_BODY_BYTES bounds the whole request anyway. */
export const MCP_BODY_BYTES = 16 * 1024 * 1024;

export async function uploadBase64(app: Context, file: { content: string; fileName?: string; mimeType?: string }): Promise<AssetRecord> {
  const bytes = fromBase64(file.content);
  if (bytes.length > MAX_BASE64_BYTES) throw new ApiError(413, "PAYLOAD_TOO_LARGE", `base64 files are limited to ${MAX_BASE64_BYTES} bytes`);
  return storeAsset(app, app.assets, single(bytes), { fileName: file.fileName, mimeType: file.mimeType, kind: "upload", limit: MAX_BASE64_BYTES });
}

/** The upload as POST /v1/assets/upload answers it. */
export const presentAsset = (app: Context, asset: AssetRecord) => presentUpload(app.assets, asset) as v.InferOutput<typeof Upload>;

/** Standard or URL-safe base64, padded or not, with an optional data: URL prefix and whitespace. */
function fromBase64(text: string): Uint8Array {
  const body = text.replace(/^data:[^,]*,/, "").replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/");
  const unpadded = body.replace(/={1,2}$/, "");
  const refused = () => badRequest("content is not base64", [{ code: "invalid_base64", message: "expected base64", path: ["arguments", "content"] }]);
  if (/[^A-Za-z0-9+/]/.test(unpadded) || unpadded.length % 4 === 1 || (body !== unpadded && body.length % 4 !== 0)) throw refused();
  const binary = atob(unpadded + "=".repeat((4 - (unpadded.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

async function* single(bytes: Uint8Array) {
  yield bytes;
}
