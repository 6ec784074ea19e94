import type { ConnectorHost } from "../../bridges/connector.ts";
import type { MatrixEvent } from "./event.ts";

/**
 * Networks bridged into Matrix, shown as themselves: a room that carries bridge state (MSC2346's `m.bridge`, or the
 * older `uk.half-shot.bridge` of matrix-appservice-bridge) belongs to an account of its own per bridged network
 * under the Matrix login ("WhatsApp", "Signal"…), as the desktop app shows them; everything else stays with the
 * Matrix account. A bridge bot's direct room (where one logs in to the bridge and gets its notices) goes to that
 * network's account too, archived, so it is out of the inbox.
 *
 * A room's account is decided once, the first time it is seen, and kept (a chat never moves between accounts):
 * rooms of the account's first sync and rooms joined later. A room that gains bridge state afterwards (a room
 * plumbed into another network) stays where it was.
 */

/** A bridged network as its bridge describes it. */
export interface BridgedNetwork {
  /** The protocol's ID (`whatsapp`, `signal`…): part of its account's remote ID. */
  id: string;
  /** Its display name: the account's network name. */
  name: string;
  avatarURL?: string;
  /** The bridge bots seen for it. */
  bots: string[];
}

/** What the Matrix account keeps of its bridged networks (MatrixState.synced.bridges). */
export interface BridgesState {
  /** Room ID → the protocol whose account shows it. */
  rooms: Record<string, string>;
  networks: Record<string, BridgedNetwork>;
  /** Bot rooms, archived when first shown. */
  management: string[];
  /** Protocols whose account could not be added (the bridge's account limit): their rooms stay with Matrix. */
  refused: string[];
}

export const emptyBridges = (): BridgesState => ({ rooms: {}, networks: {}, management: [], refused: [] });

/** The most bridged networks one Matrix login shows as accounts of their own; rooms of more stay with Matrix. */
export const MAX_NETWORKS = 30;

export const BRIDGE_STATE_TYPES = new Set(["m.bridge", "uk.half-shot.bridge"]);
const PROTOCOL_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The bridged network a bridge state event describes, if it is well-formed. */
export function bridgedNetworkOf(event: MatrixEvent): BridgedNetwork | undefined {
  if (!BRIDGE_STATE_TYPES.has(event.type) || event.state_key === undefined) return undefined;
  const protocol = event.content.protocol as Record<string, unknown> | undefined;
  if (!protocol || typeof protocol !== "object" || typeof protocol.id !== "string") return undefined;
  const id = protocol.id.toLowerCase();
  if (!PROTOCOL_ID.test(id)) return undefined;
  // Only a bridge's own bot says a room is bridged: anyone else in a room could claim any network (and any bot).
  const bot = event.content.bridgebot;
  if (typeof bot !== "string" || !bot.startsWith("@") || event.sender !== bot) return undefined;
  const text = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim().slice(0, 100) : undefined);
  const avatar = text(protocol.avatar_url);
  return {
    id,
    name: text(protocol.displayname) ?? id,
    ...(avatar?.startsWith("mxc://") ? { avatarURL: avatar } : {}),
    bots: [bot],
  };
}

export function readBridgesState(value: unknown): BridgesState | null | undefined {
  if (value === null) return null;
  if (!value || typeof value !== "object") return undefined;
  const v = value as Partial<BridgesState>;
  const strings = (list: unknown) =>
    Array.isArray(list) ? list.filter((x): x is string => typeof x === "string") : [];
  const rooms: Record<string, string> = {};
  for (const [room, protocol] of Object.entries(v.rooms ?? {}))
    if (typeof protocol === "string") rooms[room] = protocol;
  const networks: Record<string, BridgedNetwork> = {};
  for (const [id, n] of Object.entries(v.networks ?? {}))
    if (n && typeof n === "object" && typeof n.name === "string")
      networks[id] = {
        id,
        name: n.name,
        ...(typeof n.avatarURL === "string" ? { avatarURL: n.avatarURL } : {}),
        bots: strings(n.bots),
      };
  return { rooms, networks, management: strings(v.management), refused: strings(v.refused) };
}

/**
 * Where the accounts of one Matrix login meet: the Matrix account's client runs the sync; each bridged network's
 * account joins here with its host, so the Matrix client can hand that network's rooms to it. Accounts load in any
 * order (at start, or when the Matrix client adds one), so either side may come first.
 */
export class LoginHosts {
  private readonly hosts = new Map<string, Map<string, ConnectorHost>>();
  private readonly waiters = new Set<() => void>();
  /** The Matrix client of each login, told of each account that joins (it tells the account how the login stands). */
  private readonly joined = new Map<string, (host: ConnectorHost) => void>();

  join(loginID: string, protocol: string, host: ConnectorHost): void {
    if (!this.hosts.has(loginID)) this.hosts.set(loginID, new Map());
    this.hosts.get(loginID)!.set(protocol, host);
    this.joined.get(loginID)?.(host);
    for (const wake of this.waiters) wake();
  }

