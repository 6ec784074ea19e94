import * as v from "valibot";
import { LIMITS } from "../schema/limits.ts";
import { streamMultipart } from "../assets/multipart.ts";
import { badRequest } from "../errors.ts";
import type { Api, RequestContext } from "../http/route-kit.ts";
import { serveBytes } from "../http/serve-bytes.ts";
import { refuseDeclaredLength } from "../http/validate.ts";
import { Upload } from "../schema/bridges.ts";
import {
  assetKey,
  checkAssetBytes,
  MAX_BASE64_BYTES,
  presentUpload,
  resolveAsset,
  retypeAsset,
  srcURL,
  storeAsset,
  uploadBase64,
} from "../services/assets.ts";
import type { AssetConfig } from "../services/context.ts";
import { Base64Body, UrlBody, ServeQuery } from "../schema/requests/assets.ts";

const MIME = /^[\w.+-]+\/[\w.+-]+$/;

const Multipart = v.object({
  file: v.pipe(v.string(), v.description("The file (binary)."), v.metadata({ format: "binary" })),
  fileName: v.optional(v.string()),
  mimeType: v.optional(v.string()),
});
const bytes = (description: string) => ({ description, content: { "application/octet-stream": null } });

export function assetRoutes(api: Api, config: AssetConfig) {
  const tag = "Files";
  const serveDoc = {
    path: "/v1/assets/serve",
    tag,
    query: ServeQuery,
    description:
      "The bytes of an asset (by its mxc://, localmxc:// or file:// URL), with Range, ETag and Last-Modified support.",
    responses: {
      200: bytes("The file."),
      206: bytes("The requested range."),
      304: { description: "Not modified." },
      403: {
        description:
          "NOT_A_STORED_FILE: the asset's stored file is not a regular file of the asset store (a symbolic link planted in the daemon's asset directory is never followed); or PATH_NOT_ALLOWED: a file:// URL outside it.",
      },
      416: { description: "Range not satisfiable." },
    },
  };
  api
    .add(
      {
        method: "POST",
        path: "/v1/assets/upload",
        operationId: "uploadAsset",
        summary: "Upload a file",
        tag,
        response: Upload,
        description: `multipart/form-data with a \`file\` part (up to ${config.maxUploadBytes} bytes); its \`uploadID\` goes into a message's attachment.`,
        requestBody: {
          description: "The file and optional fileName/mimeType fields.",
          content: { "multipart/form-data": Multipart },
          required: true,
        },
      },
      async ({ req, rc }) => {
        refuseDeclaredLength(
          req as unknown as Request,
          config.maxUploadBytes + (LIMITS.uploadBodyBytes - LIMITS.uploadBytes),
          "upload",
        );
        const upload = await streamMultipart(
          req as unknown as Request,
          "file",
          { maxFileBytes: config.maxUploadBytes },
          async (content, info) =>
            // fileName/mimeType fields may come after the file part, so the part's own name and type are used here
            // and the fields, when present, are applied below.
            storeAsset(rc.app, config, content, {
              fileName: info.filename,
              mimeType: declaredType(info.contentType),
              kind: "upload",
              limit: config.maxUploadBytes,
            }),
        );
        const asset = upload.file;
        const { fileName, mimeType } = upload.fields;
        if (mimeType !== undefined && !MIME.test(mimeType))
          throw badRequest("mimeType is not a MIME type", [
            { code: "invalid_format", message: "expected a MIME type like image/png", path: ["body", "mimeType"] },
          ]);
        if (fileName || (mimeType && mimeType !== asset.mimeType)) {
          if (fileName) asset.fileName = fileName.slice(0, 255);
          if (mimeType && mimeType !== asset.mimeType) await retypeAsset(rc.app, config, asset, mimeType);
          else rc.app.db.kv.put(assetKey(asset.id), asset);
          await rc.app.db.commit();
        }
        return presentUpload(config, asset);
      },
    )
    .add(
      {
        method: "POST",
        path: "/v1/assets/upload/base64",
        operationId: "uploadAssetBase64",
        summary: "Upload a file (base64)",
        tag,
        response: Upload,
        body: Base64Body,
        bodyLimits: { maxBytes: LIMITS.base64BodyBytes, allowLonger: ["content"] },
        description: `The file as base64 \`content\` (a data: URL prefix is accepted), up to ${MAX_BASE64_BYTES} bytes decoded.`,
      },
      async ({ rc, body }) => presentUpload(config, await uploadBase64(rc.app, config, body, ["body", "content"])),
    )
    .add(
      {
        method: "POST",
        path: "/v1/assets/download",
        operationId: "downloadAsset",
        summary: "Download a file",
        tag,
        body: UrlBody,
        response: v.strictObject({
          srcURL: v.pipe(
            v.string(),
            v.description(
              "Where the file is now: a file:// URL on the daemon, localmxc:// in the Worker; /v1/assets/serve serves both.",
            ),
          ),
        }),
        description: "Fetches an attachment's bytes (an mxc:// or localmxc:// URL) onto this device.",
      },
      async ({ rc, body }) => {
        const asset = await resolveAsset(rc.app, config, body.url);
        await checkAssetBytes(config, asset);
        return { srcURL: srcURL(config, asset) };
      },
    )
    .add({ method: "GET", operationId: "serveAsset", summary: "Serve a file", ...serveDoc }, ({ req, rc, query }) =>
      serve(req as unknown as Request, rc, query.url),
    )
    .add(
      {
        method: "HEAD",
        operationId: "serveAssetHead",
        extension: true,
        summary: "Serve a file (headers only)",
        ...serveDoc,
      },
      ({ req, rc, query }) => serve(req as unknown as Request, rc, query.url),
    );

  async function serve(req: Request, rc: RequestContext, url: string) {
    const asset = await resolveAsset(rc.app, config, url);
    return serveBytes(req, {
      size: asset.size,
      mimeType: asset.mimeType,
      etag: `"${asset.id}-${asset.size}"`,
      lastModified: asset.createdAt,
      fileName: asset.fileName,
      check: (start, end) => checkAssetBytes(config, asset, start, end),
      read: (start, end) => config.blobs.read(asset.id, start, end),
    });
  }
}

/** A part's own Content-Type counts only when it says something (browsers send octet-stream for unknown files). */
function declaredType(type: string | undefined): string | undefined {
  return type && type !== "application/octet-stream" && MIME.test(type) ? type : undefined;
}
