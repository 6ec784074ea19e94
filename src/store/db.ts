import type { Storage } from "unstorage";
import { ChatTable } from "./chat-table.ts";
import { Kv } from "./kv.ts";
import {
  CHUNK_SIZE,
  firstSeqOf,
  keys,
  previewOf,
  type AccountRecord,
  type ChatRecord,
  type LabelRecord,
  type LoginRecord,
  type MessageRecord,
  type MetaRecord,
} from "./records.ts";
import { SearchIndex } from "./search-index.ts";
import { ChangeSet } from "./changes.ts";
import { ChatSnapshot, readChatRecords, type SnapshotLayout } from "./chat-snapshot.ts";
import type { DomainEvent } from "../schema/events.ts";

/**
 * Watches the store's commits (the event hub): `snapshot` runs at the instant a commit takes its batch, so what it
 * derives matches exactly what is being written; `committed` gets that result once the batch is durable.
 */
export interface CommitObserver {
  snapshot(changes: ChangeSet): unknown;
  committed(result: unknown): void;
}

/**
 * The device's data: typed access to records over one unstorage `Storage`, plus the in-memory indexes rebuilt at
 * start-up (chat table, accounts). All writes go through `kv.put` and become durable at `commit()`.
 */
export class Db {
  readonly kv: Kv;
  readonly chats = new ChatTable();
  readonly index: SearchIndex;
  private readonly snapshot: ChatSnapshot;
  /**
   * Whether commits write a new chat snapshot when one is due. Only the store's one writer (the app) turns it on: a
   * CLI command beside the daemon reads chats but must never replace the snapshot the daemon keeps.
   */
  keepsChatSnapshot = false;
  accounts: AccountRecord[] = [];
  logins: LoginRecord[] = [];
  /** Device-local chat labels: few and small, so kept in memory and stored as one record. */
  labels: LabelRecord[] = [];
  private meta: MetaRecord = { schema: 1, nextChatNo: 0 };
  private readonly locks = new Map<number, Promise<unknown>>();
  private changes = new ChangeSet();
  private snapshotStep: ReturnType<typeof setTimeout> | undefined;
  private observer?: CommitObserver;
  /** Serialised list form of chats, by chat no (see services/present.ts chatListJSON). */
  readonly presented = new Map<number, string>();
  /** The same for the form search results show (services/present.ts chatResultJSON). */
  readonly presentedInResults = new Map<number, string>();
  /**
   * Whole serialised chat-list pages by request (see services/chats.ts): clients poll the first page over and over,
   * and any chat change empties this (pages mix chats, so one change can move or alter any of them).
   */
  readonly pages = new Map<string, Uint8Array>();

  private constructor(
    readonly storage: Storage,
    cacheBytes?: number,
    snapshotLayout?: SnapshotLayout,
    gatherWrites?: () => Promise<void>,
  ) {
    this.kv = new Kv(storage, {
      cacheBytes,
      gatherWrites,
      beforeCommit: () => this.beforeCommit(),
      takeBatchNotes: () => this.takeChanges(),
      afterCommit: (observed) => this.observer?.committed(observed),
    });
    this.index = new SearchIndex(this.kv);
    this.snapshot = new ChatSnapshot(this.kv, snapshotLayout);
  }

  /** The one observer of commits (the event hub, src/events/hub.ts), set once as the app is composed. */
  observeCommits(observer: CommitObserver): void {
    if (this.observer) throw new Error("the store's commits already have an observer");
    this.observer = observer;
  }

  private async beforeCommit(): Promise<void> {
    await this.index.applyQueued();
    // One step of a snapshot being written per turn of the event loop at most: commits can follow each other
    // without one (sends joining them), and a step in each would hold requests up as one big snapshot did.
    if (
      this.keepsChatSnapshot &&
      this.chats.complete &&
      this.snapshotStep === undefined &&
      (await this.snapshot.advance(this.chats))
    )
      this.commitSnapshotStepSoon();
  }

  /** The changes since the last commit, as the commit takes its batch: what the observer turns into events. */
  private takeChanges(): unknown {
    const taken = this.changes;
    this.changes = new ChangeSet();
    return taken.empty || !this.observer ? undefined : this.observer.snapshot(taken);
  }

