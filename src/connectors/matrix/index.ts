import type { ConnectorHost, NetworkClient, NetworkConnector } from "../../bridges/connector.ts";
import type { BridgeFacts, LoginCapable } from "../../bridges/login.ts";
import type { AccountRecord } from "../../store/records.ts";
import { FIRST_BACKFILL, MatrixClient } from "./client.ts";
import { createMatrixLogin, matrixFlows } from "./login.ts";
import { LoginHosts } from "./bridged.ts";
import { BridgedNetworkClient } from "./bridged-client.ts";
import type { LoadCrypto } from "./crypto/machine.ts";

export interface MatrixOptions {
  /** How many messages of each room a first sync loads (default 50; older ones load when a client pages back). */
  firstBackfill?: number;
  /**
   * Loads matrix-sdk-crypto (the runtime's part: the wasm is loaded differently on Node and in workerd). Without it
   * encrypted rooms are shown but not read.
   */
  loadCrypto?: LoadCrypto;
  /** The largest file sent to or read from an encrypted room (default 50 MiB: see encrypted-media.ts). */
  maxEncryptedMediaBytes?: number;
}

/**
 * Matrix (bridge `local-matrix`): the rooms of any homeserver account — and through it every network a Matrix bridge
 * puppets — over the Client-Server API on plain fetch, so the daemon and a Durable Object run it alike.
 */
export class MatrixConnector implements NetworkConnector, LoginCapable {
  readonly network = "matrix";
  readonly displayName = "Matrix";
  /** Accounts of all logins together, bridged networks' included (a Matrix account may carry a dozen). */
  readonly bridge: BridgeFacts = { maxAccounts: 50, capabilities: matrixCapabilities };
  private readonly firstBackfill: number;
  private readonly loadCrypto?: LoadCrypto;
  private readonly maxEncryptedMediaBytes?: number;
  /** Each login's Matrix account, through which its bridged networks' accounts work (bridged.ts). */
  private readonly matrixClients = new Map<string, MatrixClient>();
  private readonly logins = new LoginHosts();

  constructor(options: MatrixOptions = {}) {
    this.firstBackfill = options.firstBackfill ?? FIRST_BACKFILL;
    this.loadCrypto = options.loadCrypto;
    this.maxEncryptedMediaBytes = options.maxEncryptedMediaBytes;
  }

  loadAccount(account: AccountRecord, host: ConnectorHost): NetworkClient {
    if (account.state?.bridgedNetwork)
      return new BridgedNetworkClient(account, host, this.logins, () => this.matrixClients.get(account.loginID));
    const client = new MatrixClient(account, host, {
      firstBackfill: this.firstBackfill,
      loadCrypto: this.loadCrypto,
      logins: this.logins,
      maxEncryptedMediaBytes: this.maxEncryptedMediaBytes,
    });
    this.matrixClients.set(account.loginID, client);
    return client;
  }

  loginFlows() {
    return matrixFlows;
  }

  createLogin(flowID: string, reauth?: AccountRecord[], _client?: unknown, signedIn?: AccountRecord[]) {
    const live = reauth?.[0] ? this.matrixClients.get(reauth[0].loginID) : undefined;
    return createMatrixLogin(flowID, reauth, signedIn, {
      loadCrypto: this.loadCrypto,
      liveCrypto: (deviceID) => live?.liveCrypto(deviceID),
    });
  }
}

/** ProvisioningCapabilities: a group is a new private room with a name and invited members. */
const matrixCapabilities = {
  group_creation: {
    group: {
      type_description: "A Matrix room (private, invite only)",
      name: { allowed: true, required: false, max_length: 255 },
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
