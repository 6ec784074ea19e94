import type { InboundEvent, NetworkChat } from "../../bridges/connector.ts";
import type { User } from "../../schema/wire.ts";
import { seg, type MatrixHttp } from "./http.ts";
import { applyState, memberName, newRoom, roomChat, type Room } from "./rooms.ts";
import type { HistoryMark } from "./state.ts";
import { parseEvent, type MatrixEvent } from "./event.ts";
import { translate } from "./timeline.ts";
import type { CryptoSync } from "./crypto/machine.ts";

/** The parts of a /sync answer the connector reads (everything is checked before use: servers can send anything). */
export interface SyncResponse extends CryptoSync {
  next_batch?: unknown;
  account_data?: { events?: unknown[] };
  rooms?: {
    join?: Record<string, JoinedRoom>;
    invite?: Record<string, { invite_state?: { events?: unknown[] } }>;
    leave?: Record<string, JoinedRoom>;
  };
}

interface JoinedRoom {
  state?: { events?: unknown[] };
  timeline?: { events?: unknown[]; limited?: unknown; prev_batch?: unknown };
  ephemeral?: { events?: unknown[] };
  account_data?: { events?: unknown[] };
  summary?: { "m.heroes"?: unknown; "m.joined_member_count"?: unknown; "m.invited_member_count"?: unknown };
  unread_notifications?: { notification_count?: unknown };
}

export interface SyncDeps {
  selfID: string;
  self(): User;
  rooms: Map<string, Room>;
  http: MatrixHttp;
  emit(event: InboundEvent): Promise<void>;
  /** Whether a transaction ID is one of this client's sends (its echo is not a new message). */
  ownEcho(txn: string): boolean;
  firstBackfill: number;
  /** Reports progress of long work (a long gap) as the account's status text. */
  progress?(text: string): Promise<void>;
  /** A first load's edits and reactions of older messages, and its deletions, also go here (held-relations.ts). */
  hold?(roomID: string, event: InboundEvent): void;
  /** A first load's oldest message of a room and the token before it, where paging back goes on (state.ts). */
  historyStarts?(roomID: string, mark: HistoryMark): void;
  /** Encrypted events of a room read in the clear, where the account's device can (the others as they came). */
  decrypt?(roomID: string, events: MatrixEvent[]): Promise<MatrixEvent[]>;
}

/** Events per /messages page when filling a gap or loading history (what costs a homeserver least per event). */
const GAP_PAGE = 1000;
/** Events per room a sync's timeline carries before it is "limited". */
const TIMELINE_LIMIT = 100;

/**
 * Turns /sync answers into events for the host: rooms become chats, timelines become messages, edits, reactions
 * and deletions, ephemeral events become receipts and typing. Events are handed over in order without waiting for
 * each to be stored; `apply` resolves once all of a batch is stored (so its position can be saved).
 */
export class SyncProcessor {
  /** m.direct: user → their DM rooms. */
  private direct: Record<string, string[]> = {};
  private directRooms = new Set<string>();
  /** Rooms a push rule silences. */
  private muted = new Set<string>();
  /** The last chat announced per room (JSON), so an unchanged room is not announced again. */
  private readonly announced = new Map<string, string>();
  private readonly flags = new Map<string, string>();
  private readonly typing = new Map<string, Set<string>>();
  private readonly counts = new Map<string, number>();
  /** Resolves once everything handed over so far in this batch is stored. */
  private stored: () => Promise<void> = async () => undefined;

  constructor(private readonly deps: SyncDeps) {}

  filter() {
    return {
      presence: { not_types: ["*"] },
      room: {
        timeline: { limit: TIMELINE_LIMIT },
        ephemeral: { types: ["m.receipt", "m.typing"] },
        account_data: { types: ["m.tag"] },
      },
      account_data: { types: ["m.direct", "m.push_rules"] },
    };
  }

