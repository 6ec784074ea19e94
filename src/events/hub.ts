import { presentChat, presentMessage } from "../services/present.ts";
import type { ChangeSet } from "../store/changes.ts";
import type { Db } from "../store/db.ts";
import { domainEvent, type DomainEvent } from "./protocol.ts";

/** Receives every batch of domain events, in commit order, after the commit is durable. */
export interface EventSink {
  deliver(events: DomainEvent[]): void;
  /** False while the sink has nobody to deliver to; events are not even built when no sink wants them. */
  wants?(): boolean;
}

/**
 * Receives the events while their commit takes its batch (synchronously), to write derived records into that same
 * commit — the webhook outbox.
 */
export interface CommitSink {
  wants(): boolean;
  enqueue(events: DomainEvent[]): void;
}

/**
 * Turns each durable commit's changes into domain events (built and serialised once) and hands them to every sink:
 * the WebSocket connections of the runtime, and the webhook dispatcher.
 */
export class EventHub {
  private readonly sinks = new Set<EventSink>();
  private readonly commitSinks = new Set<CommitSink>();
  onSinkError?: (error: unknown) => void;

  constructor(db: Db) {
    db.observer = {
      // Built when the commit takes its batch, so events show exactly the state being written...
      snapshot: (changes) => {
        const wanted = [...this.commitSinks].filter((s) => s.wants());
        const listening = [...this.sinks].some((s) => s.wants?.() ?? true);
        if (!listening && wanted.length === 0) return undefined;
        const events = buildEvents(db, changes, new Date().toISOString());
        for (const sink of wanted) sink.enqueue(events);
        return events;
      },
      // ...and delivered only once it is durable.
      committed: (events) => {
        const list = events as DomainEvent[] | undefined;
        if (list?.length) this.deliver(list);
      },
    };
  }

  /**
   * Events that change nothing stored (focus, typing): straight to the connected sinks, not to commit sinks, so
   * webhooks and anything durable never see them.
   */
  publish(events: DomainEvent[]): void {
    if (events.length) this.deliver(events);
  }

  private deliver(list: DomainEvent[]): void {
    for (const sink of this.sinks) {
      // A failing sink (a socket that cannot take a frame) must neither fail the write that is already durable
      // nor keep the events from the other sinks.
      try {
        sink.deliver(list);
      } catch (error) {
        this.onSinkError?.(error);
      }
    }
  }

  addCommitSink(sink: CommitSink) {
    this.commitSinks.add(sink);
  }

  add(sink: EventSink): () => void {
    this.sinks.add(sink);
    return () => this.sinks.delete(sink);
  }
}

/**
 * Per chat: message.upserted, message.deleted, then chat.upserted (so a client sees the message before the chat
 * preview that points at it); chat.deleted last. A reaction added through the API carries its transactionID.
 */
export function buildEvents(db: Db, changes: ChangeSet, ts: string): DomainEvent[] {
  const events: DomainEvent[] = [];
  const event = (type: string, chatID: string, ids: string[], entries?: unknown[], extra?: Record<string, unknown>) =>
    domainEvent(type, ts, chatID, ids, entries ? { entries, ...extra } : extra);
  const chatNos = new Set([...changes.messages.keys(), ...changes.deletedMessages.keys(), ...changes.chats.keys()]);
  for (const no of chatNos) {
    const chat = db.chats.get(no);
    if (!chat) continue;
    const upserted = [...(changes.messages.get(no)?.values() ?? [])].sort((a, b) => a.seq - b.seq);
    if (upserted.length) {
      const entries = upserted.map((m) => presentMessage(chat, m));
      const transactions = upserted.map((m) => changes.transactions.get(`${no}.${m.seq}`)).filter((t): t is string => t !== undefined);
      events.push(event("message.upserted", chat.id, entries.map((m) => m.id), entries, transactions.length === 1 ? { transactionID: transactions[0] } : transactions.length ? { transactionIDs: transactions } : undefined));
    }
    const deleted = [...(changes.deletedMessages.get(no)?.values() ?? [])];
    if (deleted.length) events.push(event("message.deleted", chat.id, deleted.map((m) => presentMessage(chat, m).id)));
    if (changes.chats.has(no)) events.push(event("chat.upserted", chat.id, [chat.id], [presentChat(db, chat, { preview: true })]));
  }
  for (const chatID of changes.deletedChats.values()) events.push(event("chat.deleted", chatID, [chatID]));
  return events;
}
