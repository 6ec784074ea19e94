import type BeeperDesktop from "@beeper/desktop-api";
import type { ConnectorHost, InboundEvent, SendReceipt } from "../../bridges/connector.ts";
import type { AccountRecord } from "../../store/records.ts";
import { chatOf, messageOf, reactionsOf, type MediaURLs, type UpstreamChat, type UpstreamMessage } from "./convert.ts";
import type { DesktopApiState } from "./state.ts";

/** An account of the login, as the link serves it. */
export interface Member {
  account: AccountRecord;
  host: ConnectorHost;
  state: DesktopApiState;
}

/** A frame of the upstream's /v1/ws, as far as it is read here. */
export type WireEvent = {
  type: string;
  eventID?: number;
  chatID?: string;
  ids?: string[];
  entries?: unknown[];
  typing?: { participantID: string; state: "typing" | "paused"; timeoutMs?: number };
  latestEventID?: number;
};

export interface InboundDeps {
  sdk: BeeperDesktop;
  media: MediaURLs;
  /** The member live events for this upstream account go to, if it takes them now. */
  live(upstreamAccountID: string): Member | undefined;
  /** Runs work in the link's one queue, after what is already in it. */
  enqueue(work: () => Promise<void>): void;
}

/**
 * The upstream's chat and message events turned into the contract's, for the member each belongs to. It also keeps
 * what that needs across events: which account an upstream chat is of, the sends in progress, and the IDs of
 * messages sent from here (their live copies are not new messages).
 */
export class UpstreamInbound {
  /** Upstream chat → its account there (message.deleted and typing name only the chat). */
  private readonly chatAccount = new Map<string, string>();
  private readonly sending = new Map<string, Set<Promise<unknown>>>();
  private readonly sentHere = new Set<string>();

  constructor(private readonly deps: InboundDeps) {}

  noteChat(upstreamChatID: string, upstreamAccountID: string) {
    this.chatAccount.set(upstreamChatID, upstreamAccountID);
  }

  /** Runs a send; live copies of what it sends are held until it settles, then known as this side's own. */
  async send(upstreamChatID: string, work: () => Promise<SendReceipt>): Promise<SendReceipt> {
    const running = work().then((receipt) => {
      this.sentHere.add(receipt.networkMessageID);
      if (this.sentHere.size > 5000) this.sentHere.delete(this.sentHere.values().next().value!);
      return receipt;
    });
    const set = this.sending.get(upstreamChatID) ?? new Set();
    set.add(running);
    this.sending.set(upstreamChatID, set);
    try {
      return await running;
    } finally {
      set.delete(running);
      if (!set.size) this.sending.delete(upstreamChatID);
    }
  }

  async handle(event: WireEvent) {
    const { media } = this.deps;
    if (event.type === "message.upserted") {
      const entries = (event.entries ??
        (await this.fetchMessages(event.chatID!, event.ids ?? []))) as UpstreamMessage[];
      for (const m of entries) await this.deliver(m);
    } else if (event.type === "message.deleted") {
      const member = await this.memberForChat(event.chatID!);
      for (const id of event.ids ?? [])
        await member?.host.emit({ type: "delete", networkChatID: event.chatID!, networkMessageID: id });
    } else if (event.type === "chat.upserted") {
      for (const chat of (event.entries ?? []) as UpstreamChat[]) {
        this.noteChat(chat.id, chat.accountID);
        await this.deps.live(chat.accountID)?.host.emit({ type: "chat", chat: chatOf(chat, media) });
      }
    } else if (event.type === "typing" && event.typing) {
      const member = await this.memberForChat(event.chatID!);
      const { participantID, state, timeoutMs } = event.typing;
      await member?.host.emit({
        type: "typing",
        networkChatID: event.chatID!,
        senderID: participantID,
        state,
        ...(timeoutMs ? { timeoutMs } : {}),
      });
    }
  }

  /** An upserted message: new (unless sent from here), edited, deleted, or its reactions changed. */
  private async deliver(m: UpstreamMessage, held = false) {
    const member = this.deps.live(m.accountID);
    if (!member) return;
    this.noteChat(m.chatID, m.accountID);
    // This side's own message, while its send has not settled (its ID may not be known yet): taken up again once it
    // has, after whatever arrives meanwhile, so that the events behind it (Echo's answer) do not wait.
    const inFlight = this.sending.get(m.chatID);
    if (m.isSender && inFlight && !held) {
      void Promise.allSettled([...inFlight]).then(() => this.deps.enqueue(() => this.deliver(m, true)));
      return;
    }
    const emit = (event: InboundEvent) => member.host.emit(event);
    if (m.isDeleted) return emit({ type: "delete", networkChatID: m.chatID, networkMessageID: m.id });
    if (!this.sentHere.has(m.id))
      await emit({ type: "message", networkChatID: m.chatID, message: messageOf(m, this.deps.media) });
    if (m.editedTimestamp && m.text !== undefined)
      await emit({
        type: "edit",
        networkChatID: m.chatID,
        networkMessageID: m.id,
        text: m.text,
        timestamp: Date.parse(m.editedTimestamp),
        senderID: m.senderID,
      });
    await emit({
      type: "message-reactions",
      networkChatID: m.chatID,
      networkMessageID: m.id,
      reactions: reactionsOf(m),
    });
  }

  private async fetchMessages(chatID: string, ids: string[]): Promise<UpstreamMessage[]> {
    const out: UpstreamMessage[] = [];
    for (const id of ids) {
      const m = await this.deps.sdk.messages.retrieve(id, { chatID }).catch(() => undefined);
      if (m) out.push(m as unknown as UpstreamMessage);
    }
    return out;
  }

  private async memberForChat(chatID: string): Promise<Member | undefined> {
    let accountID = this.chatAccount.get(chatID);
    if (!accountID) {
      const chat = (await this.deps.sdk.chats.retrieve(chatID).catch(() => undefined)) as UpstreamChat | undefined;
      if (!chat) return undefined;
      accountID = chat.accountID;
      this.noteChat(chatID, accountID);
    }
    return this.deps.live(accountID);
  }
}
