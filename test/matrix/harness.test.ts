import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSynapse, synapseSource, type SynapseServer } from "../harness/synapse.ts";
import { MatrixError, Peer } from "./peer.ts";

// Without the Synapse source a developer's run skips this suite and says why; CI must never skip it silently,
// so there the suite fails with the same explanation.
const source = synapseSource();
const missing = "missing" in source ? source.missing : undefined;
const skip = missing !== undefined && process.env.CI !== "true";
if (skip) console.warn(`Skipping the Synapse harness tests: ${missing}`);

// Proves the Matrix test harness itself: a real Synapse and plain-HTTP clients acting as other people.
(skip ? describe.skip : describe)("Synapse harness and Matrix peers", () => {
  let server: SynapseServer;
  let alice: Peer;
  let bob: Peer;
  let dm: string;
  const peers: Peer[] = [];
  const track = (peer: Peer) => (peers.push(peer), peer);
  const message = (body: string, room?: string) => (event: any, roomID: string) =>
    event.type === "m.room.message" && event.content?.body === body && (room === undefined || roomID === room);

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    server = await startSynapse();
    alice = track(await Peer.from(server, await server.register("alice", "alice-password", { displayName: "Alice" })));
    bob = track(await Peer.from(server, await server.register("bob", "bob-password", { displayName: "Bob" })));
  });

  afterAll(async () => {
    await Promise.all(peers.map((peer) => peer.close()));
    await server?.close();
  });

  it("runs Synapse under its own PID and answers /versions", async () => {
    expect(server.pid()).toBeGreaterThan(0);
    expect(server.pid()).not.toBe(process.pid);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    const response = await fetch(`${server.url}/_matrix/client/versions`);
    expect(response.status).toBe(200);
    expect((await response.json()).versions).toContain("v1.2");
  });

  it("registers users with the shared secret, logged in on a device, and logs them in again by password", async () => {
    expect(alice.userID).toBe(`@alice:${server.serverName}`);
    expect(alice.deviceID).toMatch(/^[A-Z]+$/);
    const whoami = await bob.request("GET", "/_matrix/client/v3/account/whoami");
    expect(whoami).toMatchObject({ user_id: "@bob:test.local", device_id: bob.deviceID });
    const profile = await alice.request("GET", `/_matrix/client/v3/profile/${encodeURIComponent(alice.userID)}`);
    expect(profile.displayname).toBe("Alice");

    const again = track(await Peer.login(server, "bob", "bob-password"));
    expect(again.userID).toBe(bob.userID);
    expect(again.deviceID).not.toBe(bob.deviceID);
    const admin = await server.register("root", "root-password", { admin: true });
    const isAdmin = await again
      .request("GET", `/_synapse/admin/v1/users/${encodeURIComponent(admin.userID)}/admin`)
      .catch((e) => e);
    expect(isAdmin).toBeInstanceOf(MatrixError); // bob is no admin…
    expect((isAdmin as MatrixError).errcode).toBe("M_FORBIDDEN");
    const root = track(await Peer.from(server, admin));
    expect(await root.request("GET", `/_synapse/admin/v1/users/${encodeURIComponent(admin.userID)}/admin`)).toEqual({
      admin: true,
    });
    await expect(Peer.login(server, "bob", "wrong")).rejects.toThrow(/403 M_FORBIDDEN/);
  });

  it("makes a DM: alice invites with is_direct, bob sees the invite and joins", async () => {
    dm = await alice.createRoom({ invite: [bob.userID], isDirect: true });
    let inviteState: any[] = [];
    const invited = await bob.waitForInvite((roomID, state) => ((inviteState = state), roomID === dm));
    expect(invited).toBe(dm);
    const membership = inviteState.find((event) => event.type === "m.room.member" && event.state_key === bob.userID);
    expect(membership?.content).toMatchObject({ membership: "invite", is_direct: true });
    expect(await bob.join(dm)).toBe(dm);
    const direct = await alice.request(
      "GET",
      `/_matrix/client/v3/user/${encodeURIComponent(alice.userID)}/account_data/m.direct`,
    );
    expect(direct).toEqual({ [bob.userID]: [dm] });
    const joined = await alice.waitForEvent(
      (event, roomID) =>
        roomID === dm &&
        event.type === "m.room.member" &&
        event.state_key === bob.userID &&
        event.content.membership === "join",
    );
    expect(joined.event.sender).toBe(bob.userID);
  });

  it("carries text both ways", async () => {
    const id = await alice.text(dm, "hello bob");
    const got = await bob.waitForEvent(message("hello bob", dm));
    expect(got.event).toMatchObject({ event_id: id, sender: alice.userID, content: { msgtype: "m.text" } });
    await bob.text(dm, "hi alice");
    expect((await alice.waitForEvent(message("hi alice"))).event.sender).toBe(bob.userID);
    const history = await bob.messages(dm, 5);
    expect(history.map((event) => event.content?.body)).toEqual(expect.arrayContaining(["hi alice", "hello bob"]));
    expect(history[0].content.body).toBe("hi alice"); // newest first
  });

  it("hands each event to one wait only, whether it arrived before or after the wait began", async () => {
    await alice.text(dm, "first");
    await bob.waitForEvent(message("first")); // the sync loop certainly runs now
    const any = (event: any) => event.type === "m.room.message" && /^(third|fourth)$/.test(event.content.body);
    await alice.text(dm, "third");
    await new Promise((resolve) => setTimeout(resolve, 300)); // "third" arrives before anyone waits for it
    const waits = [bob.waitForEvent(any), bob.waitForEvent(any)];
    await alice.text(dm, "fourth");
    expect((await Promise.all(waits)).map((got) => got.event.content.body)).toEqual(["third", "fourth"]);
  });

  it("shows replies, reactions, edits and redactions", async () => {
    const original = await alice.text(dm, "original text");
    await bob.waitForEvent(message("original text"));

    const reply = await bob.reply(dm, original, "a reply");
    const replied = await alice.waitForEvent((event) => event.event_id === reply);
    expect(replied.event.content["m.relates_to"]).toEqual({ "m.in_reply_to": { event_id: original } });
    expect(replied.event.content.body).toBe(`> <${alice.userID}> original text\n\na reply`);
    expect(replied.event.content.formatted_body).toMatch(/^<mx-reply>.*<\/mx-reply>a reply$/);

    const reaction = await bob.react(dm, original, "👍");
    const reacted = await alice.waitForEvent((event) => event.type === "m.reaction");
    expect(reacted.event).toMatchObject({
      event_id: reaction,
      sender: bob.userID,
      content: { "m.relates_to": { rel_type: "m.annotation", event_id: original, key: "👍" } },
    });

    const edit = await alice.edit(dm, original, "edited text");
    const edited = await bob.waitForEvent((event) => event.content?.["m.relates_to"]?.rel_type === "m.replace");
    expect(edited.event).toMatchObject({
      event_id: edit,
      content: {
        body: "* edited text",
        "m.new_content": { body: "edited text" },
        "m.relates_to": { event_id: original },
      },
    });

    const redaction = await alice.redact(dm, original, "oops");
    const redacted = await bob.waitForEvent((event) => event.type === "m.room.redaction");
    expect(redacted.event).toMatchObject({ event_id: redaction, redacts: original, content: { reason: "oops" } });
    const stored = await bob.request(
      "GET",
      `/_matrix/client/v3/rooms/${encodeURIComponent(dm)}/event/${encodeURIComponent(original)}`,
    );
    expect(stored.content).toEqual({}); // the server pruned the content
  });

  it("uploads an image that downloads byte-exact", async () => {
    const bytes = new Uint8Array(randomBytes(300_000));
    const id = await bob.sendImage(dm, bytes, {
      mimeType: "image/png",
      fileName: "photo.png",
      width: 640,
      height: 480,
    });
    const { event } = await alice.waitForEvent((e) => e.event_id === id);
    expect(event.content).toMatchObject({
      msgtype: "m.image",
      body: "photo.png",
      info: { mimetype: "image/png", size: 300_000, w: 640, h: 480 },
    });
    expect(event.content.url).toMatch(/^mxc:\/\/test\.local\/\w+$/);
    expect(Buffer.from(await alice.download(event.content.url)).equals(Buffer.from(bytes))).toBe(true);
  });

  it("shows typing and read receipts as ephemeral events", async () => {
    await bob.typing(dm, true);
    const typing = await alice.waitForEphemeral(
      (event, roomID) => roomID === dm && event.type === "m.typing" && event.content.user_ids.includes(bob.userID),
    );
    expect(typing.roomID).toBe(dm);
    await bob.typing(dm, false);
    await alice.waitForEphemeral((event) => event.type === "m.typing" && event.content.user_ids.length === 0);

    const id = await alice.text(dm, "read me");
    await bob.waitForEvent(message("read me"));
    await bob.receipt(dm, id);
    const receipt = await alice.waitForEphemeral(
      (event) => event.type === "m.receipt" && event.content[id]?.["m.read"]?.[bob.userID] !== undefined,
    );
    expect(receipt.event.content[id]["m.read"][bob.userID].ts).toBeGreaterThan(0);
  });

  it("keeps users, rooms and media across a restart, and the peers' sync loops carry on", async () => {
    const image = new Uint8Array(randomBytes(1_000));
    const mxc = await alice.upload(image, "application/octet-stream", "blob.bin");
    const before = server.pid();
    await server.restart();
    expect(server.pid()).toBeGreaterThan(0);
    expect(server.pid()).not.toBe(before);

    await alice.text(dm, "after restart");
    expect((await bob.waitForEvent(message("after restart", dm))).event.sender).toBe(alice.userID);
    expect(Buffer.from(await bob.download(mxc)).equals(Buffer.from(image))).toBe(true);
    const again = track(await Peer.login(server, "alice", "alice-password"));
    const rooms = await again.request("GET", "/_matrix/client/v3/joined_rooms");
    expect(rooms.joined_rooms).toContain(dm);
  });

  it("survives a kill and start, with waits that time out with a clear message", async () => {
    await server.kill();
    expect(server.pid()).toBeUndefined();
    await expect(alice.text(dm, "while down")).rejects.toThrow();
    await server.start();
    await bob.text(dm, "back up");
    await alice.waitForEvent(message("back up"));

    await expect(bob.waitForEvent(() => false, 200)).rejects.toThrow(
      /^@bob:test\.local: no matching room event within 200 ms; unclaimed so far:/,
    );
    await expect(bob.waitForEphemeral(() => false, 200)).rejects.toThrow(/no matching ephemeral event within 200 ms/);
    await expect(bob.waitForInvite(() => false, 200)).rejects.toThrow(/no matching invite within 200 ms/);
  });
});
