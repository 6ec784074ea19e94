import type { InboundEvent, InboundMessage } from "../../bridges/connector.ts";

/** The most edits and reactions held for one account; beyond it the earliest held go first. */
const HELD_LIMIT = 1_000;

/** An edit held for a message: its text, when, and by whom. */
type HeldEdit = [text: string, timestamp: number, senderID: string];
/** A reaction held for a message: by whom, the key, and the reaction's own event ID (to take it back). */
type HeldReaction = [senderID: string, reactionKey: string, eventID: string];

/** Plain JSON, kept in the account's connector state (state.ts), so what is held survives a restart. */
export interface HeldRelationsState {
  [roomID: string]: { edits?: Record<string, HeldEdit>; reactions?: Record<string, HeldReaction[]> };
}

/**
 * Edits and reactions whose message is older than anything stored yet: a first sync carries a room's newest events,
 * reactions and edits of older messages among them, and paging back meets a relation before the message it changes.
 * The host drops such an event (it knows no message for it), so the connector keeps it until history loads the
 * message, and hands it over with it.
 */
export class HeldRelations {
  private count: number;

  constructor(readonly state: HeldRelationsState = {}) {
    this.count = Object.values(state).reduce(
      (n, room) => n + Object.keys(room.edits ?? {}).length + Object.keys(room.reactions ?? {}).length,
      0,
    );
  }

  /**
   * Edits, reactions and deletions are kept; anything else is ignored. `newer`: from a sync, oldest first, so a
   * later edit replaces the held one; `older`: from paging back, newest first, so the first edit met stays.
   */
  hold(roomID: string, event: InboundEvent, order: "newer" | "older") {
    const room = (this.state[roomID] ??= {});
    if (event.type === "edit" && event.senderID) {
      const edits = (room.edits ??= {});
      if (order === "older" && edits[event.networkMessageID]) return;
      if (!edits[event.networkMessageID]) this.count++;
      edits[event.networkMessageID] = [event.text, event.timestamp, event.senderID];
    } else if (event.type === "reaction" && !event.removed && event.networkReactionID) {
      const reactions = (room.reactions ??= {});
      const list = reactions[event.networkMessageID];
      if (!list) this.count++;
      if (list?.some(([sender, key]) => sender === event.senderID && key === event.reactionKey)) return;
      reactions[event.networkMessageID] = [
        ...(list ?? []),
        [event.senderID, event.reactionKey, event.networkReactionID],
      ];
    } else if (event.type === "delete" && order === "newer")
      this.forgetReaction(roomID, event.networkMessageID, event.senderID);
    this.trim();
  }

  /** The message with what was held for it; an edit counts only from the message's own sender (as a live edit). */
  attach(roomID: string, message: InboundMessage): InboundMessage {
    const room = this.state[roomID];
    const id = message.networkMessageID;
    const edit = room?.edits?.[id];
    const reactions = room?.reactions?.[id];
    if (!edit && !reactions) return message;
    if (edit) delete room!.edits![id];
    if (reactions) delete room!.reactions![id];
    this.count -= Number(!!edit) + Number(!!reactions);
    const edited = edit && edit[2] === message.senderID ? { text: edit[0], editedTimestamp: edit[1] } : {};
    const reacted = reactions?.length
      ? {
          reactions: reactions.map(([senderID, reactionKey, networkReactionID]) => ({
            senderID,
            reactionKey,
            networkReactionID,
          })),
        }
      : {};
    return { ...message, ...edited, ...reacted };
  }

  /** A room whose history is read to its start: what is still held there has no message to wait for. */
  drop(roomID: string) {
    const room = this.state[roomID];
    if (!room) return;
    this.count -= Object.keys(room.edits ?? {}).length + Object.keys(room.reactions ?? {}).length;
    delete this.state[roomID];
  }

  /** A redaction of a held reaction by its sender takes it back (a redaction by anyone else is not applied). */
  private forgetReaction(roomID: string, eventID: string, senderID: string | undefined) {
    const reactions = this.state[roomID]?.reactions;
    for (const [target, list] of Object.entries(reactions ?? {})) {
      const rest = list.filter(([sender, , id]) => id !== eventID || (senderID !== undefined && sender !== senderID));
      if (rest.length === list.length) continue;
      if (rest.length) reactions![target] = rest;
      else {
        delete reactions![target];
        this.count--;
      }
      return;
    }
  }

  private trim() {
    for (const roomID of Object.keys(this.state)) {
      if (this.count <= HELD_LIMIT) return;
      const room = this.state[roomID];
      for (const kind of ["edits", "reactions"] as const)
        for (const target of Object.keys(room[kind] ?? {})) {
          if (this.count <= HELD_LIMIT) return;
          delete room[kind]![target];
          this.count--;
        }
      if (!Object.keys(room.edits ?? {}).length && !Object.keys(room.reactions ?? {}).length) delete this.state[roomID];
    }
  }
}
