import { ApiError, notFound, unprocessable } from "../errors.ts";
import { LIMITS } from "../schema/limits.ts";
import type { Label } from "../schema/wire.ts";
import type { LabelRecord } from "../store/records.ts";
import type { Context } from "./context.ts";

/**
 * Chat labels: device-local (no connector knows them), stored as one list beside the accounts (`Db.labels`), and
 * referred to by chats through `labelIDs`. Every change happens synchronously in memory before the commit is
 * awaited, so concurrent requests see each other's changes and none is lost: a duplicate name made at the same time
 * is refused, and a label deleted while a chat is being patched cannot be left behind on the chat.
 */

/** "Label 2" before "Label 10", case and accents aside; the same order on every runtime and locale. */
const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });
const byName = (a: LabelRecord, b: LabelRecord) =>
  collator.compare(a.name, b.name) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Names that differ only in case, width or surrounding spaces are the same label to a person. */
const sameName = (name: string) => name.normalize("NFKC").toLowerCase();

const presentLabel = (l: LabelRecord): Label => ({ id: l.id, name: l.name });

export function listLabels(ctx: Context): Label[] {
  return [...ctx.db.labels].sort(byName).map(presentLabel);
}

/**
 * Creates a label. A name already taken (compared without case, after NFKC normalisation) is a 409 that names the
 * existing label's ID, so a script can use it instead of ending up with two labels people cannot tell apart.
 */
export async function createLabel(ctx: Context, name: string): Promise<Label> {
  const key = sameName(name);
  const existing = ctx.db.labels.find((l) => sameName(l.name) === key);
  if (existing)
    throw new ApiError(
      409,
      "CONFLICT",
      `a label named "${existing.name}" already exists (${existing.id})`,
      { labelID: existing.id },
      { "x-should-retry": "false" },
    );
  // Bounded like the labelIDs a PATCH can carry, so one request can always put every label on a chat.
  if (ctx.db.labels.length >= LIMITS.arrayItems)
    throw new ApiError(
      409,
      "CONFLICT",
      `this device already has ${LIMITS.arrayItems} labels, the most it keeps; delete one first`,
      undefined,
      { "x-should-retry": "false" },
    );
  const label: LabelRecord = { id: newLabelID(), name, createdAt: ctx.now() };
  ctx.db.labels.push(label);
  ctx.db.saveLabels();
  await ctx.db.commit();
  return presentLabel(label);
}

/** Deletes a label and takes it off every chat that has it (each such chat is saved, so it gets its event). */
export async function deleteLabel(ctx: Context, labelID: string): Promise<void> {
  const at = ctx.db.labels.findIndex((l) => l.id === labelID);
  if (at < 0) throw notFound(`label ${labelID}`);
  ctx.db.labels.splice(at, 1);
  ctx.db.saveLabels();
  for (const chat of ctx.db.chats.all()) {
    if (!chat.labelIDs?.includes(labelID)) continue;
    chat.labelIDs = chat.labelIDs.filter((id) => id !== labelID);
    ctx.db.saveChat(chat);
  }
  await ctx.db.commit();
}

/** The label a filter names; an unknown one is refused (422, naming where it was) rather than matching nothing. */
export function requireLabel(ctx: Context, labelID: string, path: (string | number)[]): LabelRecord {
  const label = ctx.db.labels.find((l) => l.id === labelID);
  if (!label) throw unprocessable(`unknown label ${labelID}`, path);
  return label;
}

/**
 * The labels a PATCH sets, duplicates dropped and order kept; an unknown ID is a 422 naming it and its place. The
 * caller stores the result with no await in between, so the labels checked still exist when the chat is saved.
 */
export function checkLabels(ctx: Context, labelIDs: string[]): string[] {
  labelIDs.forEach((id, i) => requireLabel(ctx, id, ["body", "labelIDs", i]));
  return [...new Set(labelIDs)];
}

function newLabelID(): string {
  const random = [...crypto.getRandomValues(new Uint8Array(10))].map((b) => b.toString(36).padStart(2, "0")).join("");
  return `lbl_${random.slice(0, 16)}`;
}
