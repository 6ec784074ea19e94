/**
 * A sender whose room key arrives late, on purpose: a device of its own running matrix-sdk-crypto (the same Rust
 * implementation Element and matrix-js-sdk use) over the plain-HTTP peer, driven step by step so a test can send an
 * encrypted message first and the key to open it afterwards. No client library lets one hold a key share back, and
 * that order is what happens when a sender's to-device messages are delayed or a key is forwarded later.
 */
import * as Crypto from "@matrix-org/matrix-sdk-crypto-wasm";
import type { SynapseServer } from "../harness/synapse.ts";
import { enc } from "./kit.ts";
import { Peer } from "./peer.ts";

const CS = "/_matrix/client/v3";
type Outgoing =
  | Crypto.KeysUploadRequest
  | Crypto.KeysQueryRequest
  | Crypto.KeysClaimRequest
  | Crypto.ToDeviceRequest
  | Crypto.SignatureUploadRequest
  | Crypto.RoomMessageRequest
  | Crypto.KeysBackupRequest;

export class HeldKeySender {
  private constructor(
    readonly peer: Peer,
    private readonly machine: Crypto.OlmMachine,
  ) {}

  get userID(): string {
    return this.peer.userID;
  }

  static async start(
    server: SynapseServer,
    registered: { userID: string; accessToken: string; deviceID: string },
  ): Promise<HeldKeySender> {
    await Crypto.initAsync();
    const peer = await Peer.from(server, registered);
    // No store name: the machine keeps its keys in memory, for this test's life.
    const machine = await Crypto.OlmMachine.initialize(
      new Crypto.UserId(registered.userID),
      new Crypto.DeviceId(registered.deviceID),
    );
    const sender = new HeldKeySender(peer, machine);
    await sender.sendOutgoing(); // the device's keys, so the other side can check who sent the room key
    return sender;
  }

  /**
   * Sends `text` to the room encrypted with a new room key shared with `members`' devices, and keeps the share back:
   * `release` sends it. With `keyFirstTo`, the share goes to those devices alone before the message is sent (a key
   * that missed a device from the start, as when a sender's client did not know that device yet).
   */
  async sendHoldingKey(roomID: string, members: string[], text: string, keyFirstTo?: string[]) {
    const room = new Crypto.RoomId(roomID);
    // A fresh list for every call: the bindings take the IDs' ownership.
    const users = () => members.map((m) => new Crypto.UserId(m));
    await this.machine.updateTrackedUsers(users());
    await this.sendOutgoing(); // the members' device keys
    const claim = await this.machine.getMissingSessions(users());
    if (claim) await this.send(claim);
    // A new room key for each message, so each one has a share of its own to hold back.
    await this.machine.invalidateGroupSession(room);
    const shares = await this.machine.shareRoomKey(room, users(), new Crypto.EncryptionSettings());
    if (shares.length === 0) throw new Error(`no device of ${members.join(", ")} to share the room key with`);
    const content = await this.machine.encryptRoomEvent(
      room,
      "m.room.message",
      JSON.stringify({ msgtype: "m.text", body: text }),
    );
    /** Sends the held share; to `onlyDevices` of the members alone when given (a key that misses a device). */
    const release = async (onlyDevices?: string[]) => {
      for (const share of shares) {
        if (!onlyDevices || !(share instanceof Crypto.ToDeviceRequest)) {
          await this.send(share);
          continue;
        }
        const body = JSON.parse(share.body) as { messages: Record<string, Record<string, unknown>> };
        for (const devices of Object.values(body.messages))
          for (const device of Object.keys(devices)) if (!onlyDevices.includes(device)) delete devices[device];
        await this.send(share, body);
      }
    };
    if (keyFirstTo) await release(keyFirstTo);
    const eventID = await this.peer.send(roomID, JSON.parse(content), "m.room.encrypted");
    return { eventID, release };
  }

  /**
   * Sends many texts to the room encrypted with one room key, shared (not held back) first, `concurrency` sends in
   * flight: what a busy sender's client does (the benchmark's seeding). The key does not rotate meanwhile.
   */
  async sendMany(roomID: string, members: string[], texts: string[], concurrency = 16): Promise<void> {
    const room = new Crypto.RoomId(roomID);
    const users = () => members.map((m) => new Crypto.UserId(m));
    await this.machine.updateTrackedUsers(users());
    await this.sendOutgoing();
    const claim = await this.machine.getMissingSessions(users());
    if (claim) await this.send(claim);
    await this.machine.invalidateGroupSession(room);
    const settings = new Crypto.EncryptionSettings();
    settings.rotationPeriodMessages = BigInt(texts.length + 1);
    settings.rotationPeriod = BigInt(7 * 24 * 3600 * 1_000_000); // microseconds
    for (const share of await this.machine.shareRoomKey(room, users(), settings)) await this.send(share);
    const contents: string[] = [];
    for (const text of texts)
      contents.push(
        await this.machine.encryptRoomEvent(room, "m.room.message", JSON.stringify({ msgtype: "m.text", body: text })),
      );
    let next = 0;
    const lane = async () => {
      while (next < contents.length) await this.peer.send(roomID, JSON.parse(contents[next++]), "m.room.encrypted");
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
  }

  private async sendOutgoing() {
    for (const request of (await this.machine.outgoingRequests()) as Outgoing[]) await this.send(request);
  }

  private async send(request: Outgoing, body: unknown = JSON.parse(request.body)) {
    let answer: unknown;
    if (request instanceof Crypto.KeysUploadRequest)
      answer = await this.peer.request("POST", `${CS}/keys/upload`, body);
    else if (request instanceof Crypto.KeysQueryRequest)
      answer = await this.peer.request("POST", `${CS}/keys/query`, body);
    else if (request instanceof Crypto.KeysClaimRequest)
      answer = await this.peer.request("POST", `${CS}/keys/claim`, body);
    else if (request instanceof Crypto.SignatureUploadRequest)
      answer = await this.peer.request("POST", `${CS}/keys/signatures/upload`, body);
    else if (request instanceof Crypto.ToDeviceRequest)
      answer = await this.peer.request(
        "PUT",
        `${CS}/sendToDevice/${enc(request.event_type)}/${enc(request.txn_id)}`,
        body,
      );
    else throw new Error(`the held-key sender does not send ${request.constructor.name}`);
    if (request.id) await this.machine.markRequestAsSent(request.id, request.type, JSON.stringify(answer));
  }

  async close(): Promise<void> {
    this.machine.close();
    await this.peer.close();
  }
}
