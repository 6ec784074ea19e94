import type {
  ChatCapabilities,
  ChatFlags,
  ConnectorHost,
  HistoryPage,
  NetworkChat,
  NetworkClient,
  NetworkMedia,
  OutgoingFile,
  OutgoingMessage,
  SendReceipt,
  TypingState,
} from "../../bridges/connector.ts";
import type { MessageSendParams } from "@beeper/desktop-api/resources/messages";
import { NetworkError } from "../../bridges/connector.ts";
import type { User } from "../../schema/wire.ts";
import type { AccountRecord } from "../../store/records.ts";
import { chatOf, messageOf, sendTypeOf, type UpstreamChat, type UpstreamMessage } from "./convert.ts";
import type { UpstreamLink } from "./link.ts";
import { readState } from "./state.ts";
import { upstreamCall } from "./upstream.ts";

/**
 * One upstream account, as an account here. Its traffic goes over the login's shared link; what a client does here
 * is done on the upstream through the official SDK, and comes back as the upstream's own events.
 */
export class DesktopApiClient implements NetworkClient {
  readonly reportsStatus = true;
  readonly holdsConnection = true;
  private readonly upstreamAccountID: string;
  private readonly instanceID: string | undefined;

  constructor(
    private readonly account: AccountRecord,
    private readonly host: ConnectorHost,
    private readonly link: UpstreamLink,
  ) {
    const state = readState(account.state);
    this.upstreamAccountID = state.upstreamAccountID;
    this.instanceID = state.instanceID;
  }

  private get sdk() {
    return this.link.sdk;
  }

  async connect() {
    this.link.join(this.account, this.host);
  }

  async disconnect() {
    await this.link.leave(this.upstreamAccountID);
  }

  capabilities(): ChatCapabilities {
    return { edits: true, deletes: true, reactions: true, replies: true, attachments: true, multipleReactions: true };
  }

  async send(networkChatID: string, message: OutgoingMessage): Promise<SendReceipt> {
    return this.link.send(networkChatID, () =>
      upstreamCall(async () => {
        let attachment: MessageSendParams["attachment"];
        if (message.attachment) {
          const { info } = message.attachment;
          const uploaded = await this.upload(message.attachment);
          attachment = {
            uploadID: uploaded.uploadID,
            type: sendTypeOf(info),
            ...(info.fileName ? { fileName: info.fileName } : {}),
            ...(info.mimeType ? { mimeType: info.mimeType } : {}),
            ...(info.duration ? { duration: info.duration } : {}),
            ...(info.size ? { size: info.size } : {}),
          };
        }
        const sent = await this.sdk.messages.send(networkChatID, {
          ...(message.text ? { text: message.text } : {}),
          ...(message.replyTo ? { replyToMessageID: message.replyTo } : {}),
          ...(attachment ? { attachment } : {}),
        });
        // On inboxd (it has an instance ID) a pending message's ID is the message's own; the desktop app's pending
        // ID resolves to the message through GET …/messages/{pendingMessageID}.
        if (this.instanceID) return { networkMessageID: sent.pendingMessageID, timestamp: Date.now() };
        const stored = (await this.sdk.messages
          .retrieve(sent.pendingMessageID, { chatID: networkChatID })
          .catch(() => undefined)) as UpstreamMessage | undefined;
        return {
          networkMessageID: stored?.id ?? sent.pendingMessageID,
          timestamp: stored ? Date.parse(stored.timestamp) : Date.now(),
        };
      }),
    );
  }

  /** Uploads a file to the upstream. The SDK sends it from memory: an upload here is at most MAX_UPLOAD_BYTES. */
  private async upload(file: OutgoingFile): Promise<{ uploadID: string }> {
    const { info } = file;
    const blob = await new Response(file.open()).blob();
    const uploaded = await this.sdk.assets.upload({
      file: new File([blob], info.fileName ?? "file", { type: info.mimeType ?? "application/octet-stream" }),
    });
    if (!uploaded.uploadID)
      throw new NetworkError("rejected", `the upstream refused the file: ${uploaded.error ?? "no upload ID"}`);
    return { uploadID: uploaded.uploadID };
  }

  async edit(networkChatID: string, networkMessageID: string, text: string) {
    await upstreamCall(() => this.sdk.messages.update(networkMessageID, { chatID: networkChatID, text }));
  }

  async delete(networkChatID: string, networkMessageID: string) {
    await upstreamCall(() => this.sdk.messages.delete(networkMessageID, { chatID: networkChatID }));
  }

  async react(networkChatID: string, networkMessageID: string, reactionKey: string) {
    await upstreamCall(() =>
      this.sdk.chats.messages.reactions.add(networkMessageID, { chatID: networkChatID, reactionKey }),
    );
  }

  async unreact(networkChatID: string, networkMessageID: string, reactionKey: string) {
    await upstreamCall(() =>
      this.sdk.chats.messages.reactions.delete(reactionKey, { chatID: networkChatID, messageID: networkMessageID }),
    );
  }

  async markRead(networkChatID: string, networkMessageID: string) {
    await upstreamCall(() => this.sdk.chats.markRead(networkChatID, { messageID: networkMessageID }));
  }