  static async open(
    storage: Storage,
    options: {
      cacheBytes?: number;
      snapshotLayout?: SnapshotLayout;
      gatherWrites?: () => Promise<void>;
      /** Return once the newest chats are read, reading the rest in the background (see reload). */
      early?: { pause: () => Promise<void> };
    } = {},
  ): Promise<Db> {
    const db = new Db(storage, options.cacheBytes, options.snapshotLayout, options.gatherWrites);
    await db.reload(options.early);
    return db;
  }

  /** This store's identity (MetaRecord.instanceID): made, and written with the next commit, on first use. */
  get instanceID(): string {
    if (!this.meta.instanceID) {
      this.meta.instanceID = `inboxd_${crypto.randomUUID().replace(/-/g, "")}`;
      this.kv.put(keys.meta, this.meta);
    }
    return this.meta.instanceID;
  }

  /**
   * (Re)reads meta, accounts and every chat: from the chat snapshot where there is one, else record by record.
   *
   * With `early` (the app's start), it returns once the snapshot's first part is read: the table then holds the
   * newest chats (ChatTable.load's `partial`), enough for the first pages of the chat list, and `loading` reads the
   * rest, `pause` before each part so that requests are answered meanwhile. At 100,000 chats the first part took
   * about 0.15 s of a 10M start-up's CPU profile, the whole snapshot about 1.4 s. Until `loading` settles nothing may change a chat (the table
   * refuses it), and the app holds every request that needs more than the top of the list (see route-kit.ts).
   */
  async reload(early?: { pause: () => Promise<void> }): Promise<void> {
    this.meta = (await this.storage.getItem<MetaRecord>(keys.meta)) ?? { schema: 1, nextChatNo: 0 };
    this.accounts = (await this.storage.getItem<AccountRecord[]>(keys.accounts)) ?? [];
    this.logins = (await this.storage.getItem<LoginRecord[]>(keys.logins)) ?? [];
    this.labels = (await this.storage.getItem<LabelRecord[]>(keys.labels)) ?? [];
    const newest = await this.snapshot.loadNewest(this.storage);
    if (early && newest && newest.partsLeft > 0) {
      this.chats.load(newest.chats, { through: newest.through });
      this.forgetPresented();
      const loaded = (async () => {
        this.chats.load((await newest.rest(early.pause)) ?? (await this.readEveryChat()));
        this.forgetPresented();
        this.loading = undefined;
      })();
      // A failure stays in `loading` for whoever waits on it (the app logs it); it is not an unhandled rejection.
      loaded.catch(() => undefined);
      this.loading = loaded;
      return;
    }
    this.chats.load((await newest?.rest()) ?? (await this.readEveryChat()));
    this.forgetPresented();
  }

  /** While start-up still reads the older chats (reload with `early`): settles once every chat is in the table. */
  loading: Promise<void> | undefined;

  /**
   * A snapshot being written goes on in the first commit after a timer, with or without other writes, so that
   * requests and network events run between the steps.
   */
  private commitSnapshotStepSoon(): void {
    this.snapshotStep ??= setTimeout(() => {
      this.snapshotStep = undefined;
      if (this.keepsChatSnapshot) this.commit().catch(() => undefined); // a failed commit is retried by the next
    }, 0);
  }

  /** Puts a snapshot of every chat into the next commit (after a bulk load such as `seed`). */
  writeChatSnapshot(): void {
    this.snapshot.write(this.chats.all());
  }

  /** Drops the chat snapshot in the next commit (before a bulk load such as `seed`; see ChatSnapshot.forget). */
  forgetChatSnapshot(): void {
    this.snapshot.forget();
  }

  private async readEveryChat(): Promise<ChatRecord[]> {
    const records: ChatRecord[] = [];
    const everyNo = Array.from({ length: this.meta.nextChatNo }, (_, no) => no);
    await readChatRecords(this.storage, everyNo, (_, chat) => {
      if (!chat) return;
      // Chats stored before previews were excerpts may still hold a whole message text.
      chat.preview = previewOf(chat.preview);
      records.push(chat);
    });
    return records;
  }

  commit(): Promise<void> {
    return this.kv.commit();
  }

  /** After the last commit: no more writes (see Kv.close), no snapshot step pending. */
  close(): void {
    clearTimeout(this.snapshotStep);
    this.snapshotStep = undefined;
    this.kv.close();
  }

