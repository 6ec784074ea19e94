import type { DomainEvent } from "../schema/events.ts";
import type { ChatRecord, MessageRecord } from "./records.ts";

/**
 * What one commit changed, collected as records are saved. The event hub turns it into live events once the commit
 * is durable, so no event ever announces a write that could still be lost — and every write produces its event,
 * whichever service or connector made it.
 */
export class ChangeSet {
  readonly chats = new Map<number, ChatRecord>();
  readonly deletedChats = new Map<number, string>();
  readonly messages = new Map<number, Map<number, MessageRecord>>();
  readonly deletedMessages = new Map<number, Map<number, MessageRecord>>();
  /** transactionIDs of reactions added through the API, by "<chat no>.<seq>". */
  readonly transactions = new Map<string, string>();
  /** Events that change no chat but are logged all the same (focus). */
  readonly events: DomainEvent[] = [];
  /** Whether the account list was saved (its changes become account events). */
  accounts = false;

  get empty(): boolean {
    return (
      this.chats.size + this.deletedChats.size + this.messages.size + this.deletedMessages.size + this.events.length ===
        0 && !this.accounts
    );
  }

  chat(chat: ChatRecord) {
    this.chats.set(chat.no, chat);
  }

  chatDeleted(chat: ChatRecord) {
    this.chats.delete(chat.no);
    this.messages.delete(chat.no);
    this.deletedMessages.delete(chat.no);
    this.deletedChats.set(chat.no, chat.id);
  }

  message(chatNo: number, message: MessageRecord) {
    const target = message.deleted ? this.deletedMessages : this.messages;
    const other = message.deleted ? this.messages : this.deletedMessages;
    other.get(chatNo)?.delete(message.seq);
    let perChat = target.get(chatNo);
    if (!perChat) target.set(chatNo, (perChat = new Map()));
    perChat.set(message.seq, message);
  }
}
