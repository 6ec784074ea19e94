import { presentChat, presentMessage } from "../services/present.ts";
import type { ChangeSet } from "../store/changes.ts";
import type { CommitObserver, Db } from "../store/db.ts";
import type { AccountRecord } from "../store/records.ts";
import type { EventLog } from "./log.ts";
import { domainEvent, type DomainEvent } from "../schema/events.ts";

/** Receives every batch of domain events, in commit order, after the commit is durable. */
export interface EventSink {
  deliver(events: DomainEvent[]): void;
  /** False while the sink has nobody to deliver to: delivery skips it. */
  wants?(): boolean;
}

/**
 * Turns each commit's changes into domain events (built and serialised once), logs them in that same commit
 * (src/events/log.ts: each gets its eventID), and once the commit is durable hands them to every sink: the WebSocket
 * connections of the runtime, the event streams, and the webhook dispatcher.
 */
export class EventHub implements CommitObserver {
  private readonly sinks = new Set<EventSink>();
  /** Each account as last announced (its wire JSON), to tell which ones a save of the account list changed. */
  private readonly announcedAccounts = new Map<string, string>();
  private readonly waiters = new Set<() => void>();
  onSinkError?: (error: unknown) => void;

  constructor(
    private readonly db: Db,
    readonly log: EventLog,
    private readonly presentAccount: (account: AccountRecord) => unknown = (a) => a,
  ) {
    for (const account of db.accounts)
      this.announcedAccounts.set(account.accountID, JSON.stringify(presentAccount(account)));
  }

  /** A commit takes its batch: its changes become events, logged in that same batch, so they show exactly its state… */
  snapshot(changes: ChangeSet): DomainEvent[] | undefined {
    const ts = new Date().toISOString();
    const events = this.log.append([
      ...buildEvents(this.db, changes, ts),
      ...this.accountEvents(changes, ts),
      ...changes.events,
    ]);
    return events.length ? events : undefined;
  }

  /** …and they are delivered to the sinks only once it is durable. */
  committed(events: unknown): void {
    const list = events as DomainEvent[];
    this.log.markDurable(list);
    this.deliver(list);
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Resolves at the next durable commit that logged events, or after `ms` (long-polls wait on this). */
  nextCommit(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  /** account.upserted for each account added or changed since it was last announced, account.deleted for each gone. */
  private accountEvents(changes: ChangeSet, ts: string): DomainEvent[] {
    if (!changes.accounts) return [];
    const events: DomainEvent[] = [];
    const seen = new Set<string>();
    for (const account of this.db.accounts) {
      seen.add(account.accountID);
      const wire = this.presentAccount(account);
      const json = JSON.stringify(wire);
      if (this.announcedAccounts.get(account.accountID) === json) continue;
      this.announcedAccounts.set(account.accountID, json);
      events.push(domainEvent("account.upserted", ts, "", [account.accountID], { entries: [wire] }));
    }
    for (const accountID of this.announcedAccounts.keys()) {
      if (seen.has(accountID)) continue;
      this.announcedAccounts.delete(accountID);
      events.push(domainEvent("account.deleted", ts, "", [accountID]));
    }
    return events;
  }

  /** Live-only events (typing): straight to the connected sinks, never logged (so never replayed or sent to webhooks). */
  publish(events: DomainEvent[]): void {
    if (events.length) this.deliver(events);
  }

  private deliver(list: DomainEvent[]): void {
    for (const sink of this.sinks) {
      if (sink.wants && !sink.wants()) continue;
      // A failing sink (a socket that cannot take a frame) must neither fail the write that is already durable
      // nor keep the events from the other sinks.
      try {
        sink.deliver(list);
      } catch (error) {
        this.onSinkError?.(error);
      }
    }
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
      const transactions = upserted
        .map((m) => changes.transactions.get(`${no}.${m.seq}`))
        .filter((t): t is string => t !== undefined);
      events.push(
        event(
          "message.upserted",
          chat.id,
          entries.map((m) => m.id),
          entries,
          transactions.length === 1
            ? { transactionID: transactions[0] }
            : transactions.length
              ? { transactionIDs: transactions }
              : undefined,
        ),
      );
    }
    const deleted = [...(changes.deletedMessages.get(no)?.values() ?? [])];
    if (deleted.length)
      events.push(
        event(
          "message.deleted",
          chat.id,
          deleted.map((m) => presentMessage(chat, m).id),
        ),
      );
    if (changes.chats.has(no))
      events.push(event("chat.upserted", chat.id, [chat.id], [presentChat(db, chat, { preview: true })]));
  }
  for (const chatID of changes.deletedChats.values()) events.push(event("chat.deleted", chatID, [chatID]));
  return events;
}
