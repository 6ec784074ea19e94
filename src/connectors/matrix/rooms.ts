import type { NetworkChat } from "../../bridges/connector.ts";
import type { User } from "../../schema/wire.ts";
import type { MatrixEvent } from "./event.ts";

export interface Member {
  membership: string;
  displayName?: string;
  avatarURL?: string;
}

/** What the connector knows of one room: built from its state events, the sync summary and the account's data. */
export interface Room {
  id: string;
  membership: "join" | "invite" | "leave";
  name?: string;
  canonicalAlias?: string;
  avatarURL?: string;
  encrypted: boolean;
  /** The m.room.encryption content (algorithm, rotation periods), once the room is encrypted. */
  encryption?: Record<string, unknown>;
  /** m.room.history_visibility: who an encrypted message's key is shared with ("joined": joined members only). */
  historyVisibility?: string;
  /** The room that replaced this one (m.room.tombstone). */
  replacement?: string;
  members: Map<string, Member>;
  /**
   * Display names seen in any member event of the room, also ones later in the timeline being read: the room's
   * creation comes before its creator's join, and is shown with the name the creator joins with.
   */
  names: Map<string, string>;
  heroes?: string[];
  joinedCount?: number;
  invitedCount?: number;
  /** Our own membership event said is_direct (an invite to a DM carries it). */
  directInvite?: boolean;
  tags: Record<string, unknown>;
  notificationCount?: number;
  /** Who invited us (invites only). */
  inviter?: string;
}

export function newRoom(id: string, membership: Room["membership"]): Room {
  return { id, membership, encrypted: false, members: new Map(), names: new Map(), tags: {} };
}

/** Applies one state event (from the state block, the timeline or an invite's stripped state). */
export function applyState(room: Room, event: MatrixEvent, selfID: string): void {
  const content = event.content;
  const text = (key: string) => (typeof content[key] === "string" ? (content[key] as string) : undefined);
  switch (event.type) {
    case "m.room.name":
      room.name = text("name")?.slice(0, 255) || undefined;
      break;
    case "m.room.canonical_alias":
      room.canonicalAlias = text("alias")?.slice(0, 255) || undefined;
      break;
    case "m.room.avatar":
      room.avatarURL = text("url")?.startsWith("mxc://") ? text("url") : undefined;
      break;
    case "m.room.encryption":
      // Encryption cannot be turned off again: a later event only changes its settings.
      if (text("algorithm")) {
        room.encrypted = true;
        room.encryption = content;
      }
      break;
    case "m.room.history_visibility":
      room.historyVisibility = text("history_visibility");
      break;
    case "m.room.tombstone":
      room.replacement = text("replacement_room")?.startsWith("!") ? text("replacement_room") : undefined;
      break;
    case "m.room.member": {
      const userID = event.state_key;
      if (typeof userID !== "string" || !userID.startsWith("@")) break;
      const membership = text("membership") ?? "leave";
      const displayName = text("displayname")?.slice(0, 255) || undefined;
      room.members.set(userID, {
        membership,
        displayName,
        avatarURL: text("avatar_url")?.startsWith("mxc://") ? text("avatar_url") : undefined,
      });
      if (displayName) room.names.set(userID, displayName);
      if (userID === selfID && content.is_direct === true) room.directInvite = true;
      if (userID === selfID && membership === "invite") room.inviter = event.sender;
      break;
    }
  }
}

/** The spec's display name of a member: the display name, made unique with the user ID where two members share it. */
export function memberName(room: Room, userID: string): string {
  const member = room.members.get(userID);
  const name = member ? member.displayName : room.names.get(userID);
  if (!name) return userID;
  for (const [other, member] of room.members)
    if (other !== userID && member.displayName === name && member.membership === "join") return `${name} (${userID})`;
  return name;
}

export function memberUser(room: Room, userID: string, selfID: string): User {
  const member = room.members.get(userID);
  return {
    id: userID,
    username: userID,
    ...(member?.displayName ? { fullName: member.displayName } : {}),
    ...(member?.avatarURL ? { imgURL: member.avatarURL } : {}),
    ...(userID === selfID ? { isSelf: true } : {}),
  };
}

/**
 * The room's name by the spec's rules ("Calculating the display name for a room"): m.room.name, then the canonical
 * alias, then the heroes (other members) — "Bob", "Bob and Carol", "Bob, Carol and 3 others" — and "Empty Room"
 * (with "was …" when everyone else left).
 */
export function roomTitle(room: Room, selfID: string): string {
  if (room.name) return room.name;
  if (room.canonicalAlias) return room.canonicalAlias;
  const heroes = (room.heroes ?? otherMembers(room, selfID).slice(0, 5)).filter((id) => id !== selfID);
  const joined = room.joinedCount ?? count(room, "join");
  const invited = room.invitedCount ?? count(room, "invite");
  const names = heroes.map((id) => memberName(room, id));
  if (names.length === 0) return "Empty Room";
  const others = joined + invited - 1 - names.length;
  const list =
    others > 0
      ? `${names.join(", ")} and ${others} other${others === 1 ? "" : "s"}`
      : names.length === 1
        ? names[0]
        : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return joined + invited <= 1 ? `Empty Room (was ${list})` : list;
}

function otherMembers(room: Room, selfID: string): string[] {
  return [...room.members.entries()]
    .filter(([id, m]) => id !== selfID && (m.membership === "join" || m.membership === "invite"))
    .map(([id]) => id)
    .sort();
}

function count(room: Room, membership: string): number {
  let n = 0;
  for (const member of room.members.values()) if (member.membership === membership) n++;
  return n;
}

/** How many participants a chat lists at most (the rest are counted in `participantCount`). */
export const MAX_PARTICIPANTS = 200;

/** The room as a chat: single when the account's m.direct lists it (or our invite said is_direct), group otherwise. */
export function roomChat(room: Room, selfID: string, self: User, direct: boolean): NetworkChat {
  const present = otherMembers(room, selfID);
  const participants = [self, ...present.slice(0, MAX_PARTICIPANTS - 1).map((id) => memberUser(room, id, selfID))];
  const total = (room.joinedCount ?? count(room, "join")) + (room.invitedCount ?? count(room, "invite"));
  const chat: NetworkChat = {
    networkChatID: room.id,
    type: direct ? "single" : "group",
    title: roomTitle(room, selfID),
    participants,
    imgURL: room.avatarURL ?? "",
  };
  if (total > participants.length) chat.participantCount = total;
  // A DM without a picture of its own shows the other person's, as Element does.
  if (!room.avatarURL && direct && participants[1]?.imgURL) chat.imgURL = participants[1].imgURL;
  return chat;
}
