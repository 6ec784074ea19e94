import { randomUUID } from "node:crypto";
import type { SynapseServer } from "../harness/synapse.ts";

const DEFAULT_WAIT_MS = 10_000;
const CS = "/_matrix/client/v3";
/** The long poll: /sync answers at once when something happens, so this only bounds an idle request. */
const SYNC_TIMEOUT_MS = 10_000;
// A high timeline limit: a gap (`limited: true`) would silently drop events a test waits for, e.g. when many
// arrive before the first wait starts the loop.
const SYNC_FILTER = JSON.stringify({ room: { timeline: { limit: 500 } } });

/** A Matrix error answer: the HTTP status and the `errcode` (M_FORBIDDEN, M_LIMIT_EXCEEDED, …) are kept. */
export class MatrixError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly errcode: string | undefined,
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** Items handed to one wait each, whether they arrived before the wait began or after (like test/xmpp/peer.ts). */
class Mailbox<T> {
  private readonly unclaimed: T[] = [];
  private readonly waiters: {
    match: (item: T) => boolean;
    resolve: (item: T) => void;
    reject: (error: Error) => void;
  }[] = [];

  constructor(private readonly describe: (item: T) => string) {}

  deliver(item: T): void {
    const index = this.waiters.findIndex((waiter) => waiter.match(item));
    if (index < 0) this.unclaimed.push(item);
    else this.waiters.splice(index, 1)[0].resolve(item);
  }

