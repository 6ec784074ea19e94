import { badRequest, ChatsStillLoading, unprocessable } from "../errors.ts";
import type { ChatFlags, NetworkClient } from "../bridges/connector.ts";
import type { Chat, User } from "../schema/wire.ts";
import { firstSeqOf, type ChatRecord } from "../store/records.ts";
import { callNetwork, requireAccount, requireChat, unsupported, type Context } from "./context.ts";
import { decodeCursor, encodeCursor, fingerprint } from "./cursor.ts";
import { upsertChat } from "./ingest.ts";
import { countUnread, findMessage } from "./message-records.ts";
import { sendMessage } from "./messages.ts";
import { chatListJSON, JsonText, presentChat } from "./present.ts";
import { findChatPicture, keepChatPicture } from "./chat-picture.ts";
import {
  checkDraftReplaces,
  draftUploads,
  isEmptyDraft,
  releaseDraftUploads,
  resolveDraft,
  type DraftInput,
} from "./chat-draft.ts";
import { attachmentFor, keepUploads, openAsset } from "./assets.ts";
import { checkLabels, requireLabel } from "./labels.ts";

export const CHAT_PAGE = 25;
const encoder = new TextEncoder();

export interface ChatFilter {
  accountIDs?: string[];
  inbox?: "primary" | "low-priority" | "archive";
  includeMuted?: boolean;
  lastActivityAfter?: number;
  lastActivityBefore?: number;
  query?: string;
  scope?: "titles" | "participants";
  type?: "single" | "group" | "any";
  unreadOnly?: boolean;
  labelID?: string;
}

/** Case-insensitive word-prefix match: every query word must start some word of the haystack. */
export function matchesWords(queryWords: string[], haystack: string): boolean {
  const words = haystack.toLowerCase().split(/[^\p{L}\p{N}]+/u);
  return queryWords.every((q) => words.some((w) => w.startsWith(q)));
}

function chatMatcher(ctx: Context, f: ChatFilter): (c: ChatRecord) => boolean {
  const accounts = f.accountIDs ? new Set(f.accountIDs) : undefined;
  const queryWords = f.query
    ? f.query
        .toLowerCase()
        .split(/[^\p{L}\p{N}]+/u)
        .filter(Boolean)
    : [];
  return (c) => {
    if (accounts && !accounts.has(c.accountID)) return false;
    if (f.inbox === "primary" && (c.isArchived || c.isLowPriority)) return false;
    if (f.inbox === "low-priority" && (c.isArchived || !c.isLowPriority)) return false;
    if (f.inbox === "archive" && !c.isArchived) return false;
    if (f.includeMuted === false && c.isMuted) return false;
    if (f.lastActivityAfter !== undefined && !(c.lastActivity > f.lastActivityAfter)) return false;
    if (f.lastActivityBefore !== undefined && !(c.lastActivity < f.lastActivityBefore)) return false;
    if (f.type && f.type !== "any" && c.type !== f.type) return false;
    if (f.unreadOnly && c.unreadCount === 0 && !c.markedUnread) return false;
    if (f.labelID !== undefined && !c.labelIDs?.includes(f.labelID)) return false;
    if (queryWords.length) {
      const titles = `${c.title} ${ctx.db.account(c.accountID)?.networkName ?? ""}`;
      const people = c.participants.map((p) => `${p.fullName ?? ""} ${p.username ?? ""}`).join(" ");
      const haystack = f.scope === "titles" ? titles : f.scope === "participants" ? people : `${titles} ${people}`;
      if (!matchesWords(queryWords, haystack)) return false;
    }
    return true;
  };
}

