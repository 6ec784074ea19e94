import type { ConnectorHost, NetworkClient, NetworkConnector } from "../../bridges/connector.ts";
import type { BridgeFacts, LoginCapable } from "../../bridges/login.ts";
import type { AccountRecord } from "../../store/records.ts";
import { DesktopApiClient } from "./client.ts";
import { UpstreamLink, type OpenSocket } from "./link.ts";
import { createDesktopApiLogin, desktopApiFlows } from "./login.ts";
import { readState } from "./state.ts";

export type { OpenSocket, UpstreamSocket } from "./link.ts";

export interface DesktopApiOptions {
  /** Opens the upstream's /v1/ws with a token header (the daemon: `ws`; the Worker: a fetch upgrade). */
  openSocket?: OpenSocket;
  /** Messages of each chat a first load reads (default 50; older ones load when a client pages back). */
  firstBackfill?: number;
}

/**
 * Another Desktop API server as a network (bridge `local-desktop-api`): the desktop app's own API, or another
 * inboxd. Each of its accounts becomes an account here, all under one login, over the official SDK and the
 * upstream's /v1/ws. `self` is this inboxd's instance ID, so that a login that would loop is refused.
 */
export class DesktopApiConnector implements NetworkConnector, LoginCapable {
  readonly network = "desktop-api";
  readonly displayName = "Desktop API server";
  readonly bridge: BridgeFacts = { maxAccounts: 50, capabilities: desktopApiCapabilities };
  private readonly links = new Map<string, UpstreamLink>();

  constructor(
    private readonly self: () => string,
    private readonly options: DesktopApiOptions = {},
  ) {}

  loadAccount(account: AccountRecord, host: ConnectorHost): NetworkClient {
    let link = this.links.get(account.loginID);
    if (!link) {
      const created = new UpstreamLink(account.loginID, readState(account.state), {
        openSocket: this.options.openSocket,
        self: this.self,
        firstBackfill: this.options.firstBackfill ?? 50,
        now: Date.now,
        onIdle: () => {
          if (this.links.get(account.loginID) === created) this.links.delete(account.loginID);
        },
      });
      this.links.set(account.loginID, created);
      link = created;
    }
    return new DesktopApiClient(account, host, link);
  }

  loginFlows() {
    return desktopApiFlows;
  }

  createLogin(flowID: string, reauth?: AccountRecord[]) {
    return createDesktopApiLogin(flowID, this.self, reauth);
  }
}

/** ProvisioningCapabilities: what the upstream's accounts allow is theirs to say; here, chats are started by contact. */
const desktopApiCapabilities = {
  group_creation: {},
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
