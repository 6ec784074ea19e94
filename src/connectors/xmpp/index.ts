import type { ConnectorHost, NetworkClient, NetworkConnector } from "../../bridges/connector.ts";
import type { BridgeFacts, LoginCapable } from "../../bridges/login.ts";
import type { AccountRecord } from "../../store/records.ts";
import { FIRST_BACKFILL, XmppClient } from "./client.ts";
import type { XmppTransport } from "./connection.ts";
import { createXmppLogin, xmppFlows } from "./login.ts";

export interface XmppOptions {
  /** What the runtime adds to WebSocket (the daemon: TCP with STARTTLS). */
  transports?: readonly XmppTransport[];
  /** How many messages of each archive (the account's, each room's) a first connect reads. */
  firstBackfill?: number;
}

/**
 * XMPP (bridge `local-xmpp`): 1:1 chats and group chats (XEP-0045 rooms) of any standard server, with replies,
 * corrections, reactions, retractions, receipts, chat markers, carbons, archives and HTTP file upload. Over TCP with
 * STARTTLS on the daemon, or over WebSocket (RFC 7395) wherever a WebSocket URL is given (the only way in a Worker).
 */
export class XmppConnector implements NetworkConnector, LoginCapable {
  readonly network = "xmpp";
  readonly displayName = "XMPP";
  readonly bridge: BridgeFacts = { maxAccounts: 10, capabilities: xmppCapabilities };

  private readonly transports: readonly XmppTransport[];
  private readonly firstBackfill: number;

  constructor(options: XmppOptions = {}) {
    this.transports = options.transports ?? [];
    this.firstBackfill = options.firstBackfill ?? FIRST_BACKFILL;
  }

  loadAccount(account: AccountRecord, host: ConnectorHost): NetworkClient {
    return new XmppClient(account, host, { transports: this.transports, firstBackfill: this.firstBackfill });
  }

  loginFlows() {
    return xmppFlows;
  }

  createLogin(flowID: string, reauth?: AccountRecord[]) {
    return createXmppLogin(flowID, this.transports, reauth);
  }
}

/** ProvisioningCapabilities: a group is a new room with a name and invited members. */
const xmppCapabilities = {
  group_creation: {
    group: {
      type_description: "An XMPP group chat (a XEP-0045 room on your server's group chat service)",
      name: { allowed: true, required: false, max_length: 100 },
      participants: { allowed: true, required: true, min_length: 1, max_length: 100 },
      topic: { allowed: false },
      avatar: { allowed: false },
      disappear: { allowed: false },
      parent: { allowed: false },
      username: { allowed: false },
    },
  },
  resolve_identifier: {
    create_dm: true,
    lookup_phone: false,
    lookup_email: false,
    lookup_username: true,
    any_phone: false,
    contact_list: true,
    search: true,
  },
  image_pack_import: { supported: false },
};
