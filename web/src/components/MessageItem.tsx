import { useState } from "preact/hooks";
import { call, enc, type Message } from "../api.ts";
import { fileSize, fullTime, shortTime } from "../format.ts";
import { errorText, useAsset } from "./bits.tsx";

type Attachment = NonNullable<Message["attachments"]>[number];

export const QUICK_REACTIONS = ["👍", "❤️", "😂", "😮", "😢", "🙏"];

/** One message: sender, reply, text, attachments, reactions, and its actions (react, reply, edit and delete own). */
export function MessageItem(props: {
  message: Message;
  replyTo?: Message;
  selfID?: string;
  highlighted: boolean;
  onReply(): void;
  onEdit(): void;
  onError(message: string): void;
}) {
  const m = props.message;
  const [picking, setPicking] = useState(false);
  const path = `/v1/chats/${enc(m.chatID)}/messages/${enc(m.id)}`;
  const isMine = (participantID: string) => participantID === props.selfID;

  const groups = new Map<string, { count: number; mine: boolean }>();
  for (const r of m.reactions ?? []) {
    const g = groups.get(r.reactionKey) ?? { count: 0, mine: false };
    g.count++;
    g.mine ||= isMine(r.participantID);
    groups.set(r.reactionKey, g);
  }
  const act = (run: () => Promise<unknown>) => void run().catch((e) => props.onError(errorText(e)));
  const toggle = (key: string) =>
    act(() =>
      groups.get(key)?.mine
        ? call("DELETE", `${path}/reactions?reactionKey=${enc(key)}`)
        : call("POST", `${path}/reactions`, { reactionKey: key }),
    );
  const failed = m.sendStatus?.status.startsWith("FAIL");

  return (
    <article
      class={`message ${m.isSender ? "mine" : ""} ${props.highlighted ? "highlighted" : ""}`}
      data-message-id={m.id}
      tabIndex={-1}
      aria-label={`${m.isSender ? "You" : (m.senderName ?? m.senderID)}, ${fullTime(m.timestamp)}`}
    >
      {!m.isSender && <div class="sender">{m.senderName ?? m.senderID}</div>}
      <div class="bubble">
        {m.linkedMessageID && (
          <blockquote class="reply-to">
            {props.replyTo ? (
              <>
                <strong>{props.replyTo.isSender ? "You" : (props.replyTo.senderName ?? props.replyTo.senderID)}</strong>{" "}
                {props.replyTo.text ?? "an attachment"}
              </>
            ) : (
              "Reply to an earlier message"
            )}
          </blockquote>
        )}
        {m.attachments?.map((a, i) => (
          <AttachmentView attachment={a} key={a.id ?? i} />
        ))}
        {m.text && <p class="text">{m.text}</p>}
        <footer>
          {m.editedTimestamp && <span title={`Edited ${fullTime(m.editedTimestamp)}`}>edited · </span>}
          <time dateTime={m.timestamp} title={fullTime(m.timestamp)}>
            {shortTime(m.timestamp)}
          </time>
          {m.isSender && m.sendStatus?.status === "PENDING" && <span> · sending</span>}
          {failed && (
            <span class="error-text"> · not sent{m.sendStatus?.message ? `: ${m.sendStatus.message}` : ""}</span>
          )}
          {m.isSender && m.seen && <span> · seen</span>}
        </footer>
      </div>
      {groups.size > 0 && (
        <div class="reactions" aria-label="Reactions">
          {[...groups].map(([key, g]) => (
            <button
              type="button"
              class={`reaction ${g.mine ? "mine" : ""}`}
              aria-pressed={g.mine}
              onClick={() => toggle(key)}
              key={key}
              title={g.mine ? "Remove your reaction" : "React"}
            >
              {key} {g.count}
            </button>
          ))}
        </div>
      )}
      <div class="actions" aria-label="Message actions">
        <button type="button" onClick={() => setPicking(!picking)} aria-expanded={picking}>
          React
        </button>
        <button type="button" onClick={props.onReply}>
          Reply
        </button>
        {m.isSender && !m.attachments?.length && (
          <button type="button" onClick={props.onEdit}>
            Edit
          </button>
        )}
        {m.isSender && (
          <button
            type="button"
            onClick={() => {
              if (confirm("Delete this message for everyone?")) act(() => call("DELETE", path));
            }}
          >
            Delete
          </button>
        )}
      </div>
      {picking && (
        <div class="picker" role="group" aria-label="Pick a reaction">
          {QUICK_REACTIONS.map((emoji) => (
            <button
              type="button"
              key={emoji}
              aria-label={`React with ${emoji}`}
              onClick={() => {
                setPicking(false);
                toggle(emoji);
              }}
            >
              {emoji}
            </button>
          ))}
        </div>
      )}
    </article>
  );
}

/** Images inline (fetched with the token); anything else as a download. */
function AttachmentView({ attachment }: { attachment: Attachment }) {
  const image = attachment.type === "img";
  const { url, error } = useAsset(attachment.srcURL);
  if (!attachment.srcURL) return <p class="muted">Attachment not available on this device</p>;
  if (error)
    return (
      <p class="error-text">
        Cannot load {attachment.fileName ?? "the attachment"}: {error}
      </p>
    );
  if (image)
    return url ? (
      <img
        class="attachment"
        src={url}
        alt={attachment.fileName ?? "image"}
        width={attachment.size?.width}
        height={attachment.size?.height}
      />
    ) : (
      <div class="attachment placeholder" aria-busy="true" />
    );
  return (
    <a class="file" href={url} download={attachment.fileName ?? "file"} aria-disabled={!url}>
      ⬇ {attachment.fileName ?? "file"} <span class="muted">{fileSize(attachment.fileSize)}</span>
    </a>
  );
}