  onJoin(loginID: string, listener: (host: ConnectorHost) => void): void {
    this.joined.set(loginID, listener);
  }

  leave(loginID: string, protocol: string, host: ConnectorHost): void {
    const hosts = this.hosts.get(loginID);
    if (hosts?.get(protocol) === host) hosts.delete(protocol);
  }

  host(loginID: string, protocol: string): ConnectorHost | undefined {
    return this.hosts.get(loginID)?.get(protocol);
  }

  members(loginID: string): ConnectorHost[] {
    return [...(this.hosts.get(loginID)?.values() ?? [])];
  }

  /** Resolves true once the network's account has joined, false after `timeoutMs`. */
  wait(loginID: string, protocol: string, timeoutMs: number): Promise<boolean> {
    if (this.host(loginID, protocol)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (joined: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(joined);
      };
      const check = () => this.host(loginID, protocol) && done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.waiters.add(check);
    });
  }
}

/** A room of a sync answer, as the pre-scan reads it (before any of it is applied). */
interface RawRoom {
  state?: { events?: unknown[] };
  timeline?: { events?: unknown[] };
}

/**
 * Decides which account shows each room a sync brings that has none yet. `known(roomID)` says whether the room was
 * seen before (in this run); `firstSync` whether this is the account's very first sync. Returns the protocols
 * whose rooms this batch brings (their accounts must be there before the batch is applied).
 */
export function assignRooms(
  bridges: BridgesState,
  joined: Record<string, RawRoom>,
  options: { selfID: string; firstSync: boolean; known: (roomID: string) => string | undefined },
): Set<string> {
  const events = (room: RawRoom) =>
    [...(room.state?.events ?? []), ...(room.timeline?.events ?? [])].filter(
      (e): e is MatrixEvent => !!e && typeof e === "object" && typeof (e as MatrixEvent).type === "string",
    );
  // Bridge state first, of every room: a bot's room may come before the rooms that name the bot.
  const bridgeOf = new Map<string, BridgedNetwork>();
  for (const [roomID, room] of Object.entries(joined)) {
    for (const event of events(room)) {
      const network = bridgedNetworkOf(event);
      if (!network) continue;
      const known = bridges.networks[network.id];
      if (!known && Object.keys(bridges.networks).length >= MAX_NETWORKS * 2) continue;
      bridgeOf.set(roomID, network);
      bridges.networks[network.id] = {
        ...network,
        bots: [...new Set([...(known?.bots ?? []), ...network.bots])].slice(0, 20),
      };
    }
  }
  const inUse = new Set(Object.values(bridges.rooms));
  const botNetwork = new Map<string, string>();
  for (const network of Object.values(bridges.networks))
    for (const bot of network.bots) botNetwork.set(bot, network.id);
  const touched = new Set<string>();
  for (const [roomID, room] of Object.entries(joined)) {
    const assigned = bridges.rooms[roomID];
    if (assigned) {
      touched.add(assigned);
      continue;
    }
    // Only a room seen for the first time gets an account of a bridged network (see above): one of the first
    // sync, or one joined just now (its timeline has the join: not a profile change, a join after another
    // membership), which at most was an invitation before.
    const joinedNow = (room.timeline?.events ?? []).some((raw) => {
      const e = raw as MatrixEvent;
      const before = (e?.unsigned?.prev_content as { membership?: unknown } | undefined)?.membership;
      return (
        e?.type === "m.room.member" &&
        e.state_key === options.selfID &&
        e.content?.membership === "join" &&
        before !== "join"
      );
    });
    const before = options.known(roomID);
    const isNew = options.firstSync || (joinedNow && (before === undefined || before === "invite"));
    if (!isNew) continue;
    const network = bridgeOf.get(roomID)?.id ?? managementNetwork(events(room), options.selfID, botNetwork);
    if (!network || bridges.refused.includes(network)) continue;
    // A login shows at most so many networks (the bridge's account limit would refuse more anyway).
    if (!inUse.has(network) && inUse.size >= MAX_NETWORKS) continue;
    inUse.add(network);
    bridges.rooms[roomID] = network;
    if (!bridgeOf.has(roomID)) bridges.management.push(roomID);
    touched.add(network);
  }
  return touched;
}

/** The network whose bot is the only other member of a room with no bridge state: the bot's management room. */
function managementNetwork(events: MatrixEvent[], selfID: string, bots: Map<string, string>): string | undefined {
  const members = new Map<string, string>();
  for (const e of events)
    if (e.type === "m.room.member" && typeof e.state_key === "string")
      members.set(e.state_key, String(e.content.membership));
  const others = [...members].filter(([id, m]) => id !== selfID && (m === "join" || m === "invite"));
  return others.length === 1 ? bots.get(others[0][0]) : undefined;
}
