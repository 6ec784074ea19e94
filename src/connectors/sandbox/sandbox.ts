import {
  NetworkError,
  type ChatCapabilities,
  type ConnectorHost,
  type NetworkChat,
  type NetworkClient,
  type NetworkConnector,
  type NetworkMedia,
  type OutgoingFile,
  type OutgoingMessage,
  type SendReceipt,
  type TypingState,
} from "../../bridges/connector.ts";
import type { User } from "../../schema/wire.ts";
import type { AccountRecord } from "../../store/records.ts";
import type { BridgeFacts, LoginCapable } from "../../bridges/login.ts";
import { directChatID, ECHO_ID, echoUser, sandboxContacts, type SandboxState } from "./contacts.ts";
import { corpus, groupTitle, pick, prng } from "./corpus.ts";
import { createSandboxLogin, sandboxFlows } from "./login.ts";
import { sandboxMedia } from "./media.ts";
import { SandboxHistory } from "./history.ts";

const STATUSES: AccountRecord["status"][] = [
  "connected",
  "connecting",
  "backfilling",
  "connection_required",
  "reconnect_required",
  "attention_required",
  "disconnected",
  "disabled",
];

/**
 * The built-in simulated network. Each account has a deterministic address book (derived from its seed) and an
 * "Echo" contact that answers every message in its direct chat 20–60 ms later, so inbound traffic can be tested
 * without a real server. Echo is seen typing before it answers and stops once it has, and mirrors the typing
 * notifications sent to its chat, so both directions of typing can be tested too. Chats take a picture and a
 * disappearing-message timer, and record notify-anyway requests; `!settings` to Echo answers what the network has of
 * Echo's chat. Nothing leaves the process.
 */
const everything: ChatCapabilities = {
  edits: true,
  deletes: true,
  reactions: true,
  replies: true,
  attachments: true,
  multipleReactions: true,
};

export interface SandboxOptions {
  /** Network ID (bridge "local-<network>"), so that several sandbox bridges can coexist. */
  network?: string;
  displayName?: string;
  maxAccounts?: number;
  /** How long the QR flow waits before it completes on its own. */
  qrDelayMs?: number;
  /** Whether the network has typing notifications (default true); without them, like SMS, it neither sends nor shows any. */
  typing?: boolean;
  /** How long Echo takes to answer, in ms (default: 20–60, at random); benchmarks set it to time only the path. */
  echoDelayMs?: number;
}

/** How long Echo's `typing` holds without a new notice (networks repeat it every few seconds while typing goes on). */
export const ECHO_TYPING_TIMEOUT_MS = 6000;

/**
 * A chat's settings on the sandbox network: its picture (what arrived of it), its disappearing-message timer, and how
 * many times its participants were notified anyway (POST /v1/chats/{id}/notify-anyway).
 */
export interface SandboxChatSettings {
  picture?: { fileName?: string; mimeType?: string; bytes: number };
  messageExpirySeconds?: number;
  notifiedAnyway?: number;
}

export class SandboxConnector implements NetworkConnector, LoginCapable {
  readonly network: string;
  readonly displayName: string;
  readonly bridge: BridgeFacts;
  private readonly qrDelayMs: number;
  private readonly typing: boolean;
  private readonly echoDelayMs: number | undefined;

  constructor(options: SandboxOptions = {}) {
    this.network = options.network ?? "sandbox";
    this.displayName = options.displayName ?? "Sandbox";
    this.qrDelayMs = options.qrDelayMs ?? 1500;
    this.typing = options.typing ?? true;
    this.echoDelayMs = options.echoDelayMs;
    this.bridge = { maxAccounts: options.maxAccounts ?? 10, capabilities: sandboxCapabilities };
  }

  loadAccount(account: AccountRecord, host: ConnectorHost): NetworkClient {
    return new SandboxClient(account, host, this.typing, this.echoDelayMs);
  }

  loginFlows() {
    return sandboxFlows;
  }

  createLogin(flowID: string, reauth?: AccountRecord[]) {
    return createSandboxLogin(flowID, { qrDelayMs: this.qrDelayMs, reauth });
  }
}

/** ProvisioningCapabilities: what group creation accepts on the sandbox network. */
const sandboxCapabilities = {
  group_creation: {
    group: {
      type_description: "A sandbox group chat",
      name: { allowed: true, required: false, max_length: 100 },
      participants: { allowed: true, required: true, min_length: 1, max_length: 200 },
      topic: { allowed: true, max_length: 500 },
      avatar: { allowed: false },
      disappear: { allowed: false },
      parent: { allowed: false },
      username: { allowed: false },
    },
  },
  resolve_identifier: {
    create_dm: true,
    lookup_phone: true,
    lookup_email: true,
    lookup_username: true,
    any_phone: false,
    contact_list: true,
    search: true,
  },
  image_pack_import: { supported: false },
};

