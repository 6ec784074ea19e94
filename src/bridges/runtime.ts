import { ApiError } from "../errors.ts";
import type { AccountRecord } from "../store/records.ts";
import type { AccountRecords, InboundEvent, NetworkClient, NetworkConnector } from "./connector.ts";
import type { LoginResult } from "./login.ts";

/**
 * What the app does with what an account's client reports: the first step of the inbound path (src/app.ts wires
 * `emit` to services/ingest.ts). Each is the account's ConnectorHost method of the same name.
 */
export interface AccountReports {
  emit(account: AccountRecord, event: InboundEvent): Promise<void>;
  saveState(account: AccountRecord, state: Record<string, unknown>): Promise<void>;
  setLoginAccounts(account: AccountRecord, accounts: LoginResult["accounts"]): Promise<string[]>;
  records(account: AccountRecord): AccountRecords;
}

/** Holds the connectors and one live client per account, and hands what each client reports to `reports`. */
export class BridgeRuntime {
  private readonly registered = new Map<string, NetworkConnector>();
  private readonly clients = new Map<string, NetworkClient>();
  /** Connects under way (a first sync writes to the store): stop() waits for them, so none outlives the store. */
  private readonly connecting = new Set<Promise<void>>();

  constructor(
    connectors: NetworkConnector[],
    private readonly reports: AccountReports,
  ) {
    for (const connector of connectors) this.registered.set(connector.network, connector);
  }

  /** Loads and connects a client for the account (idempotent). */
  async attach(account: AccountRecord): Promise<NetworkClient | undefined> {
    const existing = this.clients.get(account.accountID);
    if (existing) return existing;
    const connector = this.registered.get(account.network);
    if (!connector) return undefined;
    const client = connector.loadAccount(account, {
      emit: (event) => this.reports.emit(account, event),
      saveState: (state) => this.reports.saveState(account, state),
      setLoginAccounts: (accounts) => this.reports.setLoginAccounts(account, accounts),
      records: this.reports.records(account),
    });
    this.clients.set(account.accountID, client);
    const connecting = client.connect();
    this.connecting.add(connecting);
    try {
      await connecting;
    } finally {
      this.connecting.delete(connecting);
    }
    return client;
  }

  /** Disconnects and forgets an account's client (removal, or before reconnecting it). */
  async detach(accountID: string): Promise<void> {
    const client = this.clients.get(accountID);
    this.clients.delete(accountID);
    await client?.disconnect();
  }

  clientsList(): NetworkClient[] {
    return [...this.clients.values()];
  }

  connectors(): NetworkConnector[] {
    return [...this.registered.values()];
  }

  /** The account's client if it is attached (no error: for what works without the network too). */
  attached(accountID: string): NetworkClient | undefined {
    return this.clients.get(accountID);
  }

  client(accountID: string): NetworkClient {
    const client = this.clients.get(accountID);
    if (!client)
      throw new ApiError(503, "ACCOUNT_UNAVAILABLE", `account ${accountID} is not connected`, undefined, {
        "retry-after": "5",
      });
    return client;
  }

  async stop(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((c) => c.disconnect()));
    await Promise.allSettled([...this.connecting]);
  }
}
