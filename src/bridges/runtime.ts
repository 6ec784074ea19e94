import { ApiError } from "../http/errors.ts";
import type { AccountRecord } from "../store/records.ts";
import type { InboundEvent, NetworkClient, NetworkConnector } from "./connector.ts";

/**
 * Holds the registered connectors and one live client per account, and routes the events clients emit to the
 * handler the app installs (the message service's `ingest`).
 */
export class BridgeRuntime {
  private readonly connectors = new Map<string, NetworkConnector>();
  private readonly clients = new Map<string, NetworkClient>();
  onEvent: (account: AccountRecord, event: InboundEvent) => Promise<void> = async () => undefined;

  register(connector: NetworkConnector) {
    this.connectors.set(connector.network, connector);
  }

  connector(network: string): NetworkConnector | undefined {
    return this.connectors.get(network);
  }

  /** Loads and connects a client for the account (idempotent). */
  async attach(account: AccountRecord): Promise<NetworkClient | undefined> {
    const existing = this.clients.get(account.accountID);
    if (existing) return existing;
    const connector = this.connectors.get(account.network);
    if (!connector) return undefined;
    const client = connector.loadAccount(account, { emit: (event) => this.onEvent(account, event) });
    this.clients.set(account.accountID, client);
    await client.connect();
    return client;
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
