/**
 * The sandbox network's own copy of what an account sent: what the other party of a chat has. A delete for
 * everyone reaches the network and removes the message here; a delete on this device only (forEveryone=false)
 * never does, so the other party keeps it. Sending `!history` to Echo makes Echo answer with what it still has,
 * which is how a test sees the difference. Kept in memory, like the rest of the simulated network's state.
 */
export class SandboxHistory {
  private readonly chats = new Map<string, Map<string, string>>();

  /** Most messages kept per chat: the oldest are forgotten first. */
  constructor(private readonly perChat = 200) {}

  record(networkChatID: string, networkMessageID: string, text: string) {
    let chat = this.chats.get(networkChatID);
    if (!chat) this.chats.set(networkChatID, (chat = new Map()));
    chat.set(networkMessageID, text);
    if (chat.size > this.perChat) chat.delete(chat.keys().next().value!);
  }

  remove(networkChatID: string, networkMessageID: string) {
    this.chats.get(networkChatID)?.delete(networkMessageID);
  }

  /** The texts the other party still has, oldest first (at most `limit`, the newest). */
  texts(networkChatID: string, limit = 20): string[] {
    return [...(this.chats.get(networkChatID)?.values() ?? [])].slice(-limit);
  }
}
