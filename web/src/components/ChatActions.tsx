import { useState } from "preact/hooks";
import { call, enc, get, type Chat } from "../api.ts";
import { fullTime } from "../format.ts";
import { errorText } from "./bits.tsx";

const HOUR = 3_600_000;

function tomorrowAt9() {
  const d = new Date();
  d.setDate(d.getDate() + 1);
  d.setHours(9, 0, 0, 0);
  return d.getTime();
}

/** The chat's switches: read/unread, archive, a reminder. Each answers with the chat as it now is. */
export function ChatActions({ chat, onChange }: { chat: Chat; onChange(chat: Chat): void }) {
  const [error, setError] = useState<string>();
  const path = `/v1/chats/${enc(chat.id)}`;
  const run = async (method: string, sub: string, body?: unknown) => {
    try {
      await call(method, `${path}${sub}`, body);
      onChange(await get<Chat>(path));
      setError(undefined);
    } catch (e) {
      setError(errorText(e));
    }
  };
  const unread = chat.unreadCount > 0 || chat.isMarkedUnread;
  return (
    <div class="chat-actions">
      <button type="button" onClick={() => run("POST", unread ? "/read" : "/unread", {})}>
        {unread ? "Mark read" : "Mark unread"}
      </button>
      <button type="button" onClick={() => run("POST", "/archive", { archived: !chat.isArchived })}>
        {chat.isArchived ? "Unarchive" : "Archive"}
      </button>
      <select
        aria-label="Reminder"
        value=""
        onChange={(e) => {
          const choice = e.currentTarget.value;
          e.currentTarget.value = "";
          if (choice === "clear") void run("DELETE", "/reminders");
          else if (choice)
            void run("POST", "/reminders", {
              reminder: {
                remindAtMs: choice === "tomorrow" ? tomorrowAt9() : Date.now() + Number(choice) * HOUR,
                dismissOnIncomingMessage: true,
              },
            });
        }}
      >
        <option value="">
          {chat.reminder && !chat.reminder.isFired ? `Reminder: ${fullTime(chat.reminder.remindAt)}` : "Remind me…"}
        </option>
        <option value="1">in 1 hour</option>
        <option value="3">in 3 hours</option>
        <option value="tomorrow">tomorrow at 9:00</option>
        {chat.reminder && <option value="clear">Clear the reminder</option>}
      </select>
      {error && (
        <span class="error-text" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