/** Pages through the in-memory chat order (lastActivity desc) with cursors at (lastActivity, no). */
function pageChats(
  ctx: Context,
  kind: string,
  filter: ChatFilter,
  limit: number,
  cursor?: string,
  direction?: "before" | "after",
): JsonText {
  const scope = fingerprint(filter);
  const cacheKey = `${kind}\n${scope}\n${limit}\n${direction ?? ""}\n${cursor ?? ""}`;
  const cached = ctx.db.pages.get(cacheKey);
  if (cached) return new JsonText(cached);
  const order = ctx.db.chats.all();
  const match = chatMatcher(ctx, filter);
  const dir = direction ?? "before";
  const picked: ChatRecord[] = [];
  let hasMore = false;
  // While start-up still reads the older chats only the top rows are the list's (ChatTable.trustedRows): a page
  // found within them is the page; one that reaches past them waits for the rest (ChatsStillLoading).
  const complete = ctx.db.chats.complete;
  if (!complete && dir !== "before") throw new ChatsStillLoading();
  if (dir === "before") {
    const end = ctx.db.chats.trustedRows;
    let i = 0;
    if (cursor) {
      const [at, no] = decodeCursor(cursor, kind, scope, 2) as number[];
      i = ctx.db.chats.positionAfter(at, no);
      if (order[i]?.lastActivity === at && order[i]?.no === no) i++;
    }
    for (; i < end; i++) {
      if (!match(order[i])) continue;
      if (picked.length === limit) {
        hasMore = true;
        break;
      }
      picked.push(order[i]);
    }
    if (i >= end && !complete) throw new ChatsStillLoading();
  } else {
    let i = order.length - 1;
    if (cursor) {
      const [at, no] = decodeCursor(cursor, kind, scope, 2) as number[];
      i = ctx.db.chats.positionAfter(at, no) - 1;
    }
    for (; i >= 0; i--) {
      if (!match(order[i])) continue;
      if (picked.length === limit) {
        hasMore = true;
        break;
      }
      picked.push(order[i]);
    }
    picked.reverse();
  }
  const at = (c: ChatRecord) => encodeCursor(kind, scope, [c.lastActivity, c.no]);
  const oldest = picked.length ? at(picked[picked.length - 1]) : null;
  const newest = picked.length ? at(picked[0]) : null;
  const items = picked.map((c) => chatListJSON(ctx.db, c)).join(",");
  const body = encoder.encode(
    `{"items":[${items}],"hasMore":${hasMore},"oldestCursor":${JSON.stringify(oldest)},"newestCursor":${JSON.stringify(newest)}}`,
  );
  if (ctx.db.pages.size < 256) ctx.db.pages.set(cacheKey, body);
  return new JsonText(body);
}

/** The first `limit` chats that match, most recent first, as wire objects (for answers that embed chats). */
export function topChats(ctx: Context, filter: ChatFilter, limit: number): Chat[] {
  const match = chatMatcher(ctx, filter);
  const out: Chat[] = [];
  for (const chat of ctx.db.chats.all()) {
    if (out.length === limit) break;
    if (match(chat)) out.push(presentChat(ctx.db, chat, { preview: true }));
  }
  return out;
}

export function listChats(ctx: Context, q: { accountIDs?: string[]; cursor?: string; direction?: "before" | "after" }) {
  return pageChats(ctx, "chats", { accountIDs: q.accountIDs }, CHAT_PAGE, q.cursor, q.direction);
}

export function searchChats(
  ctx: Context,
  q: ChatFilter & { cursor?: string; direction?: "before" | "after"; limit?: number },
) {
  const { cursor, direction, limit, ...filter } = q;
  if (filter.labelID !== undefined) requireLabel(ctx, filter.labelID, ["query", "labelID"]);
  return pageChats(ctx, "chat-search", filter, limit ?? 50, cursor, direction);
}

export function getChat(ctx: Context, chatID: string, maxParticipantCount = -1): Chat {
  return presentChat(ctx.db, requireChat(ctx, chatID), { maxParticipants: maxParticipantCount, preview: true });
}

export interface CreateInput {
  accountID: string;
  mode?: "create" | "start";
  type?: "single" | "group";
  participantIDs?: string[];
  title?: string;
  messageText?: string;
  allowInvite?: boolean;
  user?: Partial<User>;
}

