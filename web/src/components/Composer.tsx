import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { call, enc, upload, type Message } from "../api.ts";
import { fileSize } from "../format.ts";
import { onLive, takeFocusDraft } from "../live.ts";
import { errorText } from "./bits.tsx";

export type ComposerMode = { kind: "new" } | { kind: "reply"; message: Message } | { kind: "edit"; message: Message };

/** Writing: text (Enter sends, Shift+Enter a new line), a reply or an edit, and one attachment (picked or dropped). */
export function Composer(props: {
  chatID: string;
  mode: ComposerMode;
  onMode(mode: ComposerMode): void;
  dropped?: File;
  onDroppedTaken(): void;
  draft?: string;
  onSent(): void;
}) {
  const [text, setText] = useState(() => takeFocusDraft(props.chatID) ?? props.draft ?? "");
  const [file, setFile] = useState<File>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const input = useRef<HTMLTextAreaElement>(null);
  const picker = useRef<HTMLInputElement>(null);
  const { mode } = props;

  // A draft handed over by POST /v1/focus while this chat is already open.
  useEffect(
    () =>
      onLive((event) => {
        if (event.type !== "focus" || event.focus.chatID !== props.chatID || event.focus.draftText === undefined)
          return;
        setText(takeFocusDraft(props.chatID) ?? event.focus.draftText);
        input.current?.focus();
      }),
    [props.chatID],
  );
  // In the same commit as the mode change, so nothing typed right after is overwritten.
  useLayoutEffect(() => {
    if (mode.kind === "edit") setText(mode.message.text ?? "");
    if (mode.kind !== "new") input.current?.focus();
  }, [mode]);
  useEffect(() => {
    if (props.dropped) {
      setFile(props.dropped);
      props.onDroppedTaken();
      input.current?.focus();
    }
  }, [props.dropped]);

  const send = async () => {
    if (busy || (!text.trim() && !file)) return;
    setBusy(true);
    setError(undefined);
    try {
      const base = `/v1/chats/${enc(props.chatID)}/messages`;
      if (mode.kind === "edit") await call("PUT", `${base}/${enc(mode.message.id)}`, { text });
      else {
        const attachment = file ? await upload(file) : undefined;
        await call("POST", base, {
          ...(text.trim() ? { text } : {}),
          ...(mode.kind === "reply" ? { replyToMessageID: mode.message.id } : {}),
          ...(attachment ? { attachment: { uploadID: attachment.uploadID } } : {}),
        });
      }
      setText("");
      setFile(undefined);
      props.onMode({ kind: "new" });
      props.onSent();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
      input.current?.focus();
    }
  };

  return (
    <form
      class="composer"
      aria-label="Write a message"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      {mode.kind !== "new" && (
        <div class="composer-context">
          <span>
            {mode.kind === "reply"
              ? `Replying to ${mode.message.isSender ? "yourself" : (mode.message.senderName ?? mode.message.senderID)}: `
              : "Editing: "}
            <em>{mode.message.text ?? "an attachment"}</em>
          </span>
          <button
            type="button"
            aria-label={mode.kind === "reply" ? "Cancel the reply" : "Cancel the edit"}
            onClick={() => {
              if (mode.kind === "edit") setText("");
              props.onMode({ kind: "new" });
            }}
          >
            ✕
          </button>
        </div>
      )}
      {file && (
        <div class="composer-context">
          <span>
            Attached: {file.name} <span class="muted">{fileSize(file.size)}</span>
          </span>
          <button type="button" aria-label="Remove the attachment" onClick={() => setFile(undefined)}>
            ✕
          </button>
        </div>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="composer-row">
        {mode.kind !== "edit" && (
          <>
            <button
              type="button"
              title="Attach a file (or drop one on the chat)"
              onClick={() => picker.current?.click()}
            >
              Attach
            </button>
            <input
              ref={picker}
              type="file"
              hidden
              aria-label="File to attach"
              data-testid="attach-input"
              onChange={(e) => {
                setFile(e.currentTarget.files?.[0]);
                e.currentTarget.value = "";
              }}
            />
          </>
        )}
        <textarea
          ref={input}
          aria-label="Message"
          placeholder={mode.kind === "edit" ? "Edit the message" : "Write a message"}
          rows={1}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              void send();
            }
            if (e.key === "Escape" && mode.kind !== "new") props.onMode({ kind: "new" });
          }}
        />
        <button type="submit" class="primary" disabled={busy}>
          {mode.kind === "edit" ? "Save" : "Send"}
        </button>
      </div>
    </form>
  );
}
