import { useEffect, useRef, useState } from "preact/hooks";
import { call, enc, get } from "../api.ts";
import type { Bridge } from "./Accounts.tsx";
import { errorText } from "./bits.tsx";
import { Qr } from "./Qr.tsx";

interface Flow {
  id: string;
  name: string;
  description?: string;
}

type Step =
  | {
      type: "user_input";
      stepID: string;
      instructions?: string;
      fields: {
        id: string;
        label?: string;
        type?: string;
        placeholder?: string;
        initialValue?: string;
        optional?: boolean;
      }[];
    }
  | {
      type: "cookies";
      stepID: string;
      instructions?: string;
      url: string;
      expectedFinalURLRegex?: string;
      fields: { id: string; name: string; type: "cookie" | "header" | "local_storage" }[];
    }
  | {
      type: "display_and_wait";
      stepID: string;
      instructions?: string;
      display: { type: "qr" | "code"; data: string } | { type: "emoji"; imageURL: string } | { type: "nothing" };
    }
  | { type: "client_http" | "webauthn"; stepID: string; instructions?: string };

interface LoginSession {
  loginSessionID: string;
  status: "waiting_for_input" | "waiting_for_cookies" | "waiting_for_display" | "complete" | "cancelled" | "failed";
  currentStep?: Step;
  error?: { code: string; message: string };
  account?: { accountID: string; user: { fullName?: string; username?: string; id: string } };
}

const inputType = (type?: string) =>
  type === "password" ? "password" : type === "email" ? "email" : type === "tel" ? "tel" : "text";

/** What a password manager or the phone's keyboard may offer for a field: a user name, the account's password, a one-time code; nothing for secrets such as access tokens. */
function autofill(id: string, type?: string): { autoComplete: string; inputMode?: "numeric" } {
  if (type === "username") return { autoComplete: "username" };
  if (type === "email") return { autoComplete: "email" };
  if (type === "tel") return { autoComplete: "tel" };
  if (type === "2fa_code") return { autoComplete: "one-time-code", inputMode: "numeric" };
  if (type === "password" && id === "password") return { autoComplete: "current-password" };
  return { autoComplete: "off" };
}

/**
 * A login session, step by step, rendering every step type of the contract: fields to fill (`user_input`),
 * cookies to hand over (`cookies`), something to scan or compare while the network waits (`display_and_wait`: a
 * QR code, a code, emoji), and the end (`complete`, or why it failed). `client_http` and `webauthn` steps need
 * the device's own browser session and are explained rather than run.
 */