export async function createChat(
  ctx: Context,
  input: CreateInput,
): Promise<Chat & { chatID: string; status?: "existing" | "created" }> {
  const account = requireAccount(ctx, input.accountID);
  const client = ctx.bridges.client(account.accountID);
  let chat: ChatRecord;
  let status: "existing" | "created" | undefined;
  if (input.mode === "start") {
    if (!input.user || Object.values(input.user).every((v) => !v))
      throw badRequest("user is required when mode is start", [
        { code: "required", message: "user is required", path: ["body", "user"] },
      ]);
    if (!client.resolveIdentifier) throw unsupported("starting chats");
    const user = await callNetwork(() => client.resolveIdentifier!(input.user!));
    if (!user) throw unprocessable("no user matches the given identifiers", ["body", "user"]);
    const existing = ctx.db.chats
      .all()
      .find(
        (c) =>
          c.accountID === account.accountID &&
          c.type === "single" &&
          c.participants.some((p) => p.id === user.id && !p.isSelf),
      );
    if (existing) {
      chat = existing;
      status = "existing";
    } else {
      if (!client.createChat) throw unsupported("creating chats");
      chat = upsertChat(
        ctx,
        account,
        await callNetwork(() => client.createChat!({ type: "single", participantIDs: [user.id] })),
      );
      status = "created";
    }
  } else {
    const ids = input.participantIDs ?? [];
    if (!input.type)
      throw badRequest("type is required when mode is create", [
        { code: "required", message: "type is required", path: ["body", "type"] },
      ]);
    if (ids.length === 0)
      throw badRequest("participantIDs is required when mode is create", [
        { code: "required", message: "at least one participant", path: ["body", "participantIDs"] },
      ]);
    if (input.type === "single" && ids.length !== 1)
      throw unprocessable("a single chat takes exactly one participantID", ["body", "participantIDs"]);
    if (!client.createChat) throw unsupported("creating chats");
    chat = upsertChat(
      ctx,
      account,
      await callNetwork(() => client.createChat!({ type: input.type!, participantIDs: ids, title: input.title })),
    );
  }
  await ctx.db.commit();
  if (input.messageText && status !== "existing") await sendMessage(ctx, chat.id, { text: input.messageText });
  const out: Chat & { chatID: string; status?: "existing" | "created" } = {
    ...presentChat(ctx.db, chat, { preview: true }),
    chatID: chat.id,
  };
  if (status) out.status = status;
  return out;
}

export interface ChatPatch {
  title?: string | null;
  description?: string | null;
  isArchived?: boolean;
  isLowPriority?: boolean;
  isPinned?: boolean;
  isMuted?: boolean;
  draft?: DraftInput | null;
  /** A local image asset (see chat-picture.ts), given to the network; null removes the picture. */
  imgURL?: string | null;
  /** Given to the network; 0 turns the timer off, null too (and the field goes away). */
  messageExpirySeconds?: number | null;
  /** ms since epoch: muted until then (isMuted true or left out); null drops the end time of a mute. */
  mutedUntil?: number | null;
  labelIDs?: string[];
}

/**
 * Applies the fields sent, and only those. Everything that can fail is checked first; then the network is told
 * what it keeps (the picture, the disappearing-message timer); then every change is made at once with no await
 * before the save, so a concurrent PATCH or label deletion is never half-applied or undone. A field the account's
 * network cannot take is a 422 NOT_SUPPORTED and nothing of the PATCH is applied.
 */
export async function updateChat(ctx: Context, chatID: string, patch: ChatPatch): Promise<Chat> {
  const chat = requireChat(ctx, chatID);
  checkDraftReplaces(chat, patch.draft);
  const mute = muteChange(ctx, patch);
  if (patch.labelIDs !== undefined) checkLabels(ctx, patch.labelIDs);
  const network = networkChanges(ctx, chat, patch);
  const picture = network.imgURL == null ? network.imgURL : await findChatPicture(ctx, network.imgURL);
  // An empty draft is no draft: null, as 5.0.0 shows a chat without one.
  const draft =
    patch.draft === undefined ? undefined : isEmptyDraft(patch.draft) ? null : await resolveDraft(ctx, patch.draft!);
  if (network.client && picture !== undefined) {
    const image = picture && {
      info: attachmentFor(ctx.assets, picture, {}).attachment,
      open: () => openAsset(ctx.assets, picture),
    };
    await callNetwork(() => network.client!.setChatAvatar!(chat.networkChatID, image));
  }
  if (network.client && network.messageExpirySeconds !== undefined)
    await callNetwork(() => network.client!.setMessageExpiry!(chat.networkChatID, network.messageExpirySeconds ?? 0));
  const flags = flagChanges(chat, patch, mute?.isMuted);
  const flagClient = flags && ctx.bridges.attached(chat.accountID);
  if (flags && flagClient?.setChatFlags) await callNetwork(() => flagClient.setChatFlags!(chat.networkChatID, flags));
  const imgURL = picture ? await keepChatPicture(ctx, picture) : picture;
  if (draft) await keepUploads(ctx, draftUploads(draft));
  // Checked again, now with no await before the save: a label deleted or a draft set during the waits is refused.
  if (patch.labelIDs !== undefined) chat.labelIDs = checkLabels(ctx, patch.labelIDs);
  checkDraftReplaces(chat, draft);
  // The old draft's uploads, let go once the new draft is saved (those a draft still holds are kept).
  const dropped = draft === undefined ? [] : draftUploads(chat.draft);
  if (patch.title !== undefined) chat.title = patch.title ?? defaultTitle(chat);
  if (patch.description !== undefined) chat.description = patch.description;
  if (patch.isArchived !== undefined) chat.isArchived = patch.isArchived;
  if (patch.isLowPriority !== undefined) chat.isLowPriority = patch.isLowPriority;
  if (patch.isPinned !== undefined) chat.isPinned = patch.isPinned;
  if (mute?.isMuted !== undefined) chat.isMuted = mute.isMuted;
  if (mute) chat.mutedUntil = mute.mutedUntil;
  if (draft !== undefined) chat.draft = draft;
  if (imgURL !== undefined) chat.imgURL = imgURL ?? undefined;
  if (patch.messageExpirySeconds !== undefined) chat.messageExpirySeconds = patch.messageExpirySeconds ?? undefined;
  ctx.db.saveChat(chat);
  await ctx.db.commit();
  if (mute) ctx.rearm();
  await releaseDraftUploads(ctx, dropped);
  return presentChat(ctx.db, chat, { preview: true });
}

