import { useEffect, useState } from "preact/hooks";
import { call, enc, get, type Account } from "../api.ts";
import { onLive } from "../live.ts";
import { connectHref, navigate, type Route } from "../router.ts";
import type { Session } from "./App.tsx";
import { errorText } from "./bits.tsx";
import { LoginWizard } from "./LoginWizard.tsx";

export interface Bridge {
  id: string;
  displayName: string;
  network: string;
  status: "available" | "connected" | "limit_reached";
  statusText: string;
  supportsMultipleAccounts: boolean;
  activeAccountCount: number;
  accounts: Account[];
}

const statusWords: Record<string, string> = {
  connected: "Connected",
  connecting: "Connecting…",
  backfilling: "Loading history…",
  connection_required: "Needs a connection",
  reconnect_required: "Sign in again",
  attention_required: "Needs attention",
  disconnected: "Disconnected",
  disabled: "Disabled",
};

/** The networks (bridges) and their accounts: connect, reconnect, remove. */
export function Accounts({ route, session }: { route: Route; session: Session }) {
  const [bridges, setBridges] = useState<Bridge[]>();
  const [error, setError] = useState<string>();
  const reload = async () => {
    try {
      setBridges((await get<{ items: Bridge[] }>("/v1/bridges")).items);
      await session.reloadAccounts();
    } catch (e) {
      setError(errorText(e));
    }
  };
  useEffect(() => {
    void reload();
    // Account status changes arrive as chat updates; poll lightly while this view is open as well.
    const timer = setInterval(reload, 5000);
    const off = onLive((e) => e.type === "resync" && void reload());
    return () => {
      clearInterval(timer);
      off();
    };
  }, []);

  const remove = async (bridge: Bridge, account: Account) => {
    if (
      !account.loginID ||
      !confirm(
        `Remove ${account.user.fullName ?? account.user.username ?? account.accountID}? Its chats and messages are deleted from this device.`,
      )
    )
      return;
    try {
      await call("POST", `/v1/bridges/${enc(bridge.id)}/logins/${enc(account.loginID)}/remove`, {});
      await reload();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const wizardBridge = route.bridgeID && bridges?.find((b) => b.id === route.bridgeID);
  return (
    <main class="page" aria-labelledby="accounts-title">
      <h1 id="accounts-title">Accounts</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {wizardBridge && (
        <LoginWizard
          bridge={wizardBridge}
          accountID={route.accountID}
          onDone={() => {
            navigate("#/accounts");
            void reload();
          }}
        />
      )}
      {!bridges && !error && <p class="muted">Loading…</p>}
      <ul class="bridges">
        {bridges?.map((bridge) => (
          <li class="card bridge" key={bridge.id} aria-label={bridge.displayName}>
            <div class="bridge-head">
              <div>
                <h2>{bridge.displayName}</h2>
                <span class="muted">
                  {bridge.network} · {bridge.statusText}
                </span>
              </div>
              <button
                type="button"
                class="primary"
                disabled={bridge.status === "limit_reached"}
                onClick={() => navigate(connectHref(bridge.id))}
                aria-label={`Connect a ${bridge.displayName} account`}
              >
                Connect
              </button>
            </div>
            {bridge.accounts.length > 0 && (
              <ul class="accounts">
                {bridge.accounts.map((account) => (
                  <li key={account.accountID} data-account-id={account.accountID}>
                    <span>
                      <strong>{account.user.fullName ?? account.user.username ?? account.accountID}</strong>{" "}
                      <span class="muted">{account.user.username ?? account.user.id}</span>
                    </span>
                    <span class={`status ${account.status}`}>
                      {account.statusText ?? statusWords[account.status] ?? account.status}
                    </span>
                    <span class="account-actions">
                      <button type="button" onClick={() => navigate(connectHref(bridge.id, account.accountID))}>
                        Reconnect
                      </button>
                      <button type="button" onClick={() => remove(bridge, account)}>
                        Remove
                      </button>
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </li>
        ))}
      </ul>
    </main>
  );
}
