import { useEffect, useState } from "preact/hooks";
import { get, type Chat, type Message } from "../api.ts";
import { shortTime } from "../format.ts";
import { chatHref } from "../router.ts";
import { Avatar, errorText, NetworkBadge } from "./bits.tsx";

interface Unified {
  results: {
    chats: Chat[];
    in_groups: Chat[];
    messages: { items: Message[]; chats: Record<string, Chat>; hasMore: boolean };
  };
}

/** Unified search (GET /v1/search): chats, groups by member, and messages; a message opens its chat at it. */
export function SearchResults({ query, onClose }: { query: string; onClose(): void }) {
  const [found, setFound] = useState<Unified["results"]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    setFound(undefined);
    get<Unified>("/v1/search", { query }).then(
      (r) => setFound(r.results),
      (e) => setError(errorText(e)),
    );
  }, [query]);

  const chatLink = (chat: Chat) => (
    <li key={chat.id}>
      <a href={chatHref(chat.id)} class="result">
        <Avatar name={chat.title} />
        <span class="title">{chat.title}</span>
        <NetworkBadge network={chat.network} />
      </a>
    </li>
  );
  return (
    <div class="search-results" aria-label={`Results for ${query}`}>
      <div class="results-head">
        <h2>Results for “{query}”</h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {!found && !error && <p class="muted">Searching…</p>}
      {found && (
        <>
          <h3>Chats</h3>
          {found.chats.length ? <ul>{found.chats.map(chatLink)}</ul> : <p class="muted">No chat title matches.</p>}
          {found.in_groups.length > 0 && (
            <>
              <h3>In groups</h3>
              <ul>{found.in_groups.map(chatLink)}</ul>
            </>
          )}
          <h3>Messages</h3>
          {found.messages.items.length ? (
            <ul>
              {found.messages.items.map((m) => (
                <li key={m.id}>
                  <a href={chatHref(m.chatID, m.id)} class="result message-result">
                    <span class="title">{found.messages.chats[m.chatID]?.title ?? m.chatID}</span>
                    <time dateTime={m.timestamp}>{shortTime(m.timestamp)}</time>
                    <span class="snippet">
                      {m.isSender ? "You" : (m.senderName ?? m.senderID)}: {m.text}
                    </span>
                  </a>
                </li>
              ))}
            </ul>
          ) : (
            <p class="muted">No message matches.</p>
          )}
        </>
      )}
    </div>
  );
}