/**
 * The fields of a PATCH the network must take (a value that changes nothing is left out), with the account's
 * client when there are any: 503 while it is not connected, 422 NOT_SUPPORTED when its network lacks the call.
 */
function networkChanges(
  ctx: Context,
  chat: ChatRecord,
  patch: ChatPatch,
): { client?: NetworkClient; imgURL?: string | null; messageExpirySeconds?: number | null } {
  const imgURL = patch.imgURL === null && chat.imgURL === undefined ? undefined : patch.imgURL;
  const expiry = patch.messageExpirySeconds;
  const messageExpirySeconds =
    expiry === undefined || (expiry ?? undefined) === chat.messageExpirySeconds ? undefined : expiry;
  if (imgURL === undefined && messageExpirySeconds === undefined) return {};
  const client = ctx.bridges.client(chat.accountID);
  if (imgURL !== undefined && !client.setChatAvatar)
    throw unsupported("changing a chat's picture (imgURL)", ["body", "imgURL"]);
  if (messageExpirySeconds !== undefined && !client.setMessageExpiry)
    throw unsupported("a disappearing-message timer (messageExpirySeconds)", ["body", "messageExpirySeconds"]);
  return { client, imgURL, messageExpirySeconds };
}

/** Pin, mute, low-priority and archive changes a PATCH makes (a value equal to the chat's is left out); undefined if none. */
function flagChanges(chat: ChatRecord, patch: ChatPatch, isMuted: boolean | undefined): ChatFlags | undefined {
  const flags: ChatFlags = {};
  if (patch.isPinned !== undefined && patch.isPinned !== chat.isPinned) flags.isPinned = patch.isPinned;
  if (patch.isLowPriority !== undefined && patch.isLowPriority !== chat.isLowPriority)
    flags.isLowPriority = patch.isLowPriority;
  if (isMuted !== undefined && isMuted !== chat.isMuted) flags.isMuted = isMuted;
  if (patch.isArchived !== undefined && patch.isArchived !== chat.isArchived) flags.isArchived = patch.isArchived;
  return Object.keys(flags).length ? flags : undefined;
}

/**
 * `isMuted` and `mutedUntil` together: a time mutes until then (isMuted may be left out), `isMuted: true` alone
 * mutes without end (replacing a timed mute), `isMuted: false` unmutes and drops any end time, `mutedUntil: null`
 * alone drops the end time of a mute (the chat stays as muted as it was).
 */
function muteChange(ctx: Context, patch: ChatPatch): { isMuted?: boolean; mutedUntil: number | undefined } | undefined {
  const { isMuted, mutedUntil } = patch;
  if (mutedUntil === undefined) return isMuted === undefined ? undefined : { isMuted, mutedUntil: undefined };
  if (mutedUntil === null) return { isMuted, mutedUntil: undefined };
  if (isMuted === false)
    throw badRequest("mutedUntil needs isMuted true (or left out)", [
      {
        code: "conflict",
        message: "a time to unmute at needs isMuted true; send isMuted false alone to unmute now",
        path: ["body", "mutedUntil"],
      },
    ]);
  if (mutedUntil <= ctx.now())
    throw badRequest("mutedUntil is in the past", [
      { code: "too_small", message: "must be in the future", path: ["body", "mutedUntil"] },
    ]);
  return { isMuted: true, mutedUntil };
}