  take(match: (item: T) => boolean, timeoutMs: number, failure: (unclaimed: string) => string): Promise<T> {
    const index = this.unclaimed.findIndex(match);
    if (index >= 0) return Promise.resolve(this.unclaimed.splice(index, 1)[0]);
    return new Promise((resolve, reject) => {
      const waiter = {
        match,
        resolve: (item: T) => (clearTimeout(timer), resolve(item)),
        reject: (error: Error) => (clearTimeout(timer), reject(error)),
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        const lines = this.unclaimed.slice(-20).map((item) => `  ${this.describe(item).slice(0, 400)}`);
        reject(new Error(failure(lines.join("\n") || "  (nothing)")));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  cancel(error: Error): void {
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }
}

interface RoomItem {
  event: any;
  roomID: string;
}

/**
 * A second party for connector tests: a plain-HTTP Matrix client acting as another person on a real homeserver.
 * It does nothing on its own (no receipts, no auto-join); what it receives comes from a /sync loop that starts at
 * the first wait, from the position /sync had when the peer was made, so nothing sent in between is missed and
 * nothing from before counts.
 */
export class Peer {
  private readonly events = new Mailbox<RoomItem>((item) => `${item.roomID} ${JSON.stringify(item.event)}`);
  private readonly ephemeral = new Mailbox<RoomItem>((item) => `${item.roomID} ${JSON.stringify(item.event)}`);
  private readonly invites = new Mailbox<{ roomID: string; state: any[] }>((item) => `invite to ${item.roomID}`);
  private readonly errors: string[] = [];
  private readonly abort = new AbortController();
  private since?: string;
  private loop?: Promise<void>;
  private closed = false;

  private constructor(
    private readonly server: SynapseServer,
    readonly userID: string,
    readonly accessToken: string,
    readonly deviceID: string,
  ) {}

  static async login(server: SynapseServer, localpart: string, password: string): Promise<Peer> {
    const anonymous = new Peer(server, "", "", "");
    const result = await anonymous.request("POST", `${CS}/login`, {
      type: "m.login.password",
      identifier: { type: "m.id.user", user: localpart },
      password,
      initial_device_display_name: "inboxd test peer",
    });
    return Peer.from(server, { userID: result.user_id, accessToken: result.access_token, deviceID: result.device_id });
  }

  static async from(
    server: SynapseServer,
    registered: { userID: string; accessToken: string; deviceID: string },
  ): Promise<Peer> {
    const peer = new Peer(server, registered.userID, registered.accessToken, registered.deviceID);
    // One /sync now fixes the starting point; pending invites count (an invite is waited for as a state, not news).
    const initial = await peer.request("GET", `${CS}/sync`, undefined, {
      filter: JSON.stringify({ room: { timeline: { limit: 1 } } }),
    });
    peer.since = initial.next_batch;
    peer.ingestInvites(initial);
    return peer;
  }

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    query?: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<T> {
    const url = new URL(path, this.server.url);
    for (const [key, value] of Object.entries(query ?? {})) url.searchParams.set(key, value);
    const headers: Record<string, string> = this.accessToken ? { authorization: `Bearer ${this.accessToken}` } : {};
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    const text = await response.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      // not JSON: keep the text for the error message
    }
    if (!response.ok) {
      const who = this.userID || "(logging in)";
      throw new MatrixError(
        `${who}: ${method} ${url.pathname} answered ${response.status} ${parsed?.errcode ?? ""}: ${parsed?.error ?? text}`,
        response.status,
        parsed?.errcode,
        parsed,
      );
    }
    return parsed as T;
  }

  async createRoom(
    options: {
      invite?: string[];
      isDirect?: boolean;
      name?: string;
      preset?: string;
      encrypted?: boolean;
      initialState?: unknown[];
    } = {},
  ): Promise<string> {
    const initialState = [...(options.initialState ?? [])];
    if (options.encrypted)
      initialState.push({ type: "m.room.encryption", state_key: "", content: { algorithm: "m.megolm.v1.aes-sha2" } });
    const { room_id: roomID } = await this.request("POST", `${CS}/createRoom`, {
      invite: options.invite ?? [],
      is_direct: !!options.isDirect,
      name: options.name,
      // What Element uses: a DM makes both people admins; other rooms are invite-only.
      preset: options.preset ?? (options.isDirect ? "trusted_private_chat" : "private_chat"),
      initial_state: initialState,
    });
    if (options.isDirect) {
      // Clients, not the server, keep the m.direct map (user ID → DM room IDs); Synapse does not touch it.
      const path = `${CS}/user/${enc(this.userID)}/account_data/m.direct`;
      const direct: Record<string, string[]> = await this.request("GET", path).catch((error) => {
        if (error instanceof MatrixError && error.status === 404) return {};
        throw error;
      });
      for (const user of options.invite ?? []) direct[user] = [...new Set([...(direct[user] ?? []), roomID])];
      await this.request("PUT", path, direct);
    }
    return roomID;
  }

  async join(roomIDOrAlias: string): Promise<string> {
    return (await this.request("POST", `${CS}/join/${enc(roomIDOrAlias)}`, {})).room_id;
  }

  async leave(roomID: string): Promise<void> {
    await this.request("POST", `${CS}/rooms/${enc(roomID)}/leave`, {});
  }

  async invite(roomID: string, userID: string): Promise<void> {
    await this.request("POST", `${CS}/rooms/${enc(roomID)}/invite`, { user_id: userID });
  }

  /** A fresh transaction ID each time: reusing one makes Synapse answer with the earlier event instead. */
  async send(roomID: string, content: Record<string, unknown>, type = "m.room.message"): Promise<string> {
    return (await this.request("PUT", `${CS}/rooms/${enc(roomID)}/send/${enc(type)}/${randomUUID()}`, content))
      .event_id;
  }

  text(roomID: string, body: string, extra: Record<string, unknown> = {}): Promise<string> {
    return this.send(roomID, { msgtype: "m.text", body, ...extra });
  }

  /** A rich reply with the quoted fallback that clients of Matrix ≤ v1.12 put in body and formatted_body. */
  async reply(roomID: string, toEventID: string, body: string): Promise<string> {
    const original = await this.request("GET", `${CS}/rooms/${enc(roomID)}/event/${enc(toEventID)}`);
    const quoted = String(original.content?.body ?? "");
    const link = (target: string) => `https://matrix.to/#/${target}`;
    return this.send(roomID, {
      msgtype: "m.text",
      body: `${quoted
        .split("\n")
        .map((line, i) => (i === 0 ? `> <${original.sender}> ${line}` : `> ${line}`))
        .join("\n")}\n\n${body}`,
      format: "org.matrix.custom.html",
      formatted_body:
        `<mx-reply><blockquote><a href="${link(`${roomID}/${toEventID}`)}">In reply to</a> ` +
        `<a href="${link(original.sender)}">${html(original.sender)}</a><br>${html(quoted)}</blockquote></mx-reply>${html(body)}`,
      "m.relates_to": { "m.in_reply_to": { event_id: toEventID } },
    });
  }

  edit(roomID: string, eventID: string, newBody: string): Promise<string> {
    return this.send(roomID, {
      msgtype: "m.text",
      body: `* ${newBody}`,
      "m.new_content": { msgtype: "m.text", body: newBody },
      "m.relates_to": { rel_type: "m.replace", event_id: eventID },
    });
  }

  react(roomID: string, eventID: string, key: string): Promise<string> {
    return this.send(roomID, { "m.relates_to": { rel_type: "m.annotation", event_id: eventID, key } }, "m.reaction");
  }

  async redact(roomID: string, eventID: string, reason?: string): Promise<string> {
    const path = `${CS}/rooms/${enc(roomID)}/redact/${enc(eventID)}/${randomUUID()}`;
    return (await this.request("PUT", path, reason === undefined ? {} : { reason })).event_id;
  }

  async upload(bytes: Uint8Array, contentType: string, fileName?: string): Promise<string> {
    const url = new URL("/_matrix/media/v3/upload", this.server.url);
    if (fileName) url.searchParams.set("filename", fileName);
    const response = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${this.accessToken}`, "content-type": contentType },
      body: bytes as Uint8Array<ArrayBuffer>,
    });
    const result = await response.json().catch(() => ({}));
    if (!response.ok)
      throw new MatrixError(
        `${this.userID}: upload answered ${response.status} ${JSON.stringify(result)}`,
        response.status,
        result.errcode,
        result,
      );
    return result.content_uri;
  }

  /** Synapse 1.67 predates authenticated media (/_matrix/client/v1/media, spec v1.11): the v3 route it is. */
  async download(mxc: string): Promise<Uint8Array> {
    const match = /^mxc:\/\/([^/]+)\/([^/?#]+)$/.exec(mxc);
    if (!match) throw new Error(`not an mxc:// URI: ${mxc}`);
    const response = await fetch(
      new URL(`/_matrix/media/v3/download/${enc(match[1])}/${enc(match[2])}`, this.server.url),
      {
        headers: { authorization: `Bearer ${this.accessToken}` },
      },
    );
    if (!response.ok)
      throw new MatrixError(
        `${this.userID}: download ${mxc} answered ${response.status} ${await response.text()}`,
        response.status,
        undefined,
        undefined,
      );
    return new Uint8Array(await response.arrayBuffer());
  }

  async sendImage(
    roomID: string,
    bytes: Uint8Array,
    options: { mimeType: string; fileName: string; width?: number; height?: number },
  ): Promise<string> {
    const url = await this.upload(bytes, options.mimeType, options.fileName);
    const info = { mimetype: options.mimeType, size: bytes.byteLength, w: options.width, h: options.height };
    return this.send(roomID, { msgtype: "m.image", body: options.fileName, filename: options.fileName, url, info });
  }

  async typing(roomID: string, typing: boolean, timeoutMs = 30_000): Promise<void> {
    await this.request(
      "PUT",
      `${CS}/rooms/${enc(roomID)}/typing/${enc(this.userID)}`,
      typing ? { typing, timeout: timeoutMs } : { typing },
    );
  }

  async receipt(roomID: string, eventID: string): Promise<void> {
    await this.request("POST", `${CS}/rooms/${enc(roomID)}/receipt/m.read/${enc(eventID)}`, {});
  }

  async setState(roomID: string, type: string, stateKey: string, content: unknown): Promise<string> {
    return (await this.request("PUT", `${CS}/rooms/${enc(roomID)}/state/${enc(type)}/${enc(stateKey)}`, content))
      .event_id;
  }

  async tags(roomID: string): Promise<Record<string, unknown>> {
    return (await this.request("GET", `${CS}/user/${enc(this.userID)}/rooms/${enc(roomID)}/tags`)).tags ?? {};
  }

  async setDisplayName(name: string): Promise<void> {
    await this.request("PUT", `${CS}/profile/${enc(this.userID)}/displayname`, { displayname: name });
  }

  /** Newest first (`dir=b`). */
  async messages(roomID: string, limit = 50): Promise<any[]> {
    return (
      await this.request("GET", `${CS}/rooms/${enc(roomID)}/messages`, undefined, { dir: "b", limit: String(limit) })
    ).chunk;
  }

  /** A timeline event of any room this peer is (or was just) in; each event satisfies one wait only. */
  async waitForEvent(
    match: (event: any, roomID: string) => boolean,
    timeoutMs = DEFAULT_WAIT_MS,
  ): Promise<{ event: any; roomID: string }> {
    this.startSync();
    return this.events.take(
      (item) => match(item.event, item.roomID),
      timeoutMs,
      (unclaimed) => this.timedOut("room event", timeoutMs, unclaimed),
    );
  }

  /** Typing notifications and receipts (`m.typing`, `m.receipt`), the same way. */
  async waitForEphemeral(
    match: (event: any, roomID: string) => boolean,
    timeoutMs = DEFAULT_WAIT_MS,
  ): Promise<{ event: any; roomID: string }> {
    this.startSync();
    return this.ephemeral.take(
      (item) => match(item.event, item.roomID),
      timeoutMs,
      (unclaimed) => this.timedOut("ephemeral event", timeoutMs, unclaimed),
    );
  }

  /** Resolves with the room ID of a pending invite (its stripped state is what `match` sees). */
  async waitForInvite(
    match: (roomID: string, state: any[]) => boolean = () => true,
    timeoutMs = DEFAULT_WAIT_MS,
  ): Promise<string> {
    this.startSync();
    const item = await this.invites.take(
      (i) => match(i.roomID, i.state),
      timeoutMs,
      (unclaimed) => this.timedOut("invite", timeoutMs, unclaimed),
    );
    return item.roomID;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.abort.abort();
    await this.loop;
    const error = new Error(`${this.userID}: peer closed while waiting`);
    for (const mailbox of [this.events, this.ephemeral, this.invites]) mailbox.cancel(error);
  }

  private timedOut(what: string, timeoutMs: number, unclaimed: string): string {
    const errors = this.errors.slice(-5).map((error) => `  (sync error) ${error}`);
    return `${this.userID}: no matching ${what} within ${timeoutMs} ms; unclaimed so far:\n${[unclaimed, ...errors].join("\n")}`;
  }

  private startSync(): void {
    if (this.closed) throw new Error(`${this.userID}: peer is closed`);
    this.loop ??= this.syncLoop();
  }

  /** Survives a homeserver restart or kill: the `since` token stays valid, so the loop resumes where it was. */
  private async syncLoop(): Promise<void> {
    while (!this.closed) {
      try {
        const query = {
          filter: SYNC_FILTER,
          timeout: String(SYNC_TIMEOUT_MS),
          ...(this.since ? { since: this.since } : {}),
        };
        const body = await this.request("GET", `${CS}/sync`, undefined, query, this.abort.signal);
        this.since = body.next_batch;
        this.ingest(body);
      } catch (error) {
        if (this.closed) return;
        this.errors.push(String(error));
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  private ingest(body: any): void {
    // Left rooms count too: a kick or ban of this peer arrives there, not under `join`.
    for (const section of ["join", "leave"]) {
      for (const [roomID, room] of Object.entries<any>(body.rooms?.[section] ?? {})) {
        for (const event of room.timeline?.events ?? []) this.events.deliver({ event, roomID });
        for (const event of room.ephemeral?.events ?? []) this.ephemeral.deliver({ event, roomID });
      }
    }
    this.ingestInvites(body);
  }

  private ingestInvites(body: any): void {
    for (const [roomID, room] of Object.entries<any>(body.rooms?.invite ?? {}))
      this.invites.deliver({ roomID, state: room.invite_state?.events ?? [] });
  }
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

function html(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/\n/g, "<br>");
}
