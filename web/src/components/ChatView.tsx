import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { call, enc, get, type Chat, type Message, type MessagePage } from "../api.ts";
import { onLive } from "../live.ts";
import type { Session } from "./App.tsx";
import { Avatar, errorText, NetworkBadge } from "./bits.tsx";
import { ChatActions } from "./ChatActions.tsx";
import { Composer, type ComposerMode } from "./Composer.tsx";
import { MessageItem } from "./MessageItem.tsx";

interface Loaded {
  /** Oldest first. */
  items: Message[];
  olderCursor: string | null;
  hasOlder: boolean;
  newerCursor: string | null;
  /** False when the newest loaded message is the chat's newest: live messages are appended. */
  hasNewer: boolean;
}

const byPosition = (a: Message, b: Message) => a.sortKey.localeCompare(b.sortKey);

/**
 * One chat: its messages oldest to newest, more loaded as you scroll up (or down, when opened at an older message
 * from a search), live updates, and the composer. Opening a chat with unread messages marks it read.
 */
export function ChatView({ chatID, messageID, session }: { chatID: string; messageID?: string; session: Session }) {
  const [chat, setChat] = useState<Chat>();
  const [loaded, setLoaded] = useState<Loaded>();
  const [error, setError] = useState<string>();
  const [mode, setMode] = useState<ComposerMode>({ kind: "new" });
  const [dragging, setDragging] = useState(false);
  const [dropped, setDropped] = useState<File>();
  const scroller = useRef<HTMLDivElement>(null);
  const anchor = useRef<
    { kind: "bottom" } | { kind: "keep"; height: number; top: number } | { kind: "message"; id: string }
  >({ kind: "bottom" });
  const busy = useRef(false);

  const path = `/v1/chats/${enc(chatID)}`;
  const reload = async () => {
    try {
      const current = await get<Chat>(path);
      setChat(current);
      if (messageID) {
        // Open at the message: it, the page before it and the page after it.
        const target = await get<Message>(`${path}/messages/${enc(messageID)}`);
        const [older, newer] = await Promise.all([
          get<MessagePage>(`${path}/messages`, { cursor: target.sortKey, direction: "before" }),
          get<MessagePage>(`${path}/messages`, { cursor: target.sortKey, direction: "after" }),
        ]);
        anchor.current = { kind: "message", id: target.id };
        setLoaded({
          items: [...older.items, target, ...newer.items].sort(byPosition),
          olderCursor: older.oldestCursor,
          hasOlder: older.hasMore,
          newerCursor: newer.newestCursor ?? target.sortKey,
          hasNewer: newer.hasMore,
        });
      } else {
        const page = await get<MessagePage>(`${path}/messages`);
        anchor.current = { kind: "bottom" };
        setLoaded({
          items: [...page.items].sort(byPosition),
          olderCursor: page.oldestCursor,
          hasOlder: page.hasMore,
          newerCursor: null,
          hasNewer: false,
        });
      }
      setError(undefined);
      if (current.unreadCount > 0) void call("POST", `${path}/read`, {}).catch(() => undefined);
    } catch (e) {
      setError(errorText(e));
    }
  };

  useEffect(() => {
    void reload();
  }, [chatID, messageID]);

  // Live: messages of this chat are merged in place (edits, reactions, deletions); new ones appended at the live end.
  useEffect(
    () =>
      onLive((event) => {
        if (event.type === "resync") return void reload();
        if (event.type === "chat.upserted" && event.ids.includes(chatID)) {
          const entry = event.entries?.find((c) => c.id === chatID);
          if (entry) setChat(entry);
          return;
        }
        if (event.type === "chat.deleted" && event.ids.includes(chatID)) return setError("This chat was deleted.");
        if (event.chatID !== chatID) return;
        if (event.type === "message.deleted")
          return setLoaded((l) => l && { ...l, items: l.items.filter((m) => !event.ids.includes(m.id)) });
        if (event.type !== "message.upserted" || !event.entries) return;
        const entries = event.entries;
        const el = scroller.current;
        const atBottom = !el || el.scrollHeight - el.scrollTop - el.clientHeight < 80;
        setLoaded((l) => {
          if (!l) return l;
          const items = l.items.map((m) => entries.find((e) => e.id === m.id) ?? m);
          const fresh = entries.filter((e) => !l.items.some((m) => m.id === e.id));
          if (!fresh.length || l.hasNewer) return { ...l, items };
          if (atBottom) anchor.current = { kind: "bottom" };
          // Read as it arrives, as in any chat app, while the reader is at the newest messages of a visible page.
          if (atBottom && document.visibilityState === "visible" && fresh.some((m) => !m.isSender))
            void call("POST", `${path}/read`, {}).catch(() => undefined);
          return { ...l, items: [...items, ...fresh].sort(byPosition) };
        });
      }),
    [chatID],
  );

  // Keep the view where the reader is: at the bottom, at the message opened, or still on the same messages after older ones were added above.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el || !loaded) return;
    const a = anchor.current;
    if (a.kind === "bottom") el.scrollTop = el.scrollHeight;
    else if (a.kind === "keep") el.scrollTop = el.scrollHeight - a.height + a.top;
    else {
      const target = el.querySelector<HTMLElement>(`[data-message-id="${CSS.escape(a.id)}"]`);
      target?.scrollIntoView({ block: "center" });
      target?.focus({ preventScroll: true });
    }
    anchor.current = { kind: "keep", height: el.scrollHeight, top: el.scrollTop };
  }, [loaded]);

  /** One more page before the oldest loaded message or after the newest, keeping the reader's place. */
  const loadMore = async (direction: "before" | "after") => {
    const older = direction === "before";
    if (!loaded || !(older ? loaded.hasOlder : loaded.hasNewer) || busy.current) return;
    busy.current = true;
    try {
      const page = await get<MessagePage>(`${path}/messages`, {
        cursor: (older ? loaded.olderCursor : loaded.newerCursor) ?? undefined,
        direction,
      });
      const el = scroller.current!;
      anchor.current = { kind: "keep", height: el.scrollHeight, top: el.scrollTop };
      setLoaded((l) => {
        if (!l) return l;
        const known = new Set(l.items.map((m) => m.id));
        const items = [...l.items, ...page.items.filter((m) => !known.has(m.id))].sort(byPosition);
        return older
          ? { ...l, items, olderCursor: page.oldestCursor ?? l.olderCursor, hasOlder: page.hasMore }
          : { ...l, items, newerCursor: page.newestCursor ?? l.newerCursor, hasNewer: page.hasMore };
      });
    } catch (e) {
      setError(errorText(e));
    } finally {
      busy.current = false;
    }
  };

  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    if (el.scrollTop < 200) void loadMore("before");
    if (el.scrollHeight - el.scrollTop - el.clientHeight < 200) void loadMore("after");
  };
  // A short first page may not fill the view: keep loading until it scrolls.
  useEffect(() => {
    const el = scroller.current;
    if (el && loaded?.hasOlder && el.scrollHeight <= el.clientHeight) void loadMore("before");
  }, [loaded]);

  const byID = new Map(loaded?.items.map((m) => [m.id, m]));
  const account = session.accounts.find((a) => a.accountID === chat?.accountID);
  const selfID = account?.user.id;

  return (
    <section
      class={`chat-pane ${dragging ? "dragging" : ""}`}
      aria-label={chat ? `Chat ${chat.title}` : "Chat"}
      onDragOver={(e) => {
        if (e.dataTransfer?.types.includes("Files")) {
          e.preventDefault();
          setDragging(true);
        }
      }}
      onDragLeave={(e) => {
        if (e.currentTarget === e.target) setDragging(false);
      }}
      onDrop={(e) => {
        e.preventDefault();
        setDragging(false);
        const file = e.dataTransfer?.files[0];
        if (file) setDropped(file);
      }}
    >
      <header class="chat-header">
        <a class="back" href="#/" aria-label="Back to the list">
          ←
        </a>
        {chat && <Avatar name={chat.title} />}
        <div class="chat-title">
          <div class="chat-heading">
            <h2>{chat?.title ?? "…"}</h2>
            {chat && <NetworkBadge network={chat.network} />}
          </div>
          {chat && (chat.type === "group" || account) && (
            <span class="muted">
              {chat.type === "group" ? `${chat.participants.total} people` : ""}
              {chat.type === "group" && account ? " · " : ""}
              {account ? `as ${account.user.fullName ?? account.user.username ?? account.user.id}` : ""}
            </span>
          )}
        </div>
        {chat && <ChatActions chat={chat} onChange={setChat} />}
      </header>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div
        class="messages"
        ref={scroller}
        onScroll={onScroll}
        role="log"
        aria-label="Messages"
        aria-live="polite"
        tabIndex={0}
      >
        {loaded?.hasOlder && <p class="loading-older">Loading older messages…</p>}
        {loaded && !loaded.hasOlder && <p class="chat-start">Start of the conversation</p>}
        {loaded?.items.map((m) => (
          <MessageItem
            key={m.id}
            message={m}
            replyTo={m.linkedMessageID ? byID.get(m.linkedMessageID) : undefined}
            selfID={selfID}
            highlighted={m.id === messageID}
            onReply={() => setMode({ kind: "reply", message: m })}
            onEdit={() => setMode({ kind: "edit", message: m })}
            onError={setError}
          />
        ))}
        {loaded?.hasNewer && <p class="loading-older">Loading newer messages…</p>}
      </div>
      {dragging && <div class="drop-hint">Drop a file to attach it</div>}
      {chat && !chat.isReadOnly && (
        <Composer
          chatID={chatID}
          mode={mode}
          onMode={setMode}
          dropped={dropped}
          onDroppedTaken={() => setDropped(undefined)}
          draft={chat.draft?.text}
          onSent={() => {
            anchor.current = { kind: "bottom" };
            if (loaded?.hasNewer) void reload();
          }}
        />
      )}
    </section>
  );
}
