import { render } from "preact";
import "./styles.css";
import { setSignedOutHandler } from "./api.ts";
import { arrivedFromSignIn, finishSignIn, forgetCredentials, loadCredentials, startSignIn } from "./auth.ts";
import { App } from "./components/App.tsx";
import { SignIn } from "./components/SignIn.tsx";
import { stopLive } from "./live.ts";

/**
 * Boot: a return from the consent page is finished first (code → tokens); with credentials the inbox renders,
 * without them the sign-in screen, which starts the OAuth flow. A sign-in link's landing in a deployment of many
 * inboxes goes straight on to the consent page, unless the page holds a token of that inbox already (a grant it
 * holds for another inbox is ended once the new one is given, in finishSignIn).
 */
async function boot() {
  const root = document.getElementById("app")!;
  let error: string | undefined;
  try {
    const arrived = arrivedFromSignIn();
    error = (await finishSignIn())?.error;
    if (arrived && !error) return await startSignIn();
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