class SandboxClient implements NetworkClient {
  private contacts?: User[];
  private counter = 0;
  private connected = false;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  /** What the other parties have of this account's messages (see history.ts). */
  private readonly history = new SandboxHistory();
  /** The settings each chat has on the network (its picture, its timer), as `!settings` reports them. */
  private readonly settings = new Map<string, SandboxChatSettings>();

  /** Present only where the network has typing notifications: the core offers the feature by this method's presence. */
  readonly setTyping?: (networkChatID: string, state: TypingState) => Promise<void>;

  constructor(
    private readonly account: AccountRecord,
    private readonly host: ConnectorHost,
    private readonly typing: boolean,
    private readonly echoDelayMs?: number,
  ) {
    if (typing)
      this.setTyping = async (networkChatID, state) => {
        this.requireConnected();
        // Echo mirrors typing in its chat: the only way to see that a notice reached this network.
        if (networkChatID === directChatID(ECHO_ID)) await this.echoTyping(networkChatID, state);
      };
  }

  private addressBook(): User[] {
    return (this.contacts ??= sandboxContacts(this.account.state as unknown as SandboxState));
  }

  async connect() {
    this.connected = true;
    const state = this.account.state as unknown as SandboxState & { synced?: boolean };
    if (state.synced === false) await this.initialSync(state);
  }

  /**
   * A freshly logged-in account: report backfilling, deliver its first chats (Echo, a few direct chats and two
   * groups, each with a little history), then report connected. Seeded accounts arrive already synced.
   */
  private async initialSync(state: SandboxState & { synced?: boolean }) {
    await this.host.emit({ type: "status", status: "backfilling", statusText: "Fetching your chats" });
    const random = prng(state.seed ^ 0x5eed);
    const book = this.addressBook();
    const self = { ...this.account.user, isSelf: true };
    const text = corpus();
    const chats = [
      ...book.slice(0, 6).map((u) => ({
        networkChatID: directChatID(u.id),
        type: "single" as const,
        title: u.fullName ?? u.id,
        participants: [self, u],
      })),
      ...[0, 1].map((g) => {
        const members = book.slice(6 + g * 5, 11 + g * 5);
        return {
          networkChatID: `grp:initial-${g}`,
          type: "group" as const,
          title: groupTitle(random),
          participants: [self, ...members],
        };
      }),
    ];
    const start = Date.now() - 3 * 86_400_000;
    let n = 0;
    for (const chat of chats) {
      await this.host.emit({ type: "chat", chat });
      const others = chat.participants.filter((p) => !p.isSelf);
      for (let i = 0; i < 5; i++) {
        const mine = random() < 0.4;
        const sender = mine ? self : pick(random, others);
        await this.host.emit({
          type: "message",
          networkChatID: chat.networkChatID,
          message: {
            networkMessageID: `sbx-init-${chat.networkChatID}-${i}`,
            senderID: sender.id,
            senderName: sender.fullName,
            timestamp: start + n++ * 60_000,
            text: text.sentence(random),
            isSender: mine,
          },
        });
      }
    }
    await this.host.saveState({ ...state, synced: true });
    await this.host.emit({ type: "status", status: "connected" });
  }

