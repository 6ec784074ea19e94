import { useEffect, useState } from "preact/hooks";
import { get, type Account } from "../api.ts";
import { signedInInbox, signOut } from "../auth.ts";
import { keepFocusDraft, onLive, onLiveStatus, startLive, stopLive, connected as liveConnected } from "../live.ts";
import { chatHref, navigate, useRoute } from "../router.ts";
import { Accounts } from "./Accounts.tsx";
import { Inbox } from "./Inbox.tsx";
import { Settings } from "./Settings.tsx";

export interface Session {
  accounts: Account[];
  reloadAccounts(): Promise<void>;
}

/** The signed-in shell: a navigation rail and the current view; the live connection and the account list are shared. */
export function App({ onSignOut }: { onSignOut: () => void }) {
  const route = useRoute();
  const [accounts, setAccounts] = useState<Account[]>([]);
  const [live, setLive] = useState(liveConnected);
  const reloadAccounts = async () => setAccounts(await get<Account[]>("/v1/accounts"));

  useEffect(() => {
    void reloadAccounts().catch(() => undefined);
    startLive();
    const offStatus = onLiveStatus(setLive);
    let accountsChanged: ReturnType<typeof setTimeout> | undefined;
    // POST /v1/focus: follow it to the chat (and message) it names.
    const offFocus = onLive((event) => {
      if (event.type === "focus" && event.focus.chatID) {
        if (event.focus.draftText !== undefined) keepFocusDraft(event.focus.chatID, event.focus.draftText);
        navigate(chatHref(event.focus.chatID, event.focus.messageID));
      }
      if (event.type === "resync") void reloadAccounts().catch(() => undefined);
      // An account added (a login, or a network bridged into a Matrix account), changed or removed: the account
      // filter and the Accounts page follow. A burst (a long sync's progress texts) costs one reload.
      if (event.type === "account.upserted" || event.type === "account.deleted") {
        clearTimeout(accountsChanged);
        accountsChanged = setTimeout(() => void reloadAccounts().catch(() => undefined), 250);
      }
    });
    return () => {
      clearTimeout(accountsChanged);
      offStatus();
      offFocus();
      stopLive();
    };
  }, []);

  // Where a deployment holds many inboxes, which one this is: in the rail and the tab's title.
  const inbox = signedInInbox();
  useEffect(() => {
    if (!inbox) return;
    const before = document.title;
    document.title = `${inbox} · inboxd`;
    return () => void (document.title = before);
  }, [inbox]);

  const session: Session = { accounts, reloadAccounts };
  const link = (href: string, label: string, active: boolean) => (
    <a href={href} aria-current={active ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <div class="shell">
      <nav class="rail" aria-label="Main">
        <span class="brand" aria-hidden="true">
          inboxd
        </span>
        {inbox && (
          <span class="inbox-name" role="note" aria-label={`Inbox ${inbox}`} title="The inbox this page shows">
            inbox <strong>{inbox}</strong>
          </span>
        )}
        {link("#/", "Inbox", route.view === "inbox")}
        {link("#/accounts", "Accounts", route.view === "accounts")}
        {link("#/settings", "Settings", route.view === "settings")}
        <span
          class={`live ${live ? "on" : "off"}`}
          role="status"
          title={live ? "Live updates connected" : "Live updates reconnecting"}
        >
          {live ? "Live" : "Offline"}
        </span>
        <button
          type="button"
          class="link"
          onClick={async () => {
            await signOut();
            onSignOut();
          }}
        >
          Sign out
        </button>
      </nav>
      {route.view === "inbox" && <Inbox route={route} session={session} />}
      {route.view === "accounts" && <Accounts route={route} session={session} />}
      {route.view === "settings" && <Settings />}
    </div>
  );
}
