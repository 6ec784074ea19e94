import { ApiError } from "../http/errors.ts";
import type { AccountRecord } from "../store/records.ts";
import type { InboundEvent, NetworkClient, NetworkConnector } from "./connector.ts";
import type { LoginResult } from "./login.ts";

/**
 * Holds the registered connectors and one live client per account, and routes the events clients emit to the
 * handler the app installs (the message service's `ingest`).
 */
export class BridgeRuntime {
  private readonly registered = new Map<string, NetworkConnector>();
  private readonly clients = new Map<string, NetworkClient>();
  onEvent: (account: AccountRecord, event: InboundEvent) => Promise<void> = async () => undefined;
  onSaveState: (account: AccountRecord, state: Record<string, unknown>) => Promise<void> = async () => undefined;
  onSetLoginAccounts: (account: AccountRecord, accounts: LoginResult["accounts"]) => Promise<void> = async () => undefined;

  register(connector: NetworkConnector) {
    this.registered.set(connector.network, connector);
  }

  /** Loads and connects a client for the account (idempotent). */
  async attach(account: AccountRecord): Promise<NetworkClient | undefined> {
    const existing = this.clients.get(account.accountID);
    if (existing) return existing;
    const connector = this.registered.get(account.network);
    if (!connector) return undefined;
    const client = connector.loadAccount(account, {
      emit: (event) => this.onEvent(account, event),
      saveState: (state) => this.onSaveState(account, state),
      setLoginAccounts: (accounts) => this.onSetLoginAccounts(account, accounts),
    });
    this.clients.set(account.accountID, client);
    await client.connect();
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
    if (!client) throw new ApiError(503, "ACCOUNT_UNAVAILABLE", `account ${accountID} is not connected`, undefined, { "retry-after": "5" });
    return client;
  }

  async stop(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((c) => c.disconnect()));
  }
}
