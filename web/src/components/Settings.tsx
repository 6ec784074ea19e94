import { useEffect, useState } from "preact/hooks";
import { call, enc, get } from "../api.ts";
import { fullTime } from "../format.ts";
import { errorText } from "./bits.tsx";

interface TokenInfo {
  id: string;
  name: string;
  scopes: string[];
  createdAt: string;
  hint: string;
  expiresAt?: string;
  clientID?: string;
  clientName?: string;
  current: boolean;
}
interface AppInfo {
  clientID: string;
  clientName: string;
  redirectURIs: string[];
  scopes: string[];
  authorizedAt: string;
  activeTokens: number;
  current: boolean;
}
interface Webhook {
  id: string;
  url: string;
  chatIDs: string[];
  createdAt: string;
  pending: number;
  delivered: number;
  failed: number;
  lastSuccessAt?: string;
  lastError?: { at: string; message: string; attempts: number };
  failures: { deliveryID?: string; at?: string; message?: string }[];
}

/** Who has access (tokens, authorized apps), webhooks, and the server. */
export function Settings() {
  const [tokens, setTokens] = useState<TokenInfo[]>();
  const [apps, setApps] = useState<AppInfo[]>();
  const [hooks, setHooks] = useState<Webhook[]>();
  const [info, setInfo] = useState<Record<string, unknown>>();
  const [error, setError] = useState<string>();
  const [secret, setSecret] = useState<string>();
  const [url, setURL] = useState("");

  const reload = async () => {
    try {
      const [t, a, w, i] = await Promise.all([
        get<{ items: TokenInfo[] }>("/v1/tokens"),
        get<{ items: AppInfo[] }>("/v1/authorized-apps"),
        get<{ items: Webhook[] }>("/v1/webhooks"),
        get<Record<string, unknown>>("/v1/info"),
      ]);
      setTokens(t.items);
      setApps(a.items);
      setHooks(w.items);
      setInfo(i);
      setError(undefined);
    } catch (e) {
      setError(errorText(e));
    }
  };
  useEffect(() => void reload(), []);

  const act = async (run: () => Promise<unknown>) => {
    try {
      await run();
      await reload();
    } catch (e) {
      setError(errorText(e));
    }
  };

  // Only the CLI's and the Worker's tokens are listed one by one; OAuth-issued ones belong to their app below.
  const plainTokens = tokens?.filter((t) => !t.clientID);
  return (
    <main class="page settings" aria-labelledby="settings-title">
      <h1 id="settings-title">Settings</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}

      <section class="card" aria-labelledby="tokens-title">
        <h2 id="tokens-title">Access tokens</h2>
        <p class="muted">
          Made with <code>inboxd token create</code> (or the Worker's secrets). Revoking one stops it within a second.
        </p>
        <table>
          <Head columns={["Name", "Token", "Scopes", "Created"]} />
          <tbody>
            {plainTokens?.map((t) => (
              <tr key={t.id} data-token-id={t.id}>
                <td>{t.name}</td>
                <td>
                  <code>{t.hint}…</code>
                </td>
                <td>{t.scopes.join(", ")}</td>
                <td>{fullTime(t.createdAt)}</td>
                <Revoke
                  label={`Revoke token ${t.name} (${t.hint}…)`}
                  question={`Revoke the token ${t.name}? Anything using it stops working.`}
                  onConfirm={() => act(() => call("DELETE", `/v1/tokens/${enc(t.id)}`))}
                />
              </tr>
            ))}
          </tbody>
        </table>
        {plainTokens?.length === 0 && <p class="muted">No tokens.</p>}
      </section>

      <section class="card" aria-labelledby="apps-title">
        <h2 id="apps-title">Apps you approved</h2>
        <table>
          <Head columns={["App", "Scopes", "Approved"]} />
          <tbody>
            {apps?.map((a) => (
              <tr key={a.clientID} data-client-id={a.clientID}>
                <td>
                  {a.clientName} {a.current && <span class="tag">this page</span>}
                  <div class="muted small">{a.redirectURIs.join(", ")}</div>
                </td>
                <td>{a.scopes.join(", ")}</td>
                <td>{fullTime(a.authorizedAt)}</td>
                <Revoke
                  label={`Revoke ${a.clientName}`}
                  question={`Revoke ${a.clientName}? It has to ask you again.${a.current ? " This page signs out." : ""}`}
                  onConfirm={() => act(() => call("DELETE", `/v1/authorized-apps/${enc(a.clientID)}`))}
                />
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      <section class="card" aria-labelledby="webhooks-title">
        <div class="bridge-head">
          <h2 id="webhooks-title">Webhooks</h2>
          <button type="button" onClick={() => void reload()}>
            Refresh
          </button>
        </div>
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            void act(async () => {
              const created = await call<{ secret: string }>("POST", "/v1/webhooks", { url });
              setSecret(created.secret);
              setURL("");
            });
          }}
        >
          <label>
            URL
            <input
              type="url"
              required
              placeholder="https://example.org/hook"
              value={url}
              onInput={(e) => setURL(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="primary">
            Add webhook
          </button>
        </form>
        {secret && (
          <p role="status" class="notice">
            Signing secret (shown once): <code>{secret}</code>{" "}
            <button type="button" onClick={() => setSecret(undefined)}>
              Hide
            </button>
          </p>
        )}
        <ul class="webhooks">
          {hooks?.map((h) => (
            <li key={h.id} data-webhook-id={h.id}>
              <div>
                <strong>{h.url}</strong>{" "}
                <span class="muted">{h.chatIDs.includes("*") ? "every chat" : `${h.chatIDs.length} chats`}</span>
              </div>
              <div class="muted">
                {h.delivered} delivered · {h.failed} failed · {h.pending} pending
                {h.lastSuccessAt && ` · last delivered ${fullTime(h.lastSuccessAt)}`}
              </div>
              {h.lastError && (
                <div class="error-text">
                  Last error ({fullTime(h.lastError.at)}, {h.lastError.attempts} attempts): {h.lastError.message}
                </div>
              )}
              <button
                type="button"
                aria-label={`Remove webhook ${h.url}`}
                onClick={() => act(() => call("DELETE", `/v1/webhooks/${enc(h.id)}`))}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
        {hooks?.length === 0 && <p class="muted">No webhooks.</p>}
      </section>

      <section class="card" aria-labelledby="server-title">
        <h2 id="server-title">Server</h2>
        {info && (
          <dl class="info">
            {Object.entries(info).map(([key, value]) => (
              <div key={key}>
                <dt>{key}</dt>
                <dd>{typeof value === "object" ? <pre>{JSON.stringify(value, null, 2)}</pre> : String(value)}</dd>
              </div>
            ))}
          </dl>
        )}
      </section>
    </main>
  );
}

function Head({ columns }: { columns: string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => (
          <th scope="col" key={c}>
            {c}
          </th>
        ))}
        <th scope="col">
          <span class="sr-only">Actions</span>
        </th>
      </tr>
    </thead>
  );
}

/** A revoke button that asks first (the browser's own dialog: keyboard and screen-reader friendly). */
function Revoke({ label, question, onConfirm }: { label: string; question: string; onConfirm(): void }) {
  return (
    <td>
      <button type="button" aria-label={label} onClick={() => confirm(question) && onConfirm()}>
        Revoke
      </button>
    </td>
  );
}
