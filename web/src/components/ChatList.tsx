import { useEffect, useRef, useState } from "preact/hooks";
import { get, type Chat, type ChatPage } from "../api.ts";
import { shortTime } from "../format.ts";
import { onLive } from "../live.ts";
import { chatHref, navigate } from "../router.ts";
import { useVirtualizer } from "../virtual.ts";
import { Avatar, NetworkBadge, preview } from "./bits.tsx";

export type Tab = "primary" | "low-priority" | "archive";

const PAGE = 50;
const ROW_HEIGHT = 64;
let firstRowsMarked = false;

/** Whether a chat belongs in the tab (the server's rule for `inbox`), for live updates. */
function inTab(chat: Chat, tab: Tab): boolean {
  if (tab === "archive") return chat.isArchived;
  if (tab === "low-priority") return chat.isLowPriority && !chat.isArchived;
  return !chat.isArchived && !chat.isLowPriority;
}

/**
 * The server's list order (newest activity first; of chats active at the same moment, the later-made first), so that
 * a chat a live update moves lands where the next page load would show it. Chats made together (one login's, one
 * import's) share a timestamp: without the tie-break, a chat marked read jumped below its equals.
 */
const newerFirst = (a: Chat, b: Chat) =>
  (b.lastActivity ?? "").localeCompare(a.lastActivity ?? "") || Number(b.localChatID) - Number(a.localChatID);

/**
 * The chats of one tab, newest activity first, loaded a page at a time as the list nears its end and virtualised
 * (only the rows in view are in the DOM). Live `chat.upserted` events move a chat to where it now belongs.
 */
