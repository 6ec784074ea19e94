/**
 * Files as the MCP tools take and give them: base64 content stored like POST /v1/assets/upload/base64 stores it
 * (services/assets.ts), and the upload as the REST API presents it.
 */
import type * as v from "valibot";
import { presentUpload, uploadBase64 as storeBase64 } from "../services/assets.ts";
import type { AssetRecord } from "../store/records.ts";
import type { Context } from "../services/context.ts";
import type { Upload } from "../schema/bridges.ts";

/** Bytes an MCP request may carry (base64 files included): 16 MiB. */
export const MCP_BODY_BYTES = 16 * 1024 * 1024;

export const uploadBase64 = (
  app: Context,
  file: { content: string; fileName?: string; mimeType?: string },
): Promise<AssetRecord> => storeBase64(app, app.assets, file, ["arguments", "content"]);

/** The upload as POST /v1/assets/upload answers it. */
export const presentAsset = (app: Context, asset: AssetRecord) =>
  presentUpload(app.assets, asset) as v.InferOutput<typeof Upload>;
