import {
  NetworkError,
  type ChatCapabilities,
  type ChatFlags,
  type ConnectorHost,
  type HistoryPage,
  type NetworkChat,
  type NetworkClient,
  type OutgoingMessage,
  type SendReceipt,
  type TypingState,
} from "../../bridges/connector.ts";
import type { AccountRecord } from "../../store/records.ts";
import type { LoginHosts } from "./bridged.ts";
import type { MatrixClient } from "./client.ts";

/**
 * The account of one network bridged into Matrix (bridged.ts). It has no connection of its own: the login's Matrix
 * account syncs and hands it this network's rooms; what a client does in them is done through that account.
 */
export class BridgedNetworkClient implements NetworkClient {
  readonly reportsStatus = true; // the Matrix account reports for the whole login
  private readonly network: string;

  constructor(
    private readonly account: AccountRecord,
    private readonly host: ConnectorHost,
    private readonly logins: LoginHosts,
    private readonly matrix: () => MatrixClient | undefined,
  ) {
    this.network = String(account.state?.bridgedNetwork ?? "");
  }

  private get via(): MatrixClient {
    const client = this.matrix();
    if (!client) throw new NetworkError("unavailable", "the Matrix account this network comes through is not running");
    return client;
  }

  async connect() {
    this.logins.join(this.account.loginID, this.network, this.host);
  }

  async disconnect() {
    this.logins.leave(this.account.loginID, this.network, this.host);
  }

  capabilities(chat: NetworkChat): ChatCapabilities {
    return this.via.capabilities(chat);
  }

  send(networkChatID: string, message: OutgoingMessage): Promise<SendReceipt> {
    return this.via.send(networkChatID, message);
  }

  edit(networkChatID: string, networkMessageID: string, text: string) {
    return this.via.edit(networkChatID, networkMessageID, text);
  }

  delete(networkChatID: string, networkMessageID: string) {
    return this.via.delete(networkChatID, networkMessageID);
  }

  react(networkChatID: string, networkMessageID: string, key: string) {
    return this.via.react(networkChatID, networkMessageID, key);
  }

  unreact(networkChatID: string, networkMessageID: string, key: string) {
    return this.via.unreact(networkChatID, networkMessageID, key);
  }

  markRead(networkChatID: string, networkMessageID: string) {
    return this.via.markRead(networkChatID, networkMessageID);
  }

  setTyping(networkChatID: string, state: TypingState) {
    return this.via.setTyping(networkChatID, state);
  }

  setChatFlags(networkChatID: string, flags: ChatFlags) {
    return this.via.setChatFlags(networkChatID, flags);
  }

  fetchHistory(
    networkChatID: string,
    before: { networkMessageID: string; timestamp: number },
    limit: number,
  ): Promise<HistoryPage> {
    return this.via.fetchHistory(networkChatID, before, limit);
  }
}
