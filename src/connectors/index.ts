import type { NetworkConnector } from "../bridges/connector.ts";
import type { AppOptions } from "../options.ts";
import { DesktopApiConnector } from "./desktop-api/index.ts";
import { MatrixConnector } from "./matrix/index.ts";
import { SandboxConnector } from "./sandbox/sandbox.ts";
import { XmppConnector } from "./xmpp/index.ts";

/**
 * The built-in networks, one line each: the sandbox (up to 10 accounts), a single-account variant of it that
 * behaves like networks bound to one phone or device and, like SMS, has no typing notifications, XMPP, Matrix, and
 * another Desktop API server (the desktop app, or another inboxd). `instanceID` is this store's identity, which the
 * desktop-api connector uses to refuse a login to itself.
 */
export function builtInConnectors(options: AppOptions, instanceID: () => string): NetworkConnector[] {
  return [
    new SandboxConnector({ qrDelayMs: options.sandboxQrDelayMs, echoDelayMs: options.sandboxEchoDelayMs }),
    new SandboxConnector({
      network: "sandbox-solo",
      displayName: "Sandbox (single account)",
      maxAccounts: 1,
      qrDelayMs: options.sandboxQrDelayMs,
      typing: false,
    }),
    new XmppConnector(options.xmpp),
    new MatrixConnector(options.matrix),
    new DesktopApiConnector(instanceID, options.desktopApi),
  ];
}
