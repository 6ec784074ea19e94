/** File tools: upload (to send later) and download (images inline, other files as a link). */
import * as v from "valibot";
import type { ContentBlock } from "@modelcontextprotocol/server";
import { Base64Body, UrlBody } from "../../schema/requests/assets.ts";
import { Upload } from "../../schema/bridges.ts";
import { checkAssetBytes, mxcURL, openAsset, resolveAsset } from "../../services/assets.ts";
import type { AssetRecord } from "../../store/records.ts";
import type { Context } from "../../services/context.ts";
import { code, plain } from "../format.ts";
import { describe } from "../schemas.ts";
import { defineTool } from "../tool.ts";
import { presentAsset, uploadBase64 } from "../upload.ts";

/** Images up to this size come back inline as MCP image content; anything larger, or not an image, as a link. */
export const INLINE_IMAGE_BYTES = 2 * 1024 * 1024;
/** Files up to this size can be read through resources/read (inboxd://assets/{assetID}). */
export const RESOURCE_BYTES = 8 * 1024 * 1024;
const INLINE_TYPES = /^image\/(png|jpeg|gif|webp)$/;

export const assetURI = (asset: AssetRecord) => `inboxd://assets/${asset.id}`;
export const serveURL = (origin: string, asset: AssetRecord) =>
  `${origin}/v1/assets/serve?url=${encodeURIComponent(mxcURL(asset))}`;

export const uploadAssetTool = defineTool({
  name: "upload_asset",
  title: "Upload a file",
  description:
    "Stores a file (base64 content, up to 12 MB) to send later: pass the uploadID it returns as send_message's attachment. " +
    "(send_message also takes the base64 content directly.)",
  input: v.object({
    content: describe(Base64Body.entries.content, "The file's bytes as base64 (a data: URL prefix is fine)."),
    fileName: v.optional(describe(Base64Body.entries.fileName.wrapped, "The file's name, with its extension.")),
    mimeType: v.optional(
      describe(
        Base64Body.entries.mimeType.wrapped,
        "Its type, e.g. image/png (detected from the bytes when left out).",
      ),
    ),
  }),
  output: Upload,
  readOnly: false,
  long: ["content"],
  async run(file, tc) {
    const upload = presentAsset(tc.app, await uploadBase64(tc.app, file));
    const size = upload.width && upload.height ? `, ${upload.width}×${upload.height}` : "";
    return {
      structured: upload,
      text: `Uploaded "${plain(upload.fileName)}" (${upload.mimeType}, ${upload.fileSize} bytes${size}): uploadID ${code(upload.uploadID)}. Send it with send_message's attachment.uploadID.`,
    };
  },
});

const Downloaded = v.strictObject({
  url: v.string(),
  srcURL: v.string(),
  serveURL: describe(v.string(), "GET it with the same bearer token (Range requests work)."),
  resourceURI: describe(v.string(), `Readable with resources/read when the file is at most ${RESOURCE_BYTES} bytes.`),
  fileName: v.string(),
  mimeType: v.string(),
  fileSize: v.number(),
  width: v.optional(v.number()),
  height: v.optional(v.number()),
  inline: describe(v.boolean(), "Whether the image itself is in this answer."),
});

export const downloadAssetTool = defineTool({
  name: "download_asset",
  title: "Download an attachment",
  description:
    "Fetches an attachment by the URL messages give for it (an mxc:// or localmxc:// URL, or a file:// srcURL of this server). " +
    `Images up to ${INLINE_IMAGE_BYTES / 1024 / 1024} MB come back as an image you can look at; other files as a link to read or fetch.`,
  input: v.object({ url: describe(UrlBody.entries.url, "The attachment's id (mxc://…) or srcURL.") }),
  output: Downloaded,
  readOnly: true,
  async run({ url }, tc) {
    const asset = await resolveAsset(tc.app, tc.app.assets, url);
    await checkAssetBytes(tc.app.assets, asset);
    const inline = INLINE_TYPES.test(asset.mimeType) && asset.size <= INLINE_IMAGE_BYTES;
    const structured = {
      url,
      srcURL: presentAsset(tc.app, asset).srcURL,
      serveURL: serveURL(tc.origin, asset),
      resourceURI: assetURI(asset),
      fileName: asset.fileName,
      mimeType: asset.mimeType,
      fileSize: asset.size,
      ...(asset.width !== undefined && asset.height !== undefined ? { width: asset.width, height: asset.height } : {}),
      inline,
    };
    const extra: ContentBlock[] = inline
      ? [{ type: "image", data: await base64Of(tc.app, asset), mimeType: asset.mimeType }]
      : [
          {
            type: "resource_link",
            uri: assetURI(asset),
            name: asset.fileName,
            mimeType: asset.mimeType,
            size: asset.size,
            description: `Also at ${structured.serveURL} (bearer token).`,
          },
        ];
    const facts = `${asset.mimeType}, ${asset.size} bytes${structured.width ? `, ${structured.width}×${structured.height}` : ""}`;
    const how = inline
      ? "The image follows."
      : `Not inline (${INLINE_TYPES.test(asset.mimeType) ? "too large" : "not an image"}): read ${code(assetURI(asset))} with resources/read (up to ${RESOURCE_BYTES / 1024 / 1024} MB) or GET ${structured.serveURL} with the bearer token.`;
    return { structured, text: `"${plain(asset.fileName)}" (${facts}). ${how}`, extra };
  },
});

/** The asset's bytes as base64 (used for inline images and resources, both bounded). */
export async function base64Of(app: Context, asset: AssetRecord): Promise<string> {
  let binary = "";
  for await (const piece of openAsset(app.assets, asset) as unknown as AsyncIterable<Uint8Array>) {
    for (let i = 0; i < piece.length; i += 0x8000) binary += String.fromCharCode(...piece.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