  async setChatFlags(networkChatID: string, flags: ChatFlags) {
    await upstreamCall(() => this.sdk.chats.update(networkChatID, flags));
  }

  /** The picture goes up as an upload, which the upstream's PATCH takes by its ID (inboxd; the app: its file). */
  async setChatAvatar(networkChatID: string, image: OutgoingFile | null) {
    if (!image) return void (await upstreamCall(() => this.sdk.chats.update(networkChatID, { imgURL: null })));
    const uploaded = await upstreamCall(() => this.upload(image));
    await upstreamCall(() => this.sdk.chats.update(networkChatID, { imgURL: uploaded.uploadID }));
  }

  async setMessageExpiry(networkChatID: string, seconds: number) {
    await upstreamCall(() => this.sdk.chats.update(networkChatID, { messageExpirySeconds: seconds || null }));
  }

  async setReminder(networkChatID: string, reminder: { at: number; dismissOnIncomingMessage: boolean } | null) {
    if (!reminder) return void (await upstreamCall(() => this.sdk.chats.reminders.delete(networkChatID)));
    await upstreamCall(() =>
      this.sdk.chats.reminders.create(networkChatID, {
        reminder: { remindAtMs: reminder.at, dismissOnIncomingMessage: reminder.dismissOnIncomingMessage },
      } as never),
    );
  }

  async setTyping(networkChatID: string, state: TypingState) {
    // inboxd's own endpoint (the vendor CLI's `beeper presence`); an upstream without it answers 404, said as such.
    await upstreamCall(() =>
      this.sdk.post(`/v1/chats/${encodeURIComponent(networkChatID)}/typing`, { body: { state } }),
    );
  }

  async notifyAnyway(networkChatID: string) {
    await upstreamCall(() => this.sdk.chats.notifyAnyway(networkChatID));
  }

  async fetchHistory(networkChatID: string, before: { networkMessageID: string }, limit: number): Promise<HistoryPage> {
    return upstreamCall(async () => {
      const older: UpstreamMessage[] = [];
      let page = await this.sdk.messages.list(networkChatID, { cursor: before.networkMessageID, direction: "before" });
      for (;;) {
        older.push(...(page.items as unknown as UpstreamMessage[]));
        if (older.length >= limit || !page.hasNextPage()) break;
        page = await page.getNextPage();
      }
      const hasMore = older.length > limit || page.hasNextPage();
      const messages = older
        .slice(0, limit)
        .filter((m) => !m.isDeleted)
        .reverse()
        .map((m) => messageOf(m, this.link.media, true));
      return { messages, hasMore };
    });
  }

  async createChat(request: {
    type: "single" | "group";
    participantIDs: string[];
    title?: string;
  }): Promise<NetworkChat> {
    const created = (await upstreamCall(() =>
      this.sdk.chats.create({
        accountID: this.upstreamAccountID,
        type: request.type,
        participantIDs: request.participantIDs,
        ...(request.title ? { title: request.title } : {}),
      } as never),
    )) as unknown as UpstreamChat & { chatID?: string };
    const chat = created.id
      ? created
      : ((await upstreamCall(() => this.sdk.chats.retrieve(created.chatID!))) as unknown as UpstreamChat);
    return chatOf(chat, this.link.media);
  }

  async resolveIdentifier(user: Partial<User>): Promise<User | null> {
    const query = user.id ?? user.username ?? user.phoneNumber ?? user.email;
    if (!query) return null;
    const found = await this.searchContacts(query);
    return found.find((u) => [u.id, u.username, u.phoneNumber, u.email].includes(query)) ?? null;
  }

  async searchContacts(query: string): Promise<User[]> {
    const answer = await upstreamCall(() => this.sdk.accounts.contacts.search(this.upstreamAccountID, { query }));
    return (answer.items ?? []) as User[];
  }

  async listContacts(): Promise<User[]> {
    const out: User[] = [];
    for await (const u of this.sdk.accounts.contacts.list(this.upstreamAccountID)) {
      out.push(u as User);
      if (out.length >= 10_000) break;
    }
    return out;
  }

  async downloadMedia(url: string): Promise<NetworkMedia | null> {
    const original = this.link.media.unwrap(url);
    if (original === undefined) return null;
    const response = await upstreamCall(() => this.sdk.assets.serve({ url: original }).asResponse());
    if (!response.body) throw new NetworkError("not_found", `the upstream has no media at ${original}`);
    const disposition = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(
      response.headers.get("content-disposition") ?? "",
    )?.[1];
    return {
      content: response.body as unknown as AsyncIterable<Uint8Array>,
      ...(response.headers.get("content-type")
        ? { mimeType: response.headers.get("content-type")!.split(";")[0] }
        : {}),
      ...(disposition ? { fileName: decodeURIComponent(disposition) } : {}),
    };
  }

  /** Chat state of one upstream chat, freshly read (after a start or a create). */
  async chat(networkChatID: string): Promise<NetworkChat> {
    return chatOf(
      (await upstreamCall(() => this.sdk.chats.retrieve(networkChatID))) as unknown as UpstreamChat,
      this.link.media,
    );
  }
}
