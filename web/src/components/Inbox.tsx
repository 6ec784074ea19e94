import { useEffect, useState } from "preact/hooks";
import type { Route } from "../router.ts";
import type { Session } from "./App.tsx";
import { ChatList, type Tab } from "./ChatList.tsx";
import { ChatView } from "./ChatView.tsx";
import { SearchResults } from "./SearchResults.tsx";

const tabs: { id: Tab; label: string }[] = [
  { id: "primary", label: "Inbox" },
  { id: "low-priority", label: "Low priority" },
  { id: "archive", label: "Archive" },
];

/** The list of chats (tabs, account filter, search as you type) beside the open chat. */
export function Inbox({ route, session }: { route: Route; session: Session }) {
  const [tab, setTab] = useState<Tab>("primary");
  const [accountID, setAccountID] = useState("");
  const [typed, setTyped] = useState("");
  const [query, setQuery] = useState("");
  const [searching, setSearching] = useState<string>();

  // Chat search as you type: the list follows the box after a short pause.
  useEffect(() => {
    const timer = setTimeout(() => setQuery(typed.trim()), 150);
    return () => clearTimeout(timer);
  }, [typed]);

  return (
    <div class={`inbox ${route.chatID ? "has-chat" : ""}`}>
      <section class="list-pane" aria-label="Chats">
        <header class="list-header">
          <form
            role="search"
            onSubmit={(e) => {
              e.preventDefault();
              if (typed.trim()) setSearching(typed.trim());
            }}
          >
            <input
              type="search"
              aria-label="Search chats"
              placeholder="Search (Enter: messages too)"
              value={typed}
              onInput={(e) => {
                setTyped(e.currentTarget.value);
                if (!e.currentTarget.value) setSearching(undefined);
              }}
              onKeyDown={(e) => {
                if (e.key === "Escape") {
                  setTyped("");
                  setSearching(undefined);
                }
              }}
            />
          </form>
          <div class="filters">
            <div role="tablist" aria-label="Inbox">
              {tabs.map((t) => (
                <button type="button" role="tab" aria-selected={tab === t.id} onClick={() => setTab(t.id)} key={t.id}>
                  {t.label}
                </button>
              ))}
            </div>
            <select aria-label="Account" value={accountID} onChange={(e) => setAccountID(e.currentTarget.value)}>
              <option value="">All accounts</option>
              {session.accounts.map((a) => (
                <option value={a.accountID} key={a.accountID}>
                  {a.user.fullName ?? a.user.username ?? a.accountID} ({a.network ?? a.bridge.type})
                </option>
              ))}
            </select>
          </div>
        </header>
        {searching ? (
          <SearchResults query={searching} onClose={() => setSearching(undefined)} />
        ) : (
          <ChatList
            tab={tab}
            accountID={accountID}
            query={query}
            selectedID={route.chatID}
            onSearchEverything={query ? () => setSearching(query) : undefined}
          />
        )}
      </section>
      {route.chatID ? (
        <ChatView
          key={`${route.chatID}/${route.messageID ?? ""}`}
          chatID={route.chatID}
          messageID={route.messageID}
          session={session}
        />
      ) : (
        <section class="chat-pane empty" aria-label="Chat">
          <p>Choose a chat.</p>
        </section>
      )}
    </div>
  );
}
