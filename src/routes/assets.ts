import * as v from "valibot";
import { LIMITS } from "../http/limits.ts";
import { streamMultipart } from "../assets/multipart.ts";
import { ApiError, badRequest } from "../http/errors.ts";
import type { ApiRouter, RequestContext } from "../http/route-kit.ts";
import { serveBytes } from "../http/serve-bytes.ts";
import { refuseDeclaredLength, validate, validateBody } from "../http/validate.ts";
import { assetKey, MAX_BASE64_BYTES, presentUpload, resolveAsset, retypeAsset, srcURL, storeAsset, type AssetConfig } from "../services/assets.ts";

export const Base64Body = v.object({
  content: v.pipe(v.string(), v.minLength(1, "content must not be empty")),
  fileName: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(255))),
  mimeType: v.optional(v.pipe(v.string(), v.regex(/^[\w.+-]+\/[\w.+-]+$/, "expected a MIME type like image/png"))),
});
const url = v.pipe(v.string(), v.minLength(1), v.maxBytes(LIMITS.urlBytes, `must be at most ${LIMITS.urlBytes} bytes`));
export const UrlBody = v.object({ url });
export const ServeQuery = v.object({ url });
const MIME = /^[\w.+-]+\/[\w.+-]+$/;

export function assetRoutes(router: ApiRouter, config: AssetConfig) {
  router
    .post("/v1/assets/upload", async (req, rc) => {
      refuseDeclaredLength(req, config.maxUploadBytes + (LIMITS.uploadBodyBytes - LIMITS.uploadBytes), "upload");
      const upload = await streamMultipart(req, "file", { maxFileBytes: config.maxUploadBytes }, async (content, info) =>
        // fileName/mimeType fields may come after the file part, so the part's own name and type are used here
        // and the fields, when present, are applied below.
        storeAsset(rc.app, config, content, { fileName: info.filename, mimeType: declaredType(info.contentType), kind: "upload", limit: config.maxUploadBytes }),
      );
      const asset = upload.file;
      const { fileName, mimeType } = upload.fields;
      if (mimeType !== undefined && !MIME.test(mimeType)) throw badRequest("mimeType is not a MIME type", [{ code: "invalid_format", message: "expected a MIME type like image/png", path: ["body", "mimeType"] }]);
      if (fileName || (mimeType && mimeType !== asset.mimeType)) {
        if (fileName) asset.fileName = fileName.slice(0, 255);
        if (mimeType && mimeType !== asset.mimeType) await retypeAsset(rc.app, config, asset, mimeType);
        else rc.app.db.kv.put(assetKey(asset.id), asset);
        await rc.app.db.commit();
      }
      return presentUpload(config, asset);
    })
    .post("/v1/assets/upload/base64", async (req, rc) => {
      const body = await validateBody(req, Base64Body, { maxBytes: LIMITS.base64BodyBytes, allowLonger: ["content"] });
      const bytes = decodeBase64(body.content);
      if (bytes.length > MAX_BASE64_BYTES) throw new ApiError(413, "PAYLOAD_TOO_LARGE", `base64 uploads are limited to ${MAX_BASE64_BYTES} bytes; use the multipart upload`);
      const asset = await storeAsset(rc.app, config, once(bytes), { fileName: body.fileName, mimeType: body.mimeType, kind: "upload", limit: MAX_BASE64_BYTES });
      return presentUpload(config, asset);
    })
    .post("/v1/assets/download", async (req, rc) => {
      const { url } = await validateBody(req, UrlBody);
      const asset = await resolveAsset(rc.app, config, url);
      return { srcURL: srcURL(config, asset) };
    })
    .get("/v1/assets/serve", serve)
    .head("/v1/assets/serve", serve);

  async function serve(req: Request, rc: RequestContext) {
    const { url } = validate("query", ServeQuery, rc.query);
    const asset = await resolveAsset(rc.app, config, url);
    return serveBytes(req, {
      size: asset.size,
      mimeType: asset.mimeType,
      etag: `"${asset.id}-${asset.size}"`,
      lastModified: asset.createdAt,
      fileName: asset.fileName,
      read: (start, end) => config.blobs.read(asset.id, start, end),
    });
  }
}

/** A part's own Content-Type counts only when it says something (browsers send octet-stream for unknown files). */
function declaredType(type: string | undefined): string | undefined {
  return type && type !== "application/octet-stream" && MIME.test(type) ? type : undefined;
}

function decodeBase64(text: string): Uint8Array {
  const clean = text.replace(/^data:[^,]*,/, "").replace(/\s+/g, "");
  const invalid = () => badRequest("content is not base64", [{ code: "invalid_base64", message: "expected base64", path: ["body", "content"] }]);
  // Padding only at the end, and never a length no encoder produces (one character past a group of four).
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean) || clean.replace(/=+$/, "").length % 4 === 1 || (clean.includes("=") && clean.length % 4 !== 0)) throw invalid();
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

async function* once(bytes: Uint8Array) {
  yield bytes;
}