  async disconnect() {
    this.connected = false;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  capabilities(): ChatCapabilities {
    return everything;
  }

  private requireConnected() {
    if (!this.connected) throw new NetworkError("unavailable", "sandbox account is not connected");
  }

  /** "Uploads" a file to the network: reads every byte, as a real connector would stream them out. */
  private async receive(file: OutgoingFile): Promise<number> {
    let received = 0;
    for await (const chunk of file.open() as unknown as AsyncIterable<Uint8Array>) received += chunk.length;
    if (file.info.fileSize !== undefined && received !== file.info.fileSize)
      throw new NetworkError(
        "rejected",
        `${file.info.fileName ?? "file"} arrived incomplete (${received} of ${file.info.fileSize} bytes)`,
      );
    return received;
  }

  async send(networkChatID: string, message: OutgoingMessage): Promise<SendReceipt> {
    this.requireConnected();
    if (message.attachment) await this.receive(message.attachment);
    const receipt = {
      networkMessageID: `sbx-${Date.now().toString(36)}-${(this.counter++).toString(36)}`,
      timestamp: Date.now(),
    };
    const report = this.report(networkChatID, message.text?.trim());
    this.history.record(
      networkChatID,
      receipt.networkMessageID,
      message.text ?? message.attachment?.info.fileName ?? "",
    );
    if (networkChatID !== directChatID(ECHO_ID)) return receipt;
    // "!status <state> [text]" to Echo makes the network report that account state (for trying reconnects).
    const command = /^!status\s+(\w+)\s*(.*)$/.exec(message.text ?? "");
    if (command && STATUSES.includes(command[1] as AccountRecord["status"])) {
      const status = command[1] as AccountRecord["status"];
      queueMicrotask(
        () =>
          void this.host.emit({ type: "status", status, statusText: command[2] || undefined }).catch(() => undefined),
      );
    } else this.echo(networkChatID, receipt.networkMessageID, report ? { text: report } : message);
    return receipt;
  }

  /**
   * What Echo answers a command with: `!history`, what it still has of the chat before it (history.ts);
   * `!settings`, the chat's settings on the network.
   */
  private report(networkChatID: string, command: string | undefined): string | undefined {
    if (command === "!history") return `history ${JSON.stringify(this.history.texts(networkChatID))}`;
    if (command === "!settings") return `settings ${JSON.stringify(this.settings.get(networkChatID) ?? {})}`;
    return undefined;
  }

  private echo(networkChatID: string, replyTo: string, message: OutgoingMessage) {
    const delay = this.echoDelayMs ?? 20 + Math.floor(Math.random() * 40);
    this.later(delay / 2, () => this.echoTyping(networkChatID, "typing"));
    this.later(delay, async () => {
      const text = message.text ?? (message.attachment ? `[${message.attachment.info.fileName ?? "attachment"}]` : "");
      await this.host.emit({
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
      });
      await this.echoTyping(networkChatID, "paused");
    });
  }

  private async echoTyping(networkChatID: string, state: TypingState) {
    if (!this.typing) return;
    await this.host.emit({
      type: "typing",
      networkChatID,
      senderID: ECHO_ID,
      state,
      ...(state === "typing" ? { timeoutMs: ECHO_TYPING_TIMEOUT_MS } : {}),
    });
  }

  /** Runs `work` after `ms`, unless the account disconnects first; like the network itself, it never throws at anyone. */
  private later(ms: number, work: () => Promise<void>) {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void work().catch(() => undefined);
    }, ms);
    this.timers.add(timer);
  }

  async setChatAvatar(networkChatID: string, image: OutgoingFile | null) {
    this.requireConnected();
    const picture = image
      ? { fileName: image.info.fileName, mimeType: image.info.mimeType, bytes: await this.receive(image) }
      : undefined;
    this.settings.set(networkChatID, { ...this.settings.get(networkChatID), picture });
  }

  async setMessageExpiry(networkChatID: string, seconds: number) {
    this.requireConnected();
    this.settings.set(networkChatID, { ...this.settings.get(networkChatID), messageExpirySeconds: seconds });
  }

  async notifyAnyway(networkChatID: string) {
    this.requireConnected();
    const settings = this.settings.get(networkChatID);
    this.settings.set(networkChatID, { ...settings, notifiedAnyway: (settings?.notifiedAnyway ?? 0) + 1 });
  }

  async edit() {}
  async delete(networkChatID: string, networkMessageID: string) {
    this.history.remove(networkChatID, networkMessageID);
  }
  async react() {}
  async unreact() {}
  async markRead() {}

  async createChat(request: {
    type: "single" | "group";
    participantIDs: string[];
    title?: string;
  }): Promise<NetworkChat> {
    const book = this.addressBook();
    const participants = request.participantIDs.map((id) => {
      const user = book.find((u) => u.id === id);
      if (!user) throw new NetworkError("not_found", `no sandbox user ${id}`);
      return user;
    });
    const self = { ...this.account.user, isSelf: true };
    if (request.type === "single")
      return {
        networkChatID: directChatID(participants[0].id),
        type: "single",
        title: participants[0].fullName ?? participants[0].id,
        participants: [self, participants[0]],
      };
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

  /** Media of seeded messages (`mxc://sandbox.invalid/seed-<kind>-<bytes>-<tag>`), generated on demand. */
  async downloadMedia(url: string): Promise<NetworkMedia | null> {
    const m = /^mxc:\/\/sandbox\.invalid\/seed-(img|video|audio|file)-(\d{1,9})-([a-z0-9]+)$/.exec(url);
    if (!m) return null;
    return sandboxMedia(m[1] as "img" | "video" | "audio" | "file", Number(m[2]), m[3]);
  }

  async searchContacts(query: string): Promise<User[]> {
    const q = query.trim().toLowerCase();
    return this.addressBook().filter(
      (u) =>
        u.id.toLowerCase() === q ||
        [u.fullName, u.username, u.email, u.phoneNumber].some((f) => f?.toLowerCase().includes(q)),
    );
  }

  async listContacts(): Promise<User[]> {
    return this.addressBook();
  }
}