  account(accountID: string): AccountRecord | undefined {
    return this.accounts.find((a) => a.accountID === accountID);
  }

  saveAccounts() {
    this.forgetPresented();
    this.changes.accounts = true;
    this.kv.put(keys.accounts, this.accounts);
  }

  /** Logs an event that changes no record (focus) with the next commit. */
  noteEvent(event: DomainEvent) {
    this.changes.events.push(event);
  }

  /** Ties an API transactionID to the reaction change it caused, for the event that reports it. */
  noteTransaction(chatNo: number, seq: number, transactionID: string) {
    this.changes.transactions.set(`${chatNo}.${seq}`, transactionID);
  }

  /** Drops serialised forms after a change: one chat's, or (no argument) every chat's. */
  private forgetPresented(chatNo?: number) {
    if (chatNo === undefined) {
      this.presented.clear();
      this.presentedInResults.clear();
    } else {
      this.presented.delete(chatNo);
      this.presentedInResults.delete(chatNo);
    }
    this.pages.clear();
  }

  saveLogins() {
    this.kv.put(keys.logins, this.logins);
  }

  /**
   * Persists the label list. Label changes, like chat changes, are made synchronously in memory before the next
   * await, so concurrent requests cannot lose each other's updates; the commit writes the list as it is then.
   */
  saveLabels() {
    this.kv.put(keys.labels, this.labels);
  }

  /** Forgets a chat and its messages (account removal). Search postings left behind are filtered out on read. */
  async dropChat(chat: ChatRecord): Promise<void> {
    this.chats.remove(chat);
    this.forgetPresented(chat.no);
    this.changes.chatDeleted(chat);
    this.snapshot.changed(chat.no);
    this.kv.remove(keys.chat(chat.no));
    for (let i = Math.floor(firstSeqOf(chat) / CHUNK_SIZE); i * CHUNK_SIZE < chat.nextSeq; i++)
      this.kv.remove(keys.chunk(chat.no, i));
    for (const key of await this.storage.getKeys(`nid:${chat.no}:`)) this.kv.remove(key);
  }

  allocateChatNo(): number {
    const no = this.meta.nextChatNo++;
    this.kv.put(keys.meta, this.meta);
    return no;
  }

  saveChat(chat: ChatRecord) {
    if (!this.chats.complete) throw new Error("a chat changed before every chat was loaded at start-up");
    this.forgetPresented(chat.no);
    this.changes.chat(chat);
    this.snapshot.changed(chat.no);
    this.kv.put(keys.chat(chat.no), chat);
  }

  /**
   * Serialises read-modify-write work on one chat's message chunks. Chat records themselves live in memory and are
   * changed synchronously, so they need no lock; chunks are loaded asynchronously and do.
   */
  async withChat<T>(chatNo: number, work: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(chatNo) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(chatNo, tail);
    void tail.then(() => {
      if (this.locks.get(chatNo) === tail) this.locks.delete(chatNo);
    });
    return run;
  }

  async chunk(chatNo: number, chunk: number): Promise<(MessageRecord | null)[]> {
    return (await this.kv.get<(MessageRecord | null)[]>(keys.chunk(chatNo, chunk))) ?? [];
  }

  async message(chatNo: number, seq: number): Promise<MessageRecord | undefined> {
    if (!Number.isInteger(seq) || seq < 0) return undefined;
    const chunk = await this.chunk(chatNo, Math.floor(seq / CHUNK_SIZE));
    return chunk[seq % CHUNK_SIZE] ?? undefined;
  }

  /** Stores a message at its seq (caller holds the chat lock). */
  async putMessage(chatNo: number, message: MessageRecord): Promise<void> {
    const index = Math.floor(message.seq / CHUNK_SIZE);
    const chunk = await this.chunk(chatNo, index);
    chunk[message.seq % CHUNK_SIZE] = message;
    this.kv.put(keys.chunk(chatNo, index), chunk);
    this.changes.message(chatNo, message);
    // The chat's preview is a copy of its newest message: keep it in step with every change to that message.
    const chat = this.chats.get(chatNo);
    if (chat?.preview?.seq === message.seq && !message.deleted) {
      chat.preview = previewOf(message);
      this.saveChat(chat);
    }
  }
}
