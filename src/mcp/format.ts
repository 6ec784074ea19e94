/**
 * Markdown for models. Two rules hold everywhere: message text is capped at TEXT_CAP characters (and says so), and
 * whatever other people wrote (message text, previews) sits in a ```untrusted fence that its content cannot close,
 * so a message cannot pose as instructions from the user or this server. Names and titles, which other people
 * also choose, are flattened to one plain line.
 */
import type { Attachment, Chat, Message, User } from "../schema/wire.ts";
import type { McpMessage } from "./schemas.ts";

/** Characters of a message's text in MCP answers (the real app's limit). */
export const TEXT_CAP = 1000;
/** Characters of a chat's last message shown in chat lists. */
const PREVIEW_CAP = 200;

/** A name or title on one line: no control characters, no Markdown that could start a block or a code span. */
export function plain(text: string | undefined, max = 100): string {
  const flat = (text ?? "")
    .replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, " ")
    .replace(/[`*_<>[\]#|]/g, "'")
    .replace(/\s+/g, " ")
    .trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Cuts `text` to `cap` characters without splitting a surrogate pair. */
export function cut(text: string, cap: number): string {
  if (text.length <= cap) return text;
  return text.slice(0, /[\uD800-\uDBFF]/.test(text[cap - 1]) ? cap - 1 : cap);
}

/** The message as MCP answers carry it: text capped at `cap` characters, flagged when cut. */
export function capMessage(m: Message, cap: number = TEXT_CAP): McpMessage {
  if (!m.text || m.text.length <= cap) return m;
  return { ...m, text: cut(m.text, cap), textTruncated: true };
}

/** A fenced block no content can break out of: the fence is longer than any run of backticks inside. */
export function fence(text: string, untrusted: boolean): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const marks = "`".repeat(Math.max(3, longest + 1));
  return `${marks}${untrusted ? "untrusted" : "text"}\n${text}\n${marks}`;
}

export const when = (iso: string | undefined) => (iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : "unknown time");
export const code = (value: string) => `\`${value.replace(/`/g, "'")}\``;

export const personName = (u: Pick<User, "fullName" | "username" | "id" | "phoneNumber" | "email">) =>
  plain(u.fullName || u.username || u.phoneNumber || u.email || u.id, 60);

function bytes(n: number | undefined): string {
  if (n === undefined) return "size unknown";
  return n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(0)} KB` : `${(n / 1024 ** 2).toFixed(1)} MB`;
}

export function attachmentLine(a: Attachment): string {
  const kind = a.isSticker
    ? "sticker"
    : a.isGif
      ? "GIF"
      : a.isVoiceNote
        ? "voice note"
        : { img: "image", video: "video", audio: "audio", unknown: "file" }[a.type];
  const facts = [
    a.mimeType,
    bytes(a.fileSize),
    a.size ? `${a.size.width}×${a.size.height}` : undefined,
    a.duration !== undefined ? `${a.duration} s` : undefined,
  ].filter(Boolean);
  const fetchable = a.id ? ` — download_asset url ${code(a.id)}` : "";
  return `📎 ${kind} "${plain(a.fileName ?? "attachment", 80)}" (${facts.join(", ")})${fetchable}`;
}

/** One message: a header line (who, when, ID), its fenced text, then attachments and reactions. */
export function messageBlock(m: McpMessage, options: { chatTitle?: string } = {}): string {
  const who = m.isSender ? "You" : plain(m.senderName || m.senderID, 60);
  const flags = [
    m.isUnread ? "unread" : "",
    m.editedTimestamp ? "edited" : "",
    m.sendStatus && m.sendStatus.status !== "SUCCESS" ? `send status ${m.sendStatus.status}` : "",
  ].filter(Boolean);
  const where = options.chatTitle ? ` in "${plain(options.chatTitle)}" (chatID ${code(m.chatID)})` : "";
  const lines = [
    `**${who}**${where} · ${when(m.timestamp)} · messageID ${code(m.id)}${flags.length ? ` · ${flags.join(", ")}` : ""}`,
  ];
  if (m.linkedMessageID) lines.push(`↪ in reply to messageID ${code(m.linkedMessageID)}`);
  if (m.text) {
    lines.push(fence(m.text, !m.isSender));
    if (m.textTruncated)
      lines.push(`(text cut at ${TEXT_CAP} characters; get_message with fullText: true returns all of it)`);
  }
  for (const a of m.attachments ?? []) lines.push(attachmentLine(a));
  if (m.reactions?.length) {
    const counts = new Map<string, number>();
    for (const r of m.reactions) counts.set(r.reactionKey, (counts.get(r.reactionKey) ?? 0) + 1);
    lines.push(`Reactions: ${[...counts].map(([key, n]) => `${plain(key, 40)} ×${n}`).join(", ")}`);
  }
  return lines.join("\n");
}

/** A chat: title, IDs and state on two or three lines, then its last message (fenced, shortened) when it has one. */
export function chatBlock(chat: Chat): string {
  const others = chat.participants.items.filter((p) => !p.isSelf);
  const names = others.slice(0, 5).map(personName);
  const more = chat.participants.total - 1 - names.length;
  const state = [
    chat.unreadCount ? `${chat.unreadCount} unread` : chat.isMarkedUnread ? "marked unread" : "",
    chat.isArchived ? "archived" : "",
    chat.isMuted ? "muted" : "",
    chat.isPinned ? "pinned" : "",
    chat.isLowPriority ? "low priority" : "",
    chat.reminder && !chat.reminder.isFired ? `reminder ${when(chat.reminder.remindAt)}` : "",
  ].filter(Boolean);
  const lines = [
    `### ${plain(chat.title)} (${chat.type === "single" ? "direct chat" : "group"}, ${plain(chat.network, 40)})`,
    `chatID ${code(chat.id)} · accountID ${code(chat.accountID)} · last activity ${when(chat.lastActivity)}${state.length ? ` · ${state.join(" · ")}` : ""}`,
  ];
  if (names.length) lines.push(`With: ${names.join(", ")}${more > 0 ? ` and ${more} more` : ""}`);
  if (chat.preview) {
    const p = chat.preview;
    const text = p.text
      ? cut(p.text, PREVIEW_CAP)
      : p.attachments?.length
        ? `[${p.attachments.length} attachment(s)]`
        : "";
    if (text) {
      lines.push(
        `Last message, from ${p.isSender ? "you" : plain(p.senderName || p.senderID, 60)} (messageID ${code(p.id)}):`,
      );
      lines.push(fence(text.length < (p.text?.length ?? 0) ? `${text}…` : text, !p.isSender));
    }
  }
  return lines.join("\n");
}

/** How to get the next page of a list: the same call with the cursor of the end it continues from. */
export function pageHint(
  tool: string,
  page: { hasMore: boolean; oldestCursor: string | null; newestCursor: string | null },
  direction: "before" | "after" = "before",
): string {
  const cursor = direction === "before" ? page.oldestCursor : page.newestCursor;
  if (!page.hasMore || !cursor) return "No more pages.";
  return `More ${direction === "before" ? "(older)" : "(newer)"}: call ${tool} again with the same arguments plus cursor ${code(cursor)} and direction "${direction}".`;
}
