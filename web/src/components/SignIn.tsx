import { useState } from "preact/hooks";
import { startSignIn } from "../auth.ts";

/** Before the page has a token: one button into the OAuth flow (sign in as the owner, then approve this page). */
export function SignIn({ error }: { error?: string }) {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string>();
  const go = async () => {
    setBusy(true);
    try {
      await startSignIn();
    } catch (e) {
      setFailure(e instanceof Error ? e.message : String(e));
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <div class="card">
        <h1>inboxd</h1>
        <p>Your chats from every network, served by your own inboxd.</p>
        {(failure ?? error) && (
          <p class="error" role="alert">
            {failure ?? error}
          </p>
        )}
        <button type="button" class="primary" onClick={go} disabled={busy}>
          {busy ? "Opening…" : "Sign in"}
        </button>
        <p class="muted">
          You approve this page like any app. On the daemon, <code>inboxd open</code> prints a link that signs your
          browser in; in the Worker, the sign-in page asks for the admin token.
        </p>
      </div>
    </main>
  );
}