/** The title a chat has without a custom one: the other person, or the first names of the members. */
function defaultTitle(chat: ChatRecord): string {
  const others = chat.participants.filter((p) => !p.isSelf);
  if (chat.type === "single") return others[0]?.fullName ?? others[0]?.id ?? chat.title;
  return (
    others
      .slice(0, 4)
      .map((p) => p.fullName?.split(" ")[0] ?? p.id)
      .join(", ") || chat.title
  );
}

export async function archiveChat(ctx: Context, chatID: string, archived: boolean) {
  await updateChat(ctx, chatID, { isArchived: archived });
}

export async function setReminder(ctx: Context, chatID: string, at: number, dismissOnIncomingMessage: boolean) {
  const chat = requireChat(ctx, chatID);
  await remindOnNetwork(ctx, chat, { at, dismissOnIncomingMessage });
  chat.reminder = { at, dismissOnIncomingMessage };
  ctx.db.saveChat(chat);
  await ctx.db.commit();
  ctx.rearm();
}

export async function clearReminder(ctx: Context, chatID: string) {
  const chat = requireChat(ctx, chatID);
  await remindOnNetwork(ctx, chat, null);
  chat.reminder = undefined;
  ctx.db.saveChat(chat);
  await ctx.db.commit();
  ctx.rearm();
}

/** Marks read through a message (default: the newest) and recounts what stays unread. */
export async function markRead(ctx: Context, chatID: string, messageID?: string): Promise<Chat> {
  const chat = requireChat(ctx, chatID);
  await ctx.db.withChat(chat.no, async () => {
    const through = messageID ? (await findMessage(ctx, chat, messageID)).seq : chat.nextSeq - 1;
    const lastReadSeq = Math.max(chat.lastReadSeq, through);
    const unreadCount = await countUnread(ctx, chat, lastReadSeq);
    Object.assign(chat, { lastReadSeq, unreadCount, markedUnread: false });
    ctx.db.saveChat(chat);
  });
  await ctx.db.commit();
  const client = ctx.bridges.client(chat.accountID);
  const last = chat.lastReadSeq >= firstSeqOf(chat) ? await ctx.db.message(chat.no, chat.lastReadSeq) : undefined;
  if (client.markRead && last?.networkID)
    await callNetwork(() => client.markRead!(chat.networkChatID, last.networkID!));
  return presentChat(ctx.db, chat, { preview: true });
}

/** Marks unread from a message (it and everything after become unread), or flags the chat unread. */
export async function markUnread(ctx: Context, chatID: string, messageID?: string): Promise<Chat> {
  const chat = requireChat(ctx, chatID);
  await ctx.db.withChat(chat.no, async () => {
    if (messageID) {
      const lastReadSeq = (await findMessage(ctx, chat, messageID)).seq - 1;
      const unreadCount = await countUnread(ctx, chat, lastReadSeq);
      Object.assign(chat, { lastReadSeq, unreadCount });
    }
    chat.markedUnread = true;
    ctx.db.saveChat(chat);
  });
  await ctx.db.commit();
  return presentChat(ctx.db, chat, { preview: true });
}

/** Has the network notify the chat's participants of its latest message even where they silenced it; 422 NOT_SUPPORTED where it cannot. */
export async function notifyAnyway(ctx: Context, chatID: string): Promise<Chat> {
  const chat = requireChat(ctx, chatID);
  const client = ctx.bridges.client(chat.accountID);
  if (!client.notifyAnyway) throw unsupported("notify-anyway");
  await callNetwork(() => client.notifyAnyway!(chat.networkChatID));
  return presentChat(ctx.db, chat, { preview: true });
}

/** A network that keeps reminders itself (another Desktop API server) is told first; a refusal there stops the change. */
async function remindOnNetwork(
  ctx: Context,
  chat: ChatRecord,
  reminder: { at: number; dismissOnIncomingMessage: boolean } | null,
) {
  const client = ctx.bridges.attached(chat.accountID);
  if (client?.setReminder) await callNetwork(() => client.setReminder!(chat.networkChatID, reminder));
}
