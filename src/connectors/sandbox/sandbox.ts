import {
  NetworkError,
  type ChatCapabilities,
  type ConnectorHost,
  type NetworkChat,
  type NetworkClient,
  type NetworkConnector,
  type OutgoingMessage,
  type SendReceipt,
} from "../../bridges/connector.ts";
import type { User } from "../../schema/wire.ts";
import type { AccountRecord } from "../../store/records.ts";
import { person, prng } from "./corpus.ts";

/**
 * The built-in simulated network. Each account has a deterministic address book (derived from its seed) and an
 * "Echo" contact that answers every message in its direct chat 20–60 ms later, so inbound traffic can be tested
 * without a real server. Nothing leaves the process.
 */
export const SANDBOX_DOMAIN = "sandbox.invalid";
export const ECHO_ID = `@echo:${SANDBOX_DOMAIN}`;
export const echoUser: User = { id: ECHO_ID, fullName: "Echo", username: "echo" };

export interface SandboxState {
  seed: number;
  contacts: number;
}

export function sandboxContacts(state: SandboxState): User[] {
  const random = prng(state.seed);
  const users: User[] = [echoUser];
  for (let i = 0; i < state.contacts; i++) {
    const p = person(random, i);
    users.push({
      id: `@${p.username}:${SANDBOX_DOMAIN}`,
      fullName: p.fullName,
      username: p.username,
      phoneNumber: `+1555${String(state.seed % 1000).padStart(3, "0")}${String(i).padStart(4, "0")}`,
      email: `${p.username}@${SANDBOX_DOMAIN}`,
    });
  }
  return users;
}

export const directChatID = (userID: string) => `dm:${userID}`;

const everything: ChatCapabilities = {
  edits: true,
  deletes: true,
  reactions: true,
  replies: true,
  attachments: true,
  multipleReactions: true,
};

export class SandboxConnector implements NetworkConnector {
  readonly network = "sandbox";
  readonly displayName = "Sandbox";

  loadAccount(account: AccountRecord, host: ConnectorHost): NetworkClient {
    return new SandboxClient(account, host);
  }
}

class SandboxClient implements NetworkClient {
  private contacts?: User[];
  private counter = 0;
  private connected = false;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    private readonly account: AccountRecord,
    private readonly host: ConnectorHost,
  ) {}

  private addressBook(): User[] {
    return (this.contacts ??= sandboxContacts(this.account.state as unknown as SandboxState));
  }

  async connect() {
    this.connected = true;
  }

  async disconnect() {
    this.connected = false;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  capabilities(): ChatCapabilities {
    return everything;
  }

  async send(networkChatID: string, message: OutgoingMessage): Promise<SendReceipt> {
    if (!this.connected) throw new NetworkError("unavailable", "sandbox account is not connected");
    const receipt = { networkMessageID: `sbx-${Date.now().toString(36)}-${(this.counter++).toString(36)}`, timestamp: Date.now() };
    if (networkChatID === directChatID(ECHO_ID)) this.echo(networkChatID, receipt.networkMessageID, message);
    return receipt;
  }

  private echo(networkChatID: string, replyTo: string, message: OutgoingMessage) {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const text = message.text ?? (message.attachment ? `[${message.attachment.fileName ?? "attachment"}]` : "");
      void this.host
        .emit({
          type: "message",
          networkChatID,
          message: {
            networkMessageID: `sbx-echo-${Date.now().toString(36)}-${(this.counter++).toString(36)}`,
            senderID: ECHO_ID,
            senderName: echoUser.fullName,
            timestamp: Date.now(),
            text: `Echo: ${text}`,
            replyTo,
          },
        })
        .catch(() => undefined);
    }, 20 + Math.floor(Math.random() * 40));
    this.timers.add(timer);
  }

  async edit() {}
  async delete() {}
  async react() {}
  async unreact() {}
  async markRead() {}

  async createChat(request: { type: "single" | "group"; participantIDs: string[]; title?: string }): Promise<NetworkChat> {
    const book = this.addressBook();
    const participants = request.participantIDs.map((id) => {
      const user = book.find((u) => u.id === id);
      if (!user) throw new NetworkError("not_found", `no sandbox user ${id}`);
      return user;
    });
    const self = { ...this.account.user, isSelf: true };
    if (request.type === "single")
      return { networkChatID: directChatID(participants[0].id), type: "single", title: participants[0].fullName ?? participants[0].id, participants: [self, participants[0]] };
    return {
      networkChatID: `grp:${Date.now().toString(36)}-${(this.counter++).toString(36)}`,
      type: "group",
      title: request.title || participants.map((p) => p.fullName?.split(" ")[0]).join(", "),
      participants: [self, ...participants],
    };
  }

  async resolveIdentifier(user: Partial<User>): Promise<User | null> {
    const book = this.addressBook();
    const norm = (s?: string) => s?.trim().toLowerCase().replace(/^@/, "");
    return (
      book.find(
        (u) =>
          (user.id && u.id === user.id) ||
          (user.username && norm(u.username) === norm(user.username)) ||
          (user.phoneNumber && u.phoneNumber === user.phoneNumber.replace(/[^\d+]/g, "")) ||
          (user.email && norm(u.email) === norm(user.email)),
      ) ?? null
    );
  }

  async searchContacts(query: string): Promise<User[]> {
    const q = query.trim().toLowerCase();
    return this.addressBook().filter(
      (u) => u.id.toLowerCase() === q || [u.fullName, u.username, u.email, u.phoneNumber].some((f) => f?.toLowerCase().includes(q)),
    );
  }

  async listContacts(): Promise<User[]> {
    return this.addressBook();
  }
}