export function ChatList(props: {
  tab: Tab;
  accountID: string;
  query: string;
  selectedID?: string;
  onSearchEverything?: () => void;
}) {
  const [chats, setChats] = useState<Chat[]>([]);
  const [more, setMore] = useState(true);
  const [error, setError] = useState<string>();
  const [active, setActive] = useState(0);
  const cursor = useRef<string | null>(null);
  const loading = useRef(false);
  const generation = useRef(0);
  const scroller = useRef<HTMLDivElement>(null);

  const load = async (reset: boolean) => {
    if (loading.current && !reset) return;
    const mine = reset ? ++generation.current : generation.current;
    loading.current = true;
    try {
      const page = await get<ChatPage>("/v1/chats/search", {
        inbox: props.tab,
        accountIDs: props.accountID ? [props.accountID] : undefined,
        query: props.query || undefined,
        includeMuted: true,
        limit: PAGE,
        cursor: reset ? undefined : (cursor.current ?? undefined),
        direction: reset ? undefined : "before",
      });
      if (mine !== generation.current) return;
      cursor.current = page.oldestCursor;
      setMore(page.hasMore);
      setError(undefined);
      setChats((old) => {
        if (reset) return page.items;
        const seen = new Set(old.map((c) => c.id));
        return [...old, ...page.items.filter((c) => !seen.has(c.id))];
      });
    } catch (e) {
      if (mine === generation.current) setError(e instanceof Error ? e.message : String(e));
    } finally {
      if (mine === generation.current) loading.current = false;
    }
  };

  useEffect(() => {
    cursor.current = null;
    setMore(true);
    setActive(0);
    scroller.current?.scrollTo({ top: 0 });
    void load(true);
  }, [props.tab, props.accountID, props.query]);

  useEffect(
    () =>
      onLive((event) => {
        if (event.type === "resync") return void load(true);
        if (event.type === "chat.deleted") return setChats((old) => old.filter((c) => !event.ids.includes(c.id)));
        if (event.type !== "chat.upserted" || !event.entries) return;
        const entries = event.entries;
        setChats((old) => {
          let next = old.filter((c) => !entries.some((e) => e.id === c.id));
          for (const chat of entries) {
            const fits =
              inTab(chat, props.tab) && (!props.accountID || chat.accountID === props.accountID) && !props.query;
            const known = old.some((c) => c.id === chat.id);
            if (props.query && known) next = old.map((c) => (c.id === chat.id ? chat : c));
            else if (fits) {
              // Insert where it sorts; past the loaded end it will come with a later page.
              const at = next.findIndex((c) => newerFirst(chat, c) < 0);
              if (at >= 0) next.splice(at, 0, chat);
              else if (!more) next.push(chat);
            }
          }
          return next;
        });
      }),
    [props.tab, props.accountID, props.query, more],
  );

  const virtual = useVirtualizer({
    count: chats.length + (more ? 1 : 0),
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 8,
    getItemKey: (index) => chats[index]?.id ?? "loader",
  });
  const rows = virtual.getVirtualItems();

  // Near the end of what is loaded: fetch the next page.
  const last = rows[rows.length - 1];
  useEffect(() => {
    if (last && more && last.index >= chats.length - 10) void load(false);
  }, [last?.index, chats.length, more]);

  useEffect(() => {
    if (firstRowsMarked || !chats.length) return;
    firstRowsMarked = true;
    // The first page is on screen after this frame: the figure `npm run bench` reads.
    requestAnimationFrame(() => setTimeout(() => performance.mark("inbox:first-rows")));
  }, [chats.length > 0]);

  const open = (index: number) => {
    const chat = chats[index];
    if (chat) navigate(chatHref(chat.id));
  };
  const onKeyDown = (e: KeyboardEvent) => {
    const step = { ArrowDown: 1, ArrowUp: -1, PageDown: 10, PageUp: -10 }[e.key];
    if (step !== undefined) {
      e.preventDefault();
      const next = Math.max(0, Math.min(chats.length - 1, active + step));
      setActive(next);
      virtual.scrollToIndex(next);
    } else if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      const next = e.key === "Home" ? 0 : chats.length - 1;
      setActive(next);
      virtual.scrollToIndex(next);
    } else if (e.key === "Enter") open(active);
  };

  return (
    <>
      {error && (
        <p class="error" role="alert">
          {error}{" "}
          <button type="button" onClick={() => load(true)}>
            Retry
          </button>
        </p>
      )}
      {props.onSearchEverything && (
        <button type="button" class="search-everything" onClick={props.onSearchEverything}>
          Search messages and groups for “{props.query}”
        </button>
      )}
      <div
        class="chat-list"
        ref={scroller}
        role="listbox"
        aria-label="Chats"
        tabIndex={0}
        data-testid="chat-list"
        data-loaded={chats.length}
        aria-activedescendant={chats[active] ? `chat-row-${active}` : undefined}
        onKeyDown={onKeyDown}
      >
        <div style={{ height: `${virtual.getTotalSize()}px`, position: "relative" }}>
          {rows.map((row) => {
            const chat = chats[row.index];
            const style = { transform: `translateY(${row.start}px)`, height: `${ROW_HEIGHT}px` };
            if (!chat)
              return (
                <div class="row loader" key="loader" style={style} aria-hidden="true">
                  Loading…
                </div>
              );
            const unread = chat.unreadCount > 0 || chat.isMarkedUnread;
            return (
              <div
                key={chat.id}
                id={`chat-row-${row.index}`}
                role="option"
                aria-selected={chat.id === props.selectedID}
                class={`row ${unread ? "unread" : ""} ${row.index === active ? "active" : ""}`}
                style={style}
                data-chat-id={chat.id}
                onClick={() => {
                  setActive(row.index);
                  open(row.index);
                }}
              >
                <Avatar name={chat.title} />
                <div class="row-main">
                  <div class="row-top">
                    <span class="title">{chat.title}</span>
                    <NetworkBadge network={chat.network} />
                    <time dateTime={chat.lastActivity}>{shortTime(chat.lastActivity)}</time>
                  </div>
                  <div class="row-bottom">
                    <span class="preview">{chat.preview ? preview(chat.preview) : ""}</span>
                    {chat.isMuted && <span class="tag">muted</span>}
                    {chat.isPinned && <span class="tag">pinned</span>}
                    {unread && (
                      <span class="badge" aria-label={`${chat.unreadCount || ""} unread`}>
                        {chat.unreadCount || "•"}
                      </span>
                    )}
                  </div>
                </div>
              </div>
            );
          })}
        </div>
        {!chats.length && !more && (
          <p class="empty-list">{props.query ? `No chat matches “${props.query}”.` : "No chats here."}</p>
        )}
      </div>
    </>
  );
}