  async apply(sync: SyncResponse, since: string | undefined, progress: (text: string) => Promise<void>): Promise<void> {
    const pending: Promise<void>[] = [];
    const emit = (event: InboundEvent) => void pending.push(this.deps.emit(event));
    // What a gap fill waits for before reading its next page: the page before it stored (see fillGap).
    this.stored = () => Promise.all(pending.splice(0)).then(() => undefined);
    const changed = this.accountData(sync.account_data?.events);
    const joined = Object.entries(sync.rooms?.join ?? {});
    let done = 0;
    for (const [roomID, data] of joined) {
      if (!roomID.startsWith("!") || !data || typeof data !== "object") continue;
      await this.joinedRoom(roomID, data, since, emit);
      changed.delete(roomID);
      if (!since && ++done % 25 === 0) await progress(`Loading chats and history: ${done} of ${joined.length} rooms`);
    }
    for (const [roomID, data] of Object.entries(sync.rooms?.invite ?? {}))
      if (roomID.startsWith("!")) this.invitedRoom(roomID, data?.invite_state?.events, emit);
    for (const [roomID, data] of Object.entries(sync.rooms?.leave ?? {}))
      if (roomID.startsWith("!") && data && typeof data === "object") await this.leftRoom(roomID, data, emit);
    // Rooms whose DM status or mute changed with nothing else happening in them.
    for (const roomID of changed) {
      const room = this.deps.rooms.get(roomID);
      if (room && room.membership !== "leave") this.announce(room, emit);
    }
    const results = await Promise.allSettled(pending);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  /** Applies m.direct and push rules; answers the rooms whose chat they change. */
  private accountData(events: unknown[] | undefined): Set<string> {
    const changed = new Set<string>();
    for (const raw of events ?? []) {
      const event = raw as { type?: unknown; content?: unknown };
      if (!event?.content || typeof event.content !== "object") continue;
      if (event.type === "m.direct") {
        const rooms = new Set<string>();
        const direct: Record<string, string[]> = {};
        for (const [userID, list] of Object.entries(event.content as Record<string, unknown>)) {
          if (!Array.isArray(list)) continue;
          direct[userID] = list.filter((r): r is string => typeof r === "string");
          for (const r of direct[userID]) rooms.add(r);
        }
        for (const r of new Set([...rooms, ...this.directRooms]))
          if (rooms.has(r) !== this.directRooms.has(r)) changed.add(r);
        this.direct = direct;
        this.directRooms = rooms;
      } else if (event.type === "m.push_rules") {
        const muted = mutedRooms(event.content as Record<string, unknown>);
        for (const r of new Set([...muted, ...this.muted])) if (muted.has(r) !== this.muted.has(r)) changed.add(r);
        this.muted = muted;
      }
    }
    return changed;
  }

  /** Records a new DM in the account's m.direct (what Element does after creating one). */
  async addDirect(userID: string, roomID: string): Promise<void> {
    const path = `/_matrix/client/v3/user/${seg(this.deps.selfID)}/account_data/m.direct`;
    const current = await this.deps.http
      .request<Record<string, unknown>>("GET", path)
      .catch(() => ({}) as Record<string, unknown>);
    const list = Array.isArray(current[userID])
      ? (current[userID] as unknown[]).filter((r): r is string => typeof r === "string")
      : [];
    if (!list.includes(roomID))
      await this.deps.http.request("PUT", path, { body: { ...current, [userID]: [...list, roomID] } });
    this.direct[userID] = [...list.filter((r) => r !== roomID), roomID];
    this.directRooms.add(roomID);
  }

  private isDirect(room: Room): boolean {
    return this.directRooms.has(room.id) || room.directInvite === true;
  }

  private async joinedRoom(
    roomID: string,
    data: JoinedRoom,
    since: string | undefined,
    emit: (e: InboundEvent) => void,
  ) {
    const { rooms, selfID } = this.deps;
    let room = rooms.get(roomID);
    if (!room) rooms.set(roomID, (room = newRoom(roomID, "join")));
    room.membership = "join";
    for (const raw of data.state?.events ?? []) {
      const event = parseEvent(raw, roomID);
      if (event?.state_key !== undefined) applyState(room, event, selfID);
    }
    const summary = data.summary ?? {};
    if (Array.isArray(summary["m.heroes"]))
      room.heroes = summary["m.heroes"].filter((h): h is string => typeof h === "string").slice(0, 5);
    if (typeof summary["m.joined_member_count"] === "number") room.joinedCount = summary["m.joined_member_count"];
    if (typeof summary["m.invited_member_count"] === "number") room.invitedCount = summary["m.invited_member_count"];
    for (const raw of data.account_data?.events ?? []) {
      const event = raw as { type?: unknown; content?: { tags?: unknown } };
      if (event?.type === "m.tag" && event.content?.tags && typeof event.content.tags === "object")
        room.tags = event.content.tags as Record<string, unknown>;
    }
    const timeline = await this.decrypted(
      roomID,
      (data.timeline?.events ?? [])
        .map((raw) => parseEvent(raw, roomID))
        .filter((e): e is MatrixEvent => e !== undefined),
    );
    for (const event of timeline) {
      const name =
        event.type === "m.room.member" && event.state_key && typeof event.content.displayname === "string"
          ? event.content.displayname.slice(0, 255)
          : undefined;
      if (name && !room.names.has(event.state_key!)) room.names.set(event.state_key!, name);
    }
    // Events are translated with the room as it was before them: the timeline's state changes apply one by one.
    const stateBefore = timeline.filter((e) => e.state_key !== undefined);
    if (stateBefore.length === 0) this.announce(room, emit);
    else if (!this.announced.has(roomID)) this.announce(room, emit, true);
    const prevBatch = typeof data.timeline?.prev_batch === "string" ? data.timeline.prev_batch : undefined;
    const older =
      data.timeline?.limited === true && prevBatch && !since
        ? await this.fill(roomID, prevBatch, Math.max(0, this.deps.firstBackfill - timeline.length))
        : { events: [], token: prevBatch };
    if (data.timeline?.limited === true && prevBatch && since) await this.fillGap(room, since, prevBatch, emit);
    // A first load's edits and reactions of messages older than it loaded are kept for when history reaches them.
    const loaded = since ? undefined : new Set([...older.events, ...timeline].map((e) => e.event_id));
    let oldest: string | undefined;
    const first = (e: InboundEvent) => {
      if (e.type === "message") oldest ??= e.message.networkMessageID;
      emit(e);
    };
    for (const event of older.events) this.timelineEvent(room, event, loaded ? first : emit, loaded);
    const replaced = room.replacement;
    for (const event of timeline) this.timelineEvent(room, event, loaded ? first : emit, loaded);
    if (loaded && oldest && older.token) this.deps.historyStarts?.(roomID, { oldest, token: older.token });
    if (stateBefore.length) this.announce(room, emit);
    if (room.replacement && room.replacement !== replaced) await this.follow(room, emit);
    for (const raw of data.ephemeral?.events ?? []) this.ephemeral(room, raw, emit);
    const count = data.unread_notifications?.notification_count;
    if (typeof count === "number" && count >= 0 && this.counts.get(roomID) !== count) {
      this.counts.set(roomID, count);
      emit({ type: "chat", chat: { ...this.chatOf(room), unreadCount: count } });
    }
  }

  /**
   * A room upgrade (m.room.tombstone): join the room that replaces it, as Element offers and bridges do, and
   * archive the old room's chat. The new room arrives as a chat of its own with the next sync.
   */
  private async follow(room: Room, emit: (e: InboundEvent) => void) {
    const via = room.replacement!.split(":").slice(1).join(":");
    await this.deps.http
      .request("POST", `/_matrix/client/v3/join/${seg(room.replacement!)}`, {
        body: {},
        query: via ? { server_name: via } : undefined,
      })
      .catch(() => undefined);
    emit({ type: "chat", chat: { ...this.chatOf(room), isArchived: true } });
  }

  /**
   * A gappy sync: what happened in the room between the last batch and this one's timeline, read forwards from the
   * last position and handed over page by page, so storing one page overlaps reading the next (and a long gap is
   * never held in memory: each page waits for the one before it to be stored).
   */
  private async fillGap(room: Room, since: string, until: string, emit: (e: InboundEvent) => void) {
    let token = since;
    let filled = 0;
    for (;;) {
      const page = await this.deps.http.request<{ chunk?: unknown[]; end?: unknown }>(
        "GET",
        `/_matrix/client/v3/rooms/${seg(room.id)}/messages`,
        {
          query: { from: token, to: until, dir: "f", limit: GAP_PAGE },
        },
      );
      const chunk = Array.isArray(page.chunk) ? page.chunk : [];
      const events = await this.decrypted(
        room.id,
        chunk.map((raw) => parseEvent(raw, room.id)).filter((e): e is MatrixEvent => e !== undefined),
      );
      await this.stored();
      for (const event of events) this.timelineEvent(room, event, emit);
      filled += chunk.length;
      if (typeof page.end !== "string" || chunk.length === 0 || page.end === token) return;
      if (filled >= GAP_PAGE)
        await this.deps.progress?.(`Catching up: ${filled.toLocaleString("en")} events in ${room.name ?? room.id}`);
      token = page.end;
    }
  }

  /**
   * History before a first sync's timeline, up to `max` events, oldest first (stored only once all are read), and
   * the token before the oldest of them. Whole pages are kept, so that the token is exact.
   */
  private async fill(roomID: string, from: string, max: number): Promise<{ events: MatrixEvent[]; token: string }> {
    const events: MatrixEvent[] = [];
    let token = from;
    while (events.length < max) {
      const page = await this.deps.http.request<{ chunk?: unknown[]; end?: unknown }>(
        "GET",
        `/_matrix/client/v3/rooms/${seg(roomID)}/messages`,
        {
          query: { from: token, dir: "b", limit: Math.min(GAP_PAGE, max - events.length) },
        },
      );
      const chunk = Array.isArray(page.chunk) ? page.chunk : [];
      for (const raw of chunk) {
        const event = parseEvent(raw, roomID);
        if (event) events.push(event);
      }
      if (typeof page.end !== "string" || chunk.length === 0 || page.end === token) break;
      token = page.end;
    }
    return { events: await this.decrypted(roomID, events.reverse()), token };
  }

  private decrypted(roomID: string, events: MatrixEvent[]): Promise<MatrixEvent[]> {
    if (!this.deps.decrypt || !events.some((e) => e.type === "m.room.encrypted")) return Promise.resolve(events);
    return this.deps.decrypt(roomID, events);
  }

  /** `loaded`: on a first load, the events it loaded; a relation to any other (older) event is also held. */
  private timelineEvent(room: Room, event: MatrixEvent, emit: (e: InboundEvent) => void, loaded?: Set<string>) {
    const txn = event.unsigned?.transaction_id;
    const translated = translate(event, { room, selfID: this.deps.selfID });
    if (event.state_key !== undefined) applyState(room, event, this.deps.selfID);
    // The echo of a message this client sent: the host already has it, under the ID the send returned.
    if (typeof txn === "string" && this.deps.ownEcho(txn) && translated.every((e) => e.type === "message")) return;
    for (const e of translated) {
      if (loaded && (e.type === "edit" || e.type === "reaction") && !loaded.has(e.networkMessageID))
        this.deps.hold?.(room.id, e);
      if (loaded && e.type === "delete") this.deps.hold?.(room.id, e);
      emit(e);
    }
  }

  private ephemeral(room: Room, raw: unknown, emit: (e: InboundEvent) => void) {
    const event = raw as { type?: unknown; content?: unknown };
    if (!event?.content || typeof event.content !== "object") return;
    const { selfID } = this.deps;
    if (event.type === "m.typing") {
      const ids = (event.content as { user_ids?: unknown }).user_ids;
      const now = new Set(
        Array.isArray(ids) ? ids.filter((u): u is string => typeof u === "string" && u !== selfID) : [],
      );
      const before = this.typing.get(room.id) ?? new Set<string>();
      for (const userID of now)
        if (!before.has(userID))
          emit({ type: "typing", networkChatID: room.id, senderID: userID, state: "typing", timeoutMs: 30_000 });
      for (const userID of before)
        if (!now.has(userID)) emit({ type: "typing", networkChatID: room.id, senderID: userID, state: "paused" });
      this.typing.set(room.id, now);
      return;
    }
    if (event.type !== "m.receipt") return;
    for (const [eventID, kinds] of Object.entries(event.content as Record<string, unknown>)) {
      if (!kinds || typeof kinds !== "object") continue;
      for (const [kind, readers] of Object.entries(kinds as Record<string, unknown>)) {
        if ((kind !== "m.read" && kind !== "m.read.private") || !readers || typeof readers !== "object") continue;
        for (const [userID, receipt] of Object.entries(readers as Record<string, { ts?: unknown }>)) {
          if (userID === selfID) emit({ type: "read", networkChatID: room.id, networkMessageID: eventID });
          else if (kind === "m.read") {
            // Matrix has no delivery receipts: a message someone read has reached them.
            const timestamp = typeof receipt?.ts === "number" ? receipt.ts : Date.now();
            emit({
              type: "receipt",
              networkChatID: room.id,
              networkMessageID: eventID,
              userID,
              kind: "delivered",
              timestamp,
            });
            emit({
              type: "receipt",
              networkChatID: room.id,
              networkMessageID: eventID,
              userID,
              kind: "read",
              timestamp,
            });
          }
        }
      }
    }
  }

  private invitedRoom(roomID: string, events: unknown[] | undefined, emit: (e: InboundEvent) => void) {
    const room = newRoom(roomID, "invite");
    for (const raw of events ?? []) {
      const event = parseEvent({ event_id: "", origin_server_ts: 0, ...(raw as object) }, roomID);
      if (event?.state_key !== undefined) applyState(room, event, this.deps.selfID);
    }
    const known = this.deps.rooms.get(roomID);
    if (known?.membership === "invite") return; // announced already
    this.deps.rooms.set(roomID, room);
    this.announce(room, emit);
    const inviter = room.inviter ?? "someone";
    const name = memberName(room, inviter);
    // The invitation as a message, so it shows in the chat list and notifies; answering it joins the room.
    emit({
      type: "message",
      networkChatID: roomID,
      message: {
        networkMessageID: `invite:${roomID}`,
        senderID: inviter,
        senderName: name,
        timestamp: Date.now(),
        type: "NOTICE",
        text: `${name} invited you. Send a message to join.`,
      },
    });
  }

  private async leftRoom(roomID: string, data: JoinedRoom, emit: (e: InboundEvent) => void) {
    const room = this.deps.rooms.get(roomID);
    if (!room) return; // never seen (left before this device came): nothing to show
    for (const raw of data.timeline?.events ?? []) {
      const event = parseEvent(raw, roomID);
      if (event) this.timelineEvent(room, event, emit);
    }
    room.membership = "leave";
    // Left (or removed): the chat and its history stay, archived, as a left conversation does in the desktop app.
    emit({ type: "chat", chat: { ...this.chatOf(room), isArchived: true } });
  }

  private chatOf(room: Room): NetworkChat {
    return roomChat(room, this.deps.selfID, this.deps.self(), this.isDirect(room));
  }

  /** Announces the room as a chat if anything shown changed; flags (tags, mute) only when they changed. */
  private announce(room: Room, emit: (e: InboundEvent) => void, force = false) {
    const chat = this.chatOf(room);
    const flags = {
      isPinned: "m.favourite" in room.tags,
      isLowPriority: "m.lowpriority" in room.tags,
      isMuted: this.muted.has(room.id),
    };
    const flagsJSON = JSON.stringify(flags);
    const chatJSON = JSON.stringify(chat);
    const flagsChanged = this.flags.get(room.id) !== flagsJSON;
    if (!force && !flagsChanged && this.announced.get(room.id) === chatJSON) return;
    this.announced.set(room.id, chatJSON);
    this.flags.set(room.id, flagsJSON);
    emit({ type: "chat", chat: flagsChanged ? { ...chat, ...flags } : chat });
  }
}

/** Rooms silenced by a push rule: an override or room rule for the room that does not notify (how clients mute). */
function mutedRooms(content: Record<string, unknown>): Set<string> {
  const out = new Set<string>();
  const global = content.global as { override?: unknown; room?: unknown } | undefined;
  const silent = (rule: { actions?: unknown; enabled?: unknown }) =>
    rule.enabled !== false &&
    Array.isArray(rule.actions) &&
    !rule.actions.includes("notify") &&
    !rule.actions.some(
      (a) => typeof a === "object" && a !== null && (a as { set_tweak?: unknown }).set_tweak === "sound",
    );
  for (const rule of Array.isArray(global?.room) ? global.room : [])
    if (typeof rule?.rule_id === "string" && rule.rule_id.startsWith("!") && silent(rule)) out.add(rule.rule_id);
  for (const rule of Array.isArray(global?.override) ? global.override : []) {
    const conditions = Array.isArray(rule?.conditions) ? rule.conditions : [];
    const match =
      conditions.length === 1 &&
      conditions[0]?.kind === "event_match" &&
      conditions[0]?.key === "room_id" &&
      typeof conditions[0]?.pattern === "string"
        ? conditions[0].pattern
        : undefined;
    if (match && silent(rule)) out.add(match);
  }
  return out;
}
