import { badRequest, unprocessable } from "../errors.ts";
import type { ChatDraft, DraftAttachment } from "../schema/wire.ts";
import type { ChatRecord } from "../store/records.ts";
import { assetKey, attachmentFor, releaseUploads } from "./assets.ts";
import type { AssetRecord } from "../store/records.ts";
import type { Context } from "./context.ts";

/**
 * A chat's draft (PATCH /v1/chats/{id} `draft`): text and attachments, kept on this device (no network sees a
 * draft). An attachment is an upload, named by its `uploadID`; the draft keeps it past the day after which unsent
 * uploads are deleted, without using it up, so it can still be sent once. Clearing the draft lets it go again.
 */
export interface DraftAttachmentInput {
  uploadID: string;
  id?: string;
  fileName?: string;
  mimeType?: string;
  duration?: number;
  size?: { width: number; height: number };
  type?: string;
}

export interface DraftInput {
  text: string;
  attachments?: Record<string, DraftAttachmentInput>;
}

/** Whether a draft holds nothing: no text and no attachment. */
export const isEmptyDraft = (draft: DraftInput | ChatDraft | null | undefined) =>
  !draft || (!draft.text && Object.keys(draft.attachments ?? {}).length === 0);

/** The uploads a draft holds. */
export const draftUploads = (draft: ChatDraft | null | undefined): string[] =>
  Object.values(draft?.attachments ?? {}).map((a) => a.uploadID);

/** A draft with something in it replaces only an empty one (as 5.0.0 has it): send draft=null first. */
export function checkDraftReplaces(chat: ChatRecord, draft: DraftInput | null | undefined): void {
  if (!isEmptyDraft(draft) && !isEmptyDraft(chat.draft))
    throw unprocessable("a draft is already set: send draft=null first", ["body", "draft"]);
}

/** The draft to store, each attachment's upload looked up: an unknown uploadID is a 422 naming it. */
export async function resolveDraft(ctx: Context, input: DraftInput): Promise<ChatDraft> {
  if (!input.attachments) return { text: input.text };
  const attachments: Record<string, DraftAttachment> = {};
  for (const [key, item] of Object.entries(input.attachments)) {
    const at = ["body", "draft", "attachments", key];
    const id = item.id ?? key;
    if (attachments[id])
      throw badRequest(`two draft attachments have the ID ${id}`, [
        { code: "duplicate", message: "attachment IDs must differ", path: item.id === undefined ? at : [...at, "id"] },
      ]);
    const asset = await ctx.db.kv.get<AssetRecord>(assetKey(item.uploadID));
    if (asset?.kind !== "upload")
      throw unprocessable(`unknown uploadID ${item.uploadID}: upload the file first (POST /v1/assets/upload)`, [
        ...at,
        "uploadID",
      ]);
    attachments[id] = draftAttachment(ctx, id, asset, item);
  }
  return Object.keys(attachments).length ? { text: input.text, attachments } : { text: input.text };
}

/** 5.0.0's DraftAttachment for an upload, with the same overrides and type hints as a sent attachment. */
function draftAttachment(ctx: Context, id: string, asset: AssetRecord, item: DraftAttachmentInput): DraftAttachment {
  const { attachment: a } = attachmentFor(ctx.assets, asset, item);
  const out: DraftAttachment = {
    id,
    type: a.isGif ? "gif" : a.isVoiceNote ? "recorded_audio" : "file",
    uploadID: asset.id,
    srcURL: a.srcURL!,
  };
  if (a.mimeType !== undefined) out.mimeType = a.mimeType;
  if (a.fileName !== undefined) out.fileName = a.fileName;
  if (ctx.assets.assetDir) out.filePath = decodeURIComponent(new URL(a.srcURL!).pathname);
  if (a.fileSize !== undefined) out.fileSize = a.fileSize;
  if (a.size) out.size = a.size;
  if (a.duration !== undefined && a.type === "audio") out.audioDurationSeconds = a.duration;
  return out;
}

/** Lets the uploads of a replaced draft be deleted like any unsent upload, unless a draft still holds them. */
export async function releaseDraftUploads(ctx: Context, uploadIDs: string[]): Promise<void> {
  if (uploadIDs.length === 0) return;
  const held = new Set(ctx.db.chats.all().flatMap((c) => draftUploads(c.draft)));
  await releaseUploads(
    ctx,
    ctx.assets,
    uploadIDs.filter((id) => !held.has(id)),
  );
}