export function LoginWizard({ bridge, accountID, onDone }: { bridge: Bridge; accountID?: string; onDone(): void }) {
  const [flows, setFlows] = useState<Flow[]>();
  const [session, setSession] = useState<LoginSession>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const base = `/v1/bridges/${enc(bridge.id)}/login-sessions`;
  const alive = useRef(true);

  useEffect(() => {
    alive.current = true;
    get<{ items: Flow[] } | Flow[]>(`/v1/bridges/${enc(bridge.id)}/login-flows`).then(
      (r) => setFlows(Array.isArray(r) ? r : r.items),
      (e) => setError(errorText(e)),
    );
    return () => {
      alive.current = false;
    };
  }, [bridge.id]);

  // display_and_wait: keep waiting (each request returns when the login moves on, or after a while unchanged).
  useEffect(() => {
    const step = session?.currentStep;
    if (!session || step?.type !== "display_and_wait") return;
    let stop = false;
    (async () => {
      while (!stop && alive.current) {
        try {
          const next = await call<LoginSession>(
            "POST",
            `${base}/${enc(session.loginSessionID)}/steps/${enc(step.stepID)}`,
            { type: "display_and_wait" },
          );
          if (stop || !alive.current) return;
          if (next.status !== session.status || next.currentStep?.stepID !== step.stepID) return setSession(next);
        } catch (e) {
          // The login moved on elsewhere (the phone confirmed, another tab answered): show where it is now.
          const now = await get<LoginSession>(`${base}/${enc(session.loginSessionID)}`).catch(() => undefined);
          if (stop) return;
          if (now && (now.status !== session.status || now.currentStep?.stepID !== step.stepID)) setSession(now);
          else setError(errorText(e));
          return;
        }
      }
    })();
    return () => {
      stop = true;
    };
  }, [session?.loginSessionID, session?.currentStep?.stepID, session?.status]);

  const start = async (flow: Flow) => {
    setBusy(true);
    setError(undefined);
    try {
      setSession(await call<LoginSession>("POST", base, { flowID: flow.id, ...(accountID ? { accountID } : {}) }));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const submit = async (step: Step, fields: Record<string, string>, lastURL?: string) => {
    if (!session) return;
    setBusy(true);
    setError(undefined);
    try {
      setSession(
        await call<LoginSession>("POST", `${base}/${enc(session.loginSessionID)}/steps/${enc(step.stepID)}`, {
          type: step.type,
          fields,
          ...(lastURL ? { lastURL } : {}),
        }),
      );
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const cancel = async () => {
    if (session && !["complete", "failed", "cancelled"].includes(session.status))
      await call("DELETE", `${base}/${enc(session.loginSessionID)}`).catch(() => undefined);
    onDone();
  };

  const step = session?.currentStep;
  return (
    <section
      class="card wizard"
      role="dialog"
      aria-labelledby="wizard-title"
      data-login-session={session?.loginSessionID}
      data-status={session?.status}
    >
      <h2 id="wizard-title">
        {accountID ? "Reconnect" : "Connect"} {bridge.displayName}
      </h2>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {!session && (
        <>
          <p>Choose how to sign in:</p>
          {!flows && <p class="muted">Loading…</p>}
          <ul class="flows">
            {flows?.map((flow) => (
              <li key={flow.id}>
                <button type="button" onClick={() => start(flow)} disabled={busy}>
                  {flow.name}
                </button>
                {flow.description && <span class="muted"> {flow.description}</span>}
              </li>
            ))}
          </ul>
        </>
      )}
      {step?.instructions && <p>{step.instructions}</p>}
      {step && (step.type === "user_input" || step.type === "cookies") && (
        <StepForm step={step} busy={busy} onSubmit={(fields, lastURL) => submit(step, fields, lastURL)} />
      )}
      {step?.type === "display_and_wait" && (
        <div class="display" aria-live="polite">
          {step.display.type === "qr" && <Qr data={step.display.data} label="QR code to scan with the network's app" />}
          {step.display.type === "code" && <p class="code">{step.display.data}</p>}
          {step.display.type === "emoji" && <img src={step.display.imageURL} alt="Emoji to compare" />}
          <p class="muted">Waiting for the network…</p>
        </div>
      )}
      {(step?.type === "client_http" || step?.type === "webauthn") && (
        <p>
          This step ({step.type}) needs the network's own app or a passkey on this device; the web inbox cannot run it
          yet. Use an API client for this network.
        </p>
      )}
      {session?.status === "complete" && (
        <p role="status" class="done">
          Connected
          {session.account
            ? ` as ${session.account.user.fullName ?? session.account.user.username ?? session.account.user.id}`
            : ""}
          .
        </p>
      )}
      {session?.status === "failed" && (
        <p class="error" role="alert">
          The login failed: {session.error?.message ?? "no reason given"}
        </p>
      )}
      <div class="wizard-actions">
        {session?.status === "failed" && (
          <button type="button" onClick={() => setSession(undefined)}>
            Try again
          </button>
        )}
        <button type="button" onClick={cancel}>
          {session?.status === "complete" ? "Done" : "Cancel"}
        </button>
      </div>
    </section>
  );
}

function StepForm({
  step,
  busy,
  onSubmit,
}: {
  step: Extract<Step, { type: "user_input" | "cookies" }>;
  busy: boolean;
  onSubmit(fields: Record<string, string>, lastURL?: string): void;
}) {
  // A cookies step with nothing to copy that names where the browser ends up (a sign-in that redirects back, such
  // as an OAuth consent) asks for that address: a web view would catch it itself, a person pastes it from the
  // address bar.
  const landing = step.type === "cookies" && step.fields.length === 0 && step.expectedFinalURLRegex !== undefined;
  const [lastURL, setLastURL] = useState("");
  const fields = step.fields.map((f) => ({
    id: f.id,
    label:
      "name" in f
        ? `${f.name} (${f.type === "header" ? "header" : f.type === "cookie" ? "cookie" : "local storage"})`
        : (f.label ?? f.id),
    type: "type" in f && step.type === "user_input" ? inputType(f.type) : "text",
    autofill: step.type === "user_input" && "type" in f ? autofill(f.id, f.type) : { autoComplete: "off" },
    placeholder: "placeholder" in f ? f.placeholder : undefined,
    initial: "initialValue" in f ? f.initialValue : undefined,
    optional: "optional" in f ? f.optional : false,
  }));
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(fields.map((f) => [f.id, f.initial ?? ""])),
  );
  return (
    <form
      key={step.stepID}
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit(values, landing ? lastURL : undefined);
      }}
    >
      {landing && (
        <>
          <p>
            Open{" "}
            <a href={step.url} target="_blank" rel="noreferrer noopener">
              the consent page
            </a>{" "}
            in a new tab and approve there. Then paste here the address the tab lands on.
          </p>
          <label>
            <span>Address after approving</span>
            <input
              type="url"
              name="lastURL"
              required
              autoFocus
              autoComplete="off"
              spellcheck={false}
              value={lastURL}
              onInput={(e) => setLastURL(e.currentTarget.value)}
            />
          </label>
        </>
      )}
      {step.type === "cookies" && !landing && (
        <p>
          Sign in at{" "}
          <a href={step.url} target="_blank" rel="noreferrer noopener">
            {step.url}
          </a>
          , then copy these values from your browser's developer tools:
        </p>
      )}
      {fields.map((f, i) => (
        <label key={f.id}>
          <span>
            {f.label}
            {f.optional && <span class="muted"> (optional)</span>}
          </span>
          <input
            type={f.type}
            name={f.id}
            required={!f.optional}
            placeholder={f.placeholder}
            autoFocus={i === 0}
            {...f.autofill}
            autoCapitalize="off"
            spellcheck={false}
            value={values[f.id]}
            onInput={(e) => setValues({ ...values, [f.id]: e.currentTarget.value })}
          />
        </label>
      ))}
      <button type="submit" class="primary" disabled={busy}>
        {busy ? "…" : "Continue"}
      </button>
    </form>
  );
}
