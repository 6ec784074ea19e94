import { NetworkError } from "../../bridges/connector.ts";
import type { LoginFlow, LoginProcess, LoginStep, StepSubmission } from "../../bridges/login.ts";
import type { AccountRecord } from "../../store/records.ts";
import { isLoopback, openConnection, type XmppEndpoint, type XmppTransport } from "./connection.ts";
import { newMediaKey } from "./media.ts";
import { rosterUser } from "./roster.ts";
import type { ScramKeys } from "./scram.ts";
import type { XmppState } from "./state.ts";

export const xmppFlows: LoginFlow[] = [
  {
    id: "password",
    name: "JID and password",
    description:
      "Sign in with your XMPP address (name@server) and password. The password is checked by the server and not kept.",
  },
];

const CREDENTIALS_STEP = "xmpp.password.credentials";
/** A bare JID: local part and domain (the characters RFC 7622 forbids, and resource-separating slashes, refused). */
export const JID = /^([^@\s/"&'<>:]+)@([^@\s/"&'<>]+)$/;

/**
 * The login: one user_input step. The JID and password are checked by signing in; what is kept afterwards is the
 * SCRAM keys that sign-in derived (scram.ts), never the password, unless the server offers nothing but PLAIN.
 * Advanced fields choose the server when it cannot be derived from the JID's domain.
 */
export function createXmppLogin(
  flowID: string,
  transports: readonly XmppTransport[],
  reauth?: AccountRecord[],
): LoginProcess {
  if (flowID !== "password") throw new NetworkError("not_found", `XMPP has no login flow ${flowID}`);
  const previous = reauth?.[0]?.state as Partial<XmppState> | undefined;
  return {
    async start(): Promise<LoginStep> {
      return {
        type: "user_input",
        stepID: CREDENTIALS_STEP,
        instructions:
          "Sign in to your XMPP account. Leave the advanced fields empty to connect to the server of your address on port 5222.",
        fields: [
          {
            id: "jid",
            label: "XMPP address (JID)",
            type: "username",
            placeholder: "alice@example.org",
            ...(previous?.jid ? { initialValue: previous.jid } : {}),
          },
          { id: "password", label: "Password", type: "password" },
          {
            id: "host",
            label: "Server host (advanced)",
            type: "text",
            placeholder: "xmpp.example.org",
            optional: true,
          },
          { id: "port", label: "Server port (advanced)", type: "text", placeholder: "5222", optional: true },
          {
            id: "websocketURL",
            label: "WebSocket URL (advanced, instead of host and port)",
            type: "text",
            placeholder: "wss://example.org/xmpp-websocket",
            optional: true,
          },
          {
            id: "allowInsecure",
            label: 'Allow an unencrypted connection (advanced: type "yes"; for servers on a network you trust)',
            type: "text",
            optional: true,
          },
        ],
      };
    },
    async submit(_step: LoginStep, submission: StepSubmission): Promise<LoginStep> {
      const f = submission.fields;
      const match = JID.exec((f.jid ?? "").trim().toLowerCase());
      if (!match) throw new NetworkError("rejected", "the XMPP address must look like name@server", "invalid_jid");
      if (!f.password) throw new NetworkError("rejected", "a password is required", "invalid_credentials");
      const jid = match[0];
      const endpoint = endpointFrom(f, match[2]);
      const resource =
        typeof previous?.resource === "string" ? previous.resource : `inboxd-${crypto.randomUUID().slice(0, 8)}`;
      let keys: ScramKeys | undefined;
      const xmpp = await openConnection({
        endpoint,
        username: match[1],
        resource,
        secret: { password: f.password },
        transports,
        onKeys: (k) => (keys = k),
      });
      await xmpp.stop().catch(() => undefined);
      const user = { ...rosterUser(jid), isSelf: true };
      const state: XmppState = {
        jid,
        endpoint,
        secret: keys ? { keys } : { password: f.password },
        resource,
        mediaKey: typeof previous?.mediaKey === "string" ? previous.mediaKey : newMediaKey(),
        archive: { own: previous?.archive?.own, rooms: { ...previous?.archive?.rooms } },
        rooms: { ...previous?.rooms },
      };
      return {
        type: "complete",
        stepID: "xmpp.complete",
        instructions: `Signed in as ${jid}.`,
        result: {
          remoteID: jid,
          user,
          accounts: [{ remoteID: jid, user, networkName: "XMPP", state: state as unknown as Record<string, unknown> }],
        },
      };
    },
    cancel() {},
  };
}

function endpointFrom(fields: Record<string, string>, domain: string): XmppEndpoint {
  const allowInsecure = /^(yes|true|1)$/i.test(fields.allowInsecure?.trim() ?? "");
  const ws = fields.websocketURL?.trim();
  if (ws) {
    if (!/^wss?:\/\//i.test(ws))
      throw new NetworkError("rejected", "the WebSocket URL must start with ws:// or wss://", "invalid_server");
    if (/^ws:/i.test(ws) && !allowInsecure && !isLoopback(ws))
      throw new NetworkError(
        "rejected",
        "a ws:// URL is unencrypted: use wss://, or allow an unencrypted connection",
        "insecure_connection",
      );
    return { service: ws, domain, ...(allowInsecure ? { allowInsecure } : {}) };
  }
  const host = fields.host?.trim() || domain;
  const port = fields.port?.trim() || "5222";
  if (!/^[a-z0-9.-]+$|^\[[0-9a-f:]+\]$/i.test(host))
    throw new NetworkError("rejected", `${host} is not a host name or address`, "invalid_server");
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    throw new NetworkError("rejected", `${port} is not a port number`, "invalid_server");
  return { service: `xmpp://${host}:${port}`, domain, ...(allowInsecure ? { allowInsecure } : {}) };
}
