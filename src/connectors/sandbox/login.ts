import { NetworkError } from "../../bridges/connector.ts";
import type { LoginFlow, LoginProcess, LoginResult, LoginStep, StepSubmission } from "../../bridges/login.ts";
import type { AccountRecord } from "../../store/records.ts";
import { SANDBOX_DOMAIN, type SandboxState } from "./contacts.ts";

/**
 * The sandbox's three login flows, which between them use every step type:
 * - password: user_input (username + password) → user_input (second factor) → complete. The password is
 *   "sandbox" and the code "123456"; anything else fails the session cleanly.
 * - qr: display_and_wait with a QR code; completes when the client confirms (`fields.confirm = "true"`) or on its
 *   own after `qrDelayMs`.
 * - cookies: a cookies step; a session cookie `sbx_<name>` signs in as <name> and yields two accounts (two
 *   workspaces) under one login.
 */
export const SANDBOX_PASSWORD = "sandbox";
export const SANDBOX_CODE = "123456";

export const sandboxFlows: LoginFlow[] = [
  {
    id: "password",
    name: "Username and password",
    description: 'Sign in with a username, the password "sandbox" and the code 123456.',
  },
  { id: "qr", name: "QR code", description: "Scan a QR code (confirm it, or wait a moment)." },
  {
    id: "cookies",
    name: "Browser cookies",
    description: "Sign in in a browser and hand over the session cookie (sbx_<name>).",
  },
];

export function createSandboxLogin(
  flowID: string,
  options: { qrDelayMs: number; reauth?: AccountRecord[] },
): LoginProcess {
  let cancelled = false;
  const identity = (name: string, workspaces = 1): LoginResult => {
    const handle =
      name
        .trim()
        .toLowerCase()
        .replace(/[^a-z0-9._-]/g, "") || "user";
    const user = {
      id: `@${handle}:${SANDBOX_DOMAIN}`,
      username: handle,
      fullName: handle.charAt(0).toUpperCase() + handle.slice(1),
      isSelf: true,
    };
    const accounts = Array.from({ length: workspaces }, (_, i) => {
      const state: SandboxState & { synced: boolean } = { seed: hash(`${handle}/${i}`), contacts: 40, synced: false };
      return {
        remoteID: workspaces > 1 ? `${handle}/workspace-${i + 1}` : handle,
        user,
        state: state as unknown as Record<string, unknown>,
      };
    });
    return { remoteID: handle, user, accounts };
  };
  const complete = (result: LoginResult): LoginStep => ({ type: "complete", stepID: "sandbox.complete", result });
  const reject = (message: string): never => {
    throw new NetworkError("rejected", message);
  };

  if (flowID === "password") {
    let username = "";
    return {
      async start() {
        return {
          type: "user_input",
          stepID: "sandbox.password.credentials",
          instructions: "Sign in to the sandbox network.",
          fields: [
            { id: "username", label: "Username", type: "username", placeholder: "alice" },
            { id: "password", label: "Password", type: "password" },
          ],
        };
      },
      async submit(step: LoginStep, submission: StepSubmission) {
        if (step.stepID === "sandbox.password.credentials") {
          username = submission.fields.username?.trim() ?? "";
          if (!username) reject("a username is required");
          if (submission.fields.password !== SANDBOX_PASSWORD) reject("wrong username or password");
          return {
            type: "user_input",
            stepID: "sandbox.password.code",
            instructions: "Enter the code from your authenticator.",
            fields: [{ id: "code", label: "Code", type: "2fa_code", placeholder: "123456" }],
          };
        }
        if (submission.fields.code?.trim() !== SANDBOX_CODE) reject("wrong second-factor code");
        return complete(identity(username));
      },
      cancel() {},
    };
  }
  if (flowID === "qr") {
    const who = options.reauth?.[0]?.user.username ?? `qr${Math.floor(Math.random() * 1e6)}`;
    const started = Date.now();
    return {
      async start() {
        return {
          type: "display_and_wait",
          stepID: "sandbox.qr",
          instructions: "Scan this code with the sandbox app.",
          display: { type: "qr", data: `sandbox://login/${crypto.randomUUID()}` },
        };
      },
      async submit() {
        return reject("a QR step is confirmed by waiting on it");
      },
      async wait(step: LoginStep, submission: StepSubmission, signal: AbortSignal) {
        if (submission.fields.confirm === "true") return complete(identity(who));
        const remaining = options.qrDelayMs - (Date.now() - started);
        const done = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), Math.max(0, remaining));
          signal.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve(false);
          });
        });
        if (cancelled) return reject("cancelled");
        return done ? complete(identity(who)) : step;
      },
      cancel() {
        cancelled = true;
      },
    };
  }
  if (flowID === "cookies") {
    return {
      async start() {
        return {
          type: "cookies",
          stepID: "sandbox.cookies",
          instructions: "Sign in, then hand over the session cookie.",
          url: `https://${SANDBOX_DOMAIN}/login`,
          fields: [
            { id: "session", name: "sbx_session", type: "cookie" },
            { id: "csrf", name: "X-Sandbox-CSRF", type: "header" },
          ],
          expectedFinalURLRegex: `^https://${SANDBOX_DOMAIN.replace(/\./g, "\\.")}/app`,
        };
      },
      async submit(_step: LoginStep, submission: StepSubmission) {
        const session = submission.fields.session ?? "";
        if (!/^sbx_[a-z0-9._-]+$/i.test(session)) reject("the session cookie is missing or not a sandbox session");
        return complete(identity(session.slice(4), 2));
      },
      cancel() {},
    };
  }
  throw new NetworkError("not_found", `the sandbox has no login flow ${flowID}`);
}

function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
