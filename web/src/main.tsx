import { render } from "preact";
import "./styles.css";
import { setSignedOutHandler } from "./api.ts";
import { finishSignIn, forgetCredentials, loadCredentials } from "./auth.ts";
import { App } from "./components/App.tsx";
import { SignIn } from "./components/SignIn.tsx";
import { stopLive } from "./live.ts";

/**
 * Boot: a return from the consent page is finished first (code → tokens); with credentials the inbox renders,
 * without them the sign-in screen, which starts the OAuth flow.
 */
async function boot() {
  const root = document.getElementById("app")!;
  let error: string | undefined;
  try {
    error = (await finishSignIn())?.error;
  } catch (failure) {
    error = failure instanceof Error ? failure.message : String(failure);
  }
  const showSignIn = (reason?: string) => {
    stopLive();
    render(<SignIn error={reason} />, root);
  };
  setSignedOutHandler(() => {
    forgetCredentials();
    showSignIn("Your session ended (the token was revoked or expired). Sign in again.");
  });
  if (loadCredentials() && !error) render(<App onSignOut={() => showSignIn()} />, root);
  else showSignIn(error);
}

void boot();
