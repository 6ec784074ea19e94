import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProsody, type ProsodyServer } from "../harness/prosody.ts";
import { Peer, xml, type Element } from "./peer.ts";

// Proves the XMPP test harness itself: a real Prosody and plain clients acting as other people.
describe("Prosody harness and XMPP peers", () => {
  let server: ProsodyServer;
  const peers: Peer[] = [];
  const connect = async (user: string, options?: Parameters<typeof Peer.connect>[3]) => {
    const peer = await Peer.connect(server, user, `${user}-password`, options);
    peers.push(peer);
    return peer;
  };

  beforeAll(async () => {
    server = await startProsody();
    for (const user of ["alice", "bob", "carol"]) await server.register(user, `${user}-password`);
  });

  afterAll(async () => {
    await Promise.all(peers.map((peer) => peer.close()));
    await server?.close();
  });

  it("runs Prosody in the foreground under its own PID", () => {
    expect(server.pid()).toBeGreaterThan(0);
    expect(server.websocketURL).toBe(`ws://127.0.0.1:${server.httpPort}/xmpp-websocket`);
  });

  it("lets two peers exchange messages, one over TCP and one over WebSocket", async () => {
    const alice = await connect("alice", { resource: "laptop" });
    const bob = await connect("bob", { transport: "websocket" });
    expect(alice.jid).toBe("alice@localhost/laptop");
    expect(bob.bareJID).toBe("bob@localhost");

    const id = await alice.message(bob.bareJID, "hello bob", { requestReceipt: true, markable: true });
    const got = await bob.waitForMessage((m) => m.body === "hello bob");
    expect(got).toMatchObject({ id, type: "chat", from: alice.jid });
    expect(got.stanza.getChild("request", "urn:xmpp:receipts")).toBeDefined();

    await bob.receipt(alice.jid, id);
    const receipt = await alice.waitFor((s) => s.getChild("received", "urn:xmpp:receipts")?.attrs.id === id);
    expect(receipt.attrs.from).toBe(bob.jid);
  });

  it("hands each stanza to one wait only, whether it arrived before or after the wait began", async () => {
    const [alice, bob] = peers;
    await alice.message(bob.bareJID, "first");
    await bob.waitFor((s) => s.getChildText("body") === "first"); // now "first" is certainly buffered…
    await alice.message(bob.bareJID, "second");
    const any = (s: Element) => s.is("message") && /^(first|second|third)$/.test(s.getChildText("body") ?? "");
    // …so the first wait gets "second" (already there), the next "third" (still to come).
    const waits = [bob.waitFor(any), bob.waitFor(any)];
    await alice.message(bob.bareJID, "third");
    const bodies = (await Promise.all(waits)).map((s) => s.getChildText("body"));
    expect(bodies).toEqual(["second", "third"]);
    await expect(bob.waitFor(any, 200)).rejects.toThrow(/no matching stanza within 200 ms/);
  });

  it("runs a three-member MUC room with a mediated invitation", async () => {
    const [alice, bob] = peers;
    const carol = await connect("carol");
    const room = `harness-${Date.now()}@${server.mucDomain}`;
    await alice.joinRoom(room, "Alice");
    await alice.invite(room, carol.bareJID);
    const invitation = await carol.waitFor(
      (s) => s.getChild("x", "http://jabber.org/protocol/muc#user")?.getChild("invite") !== undefined,
    );
    expect(invitation.attrs.from).toBe(room);
    await bob.joinRoom(room, "Bob");
    await carol.joinRoom(room, "Carol");

    const id = await bob.message(room, "hi all", { type: "groupchat" });
    for (const member of [alice, bob, carol]) {
      const got = await member.waitForMessage((m) => m.type === "groupchat" && m.body === "hi all");
      expect(got).toMatchObject({ id, from: `${room}/Bob` });
    }
    // Archived by MUC MAM: the room's reflection carries the archive's stanza-id.
    const reflected = peers[1].received().find((s) => s.attrs.id === id && s.attrs.from === `${room}/Bob`)!;
    expect(reflected.getChild("stanza-id", "urn:xmpp:sid:0")?.attrs.by).toBe(room);
  });

  it("round-trips uploaded bytes exactly through HTTP upload", async () => {
    const bytes = new Uint8Array(randomBytes(3 * 1024 * 1024 + 17));
    const url = await peers[0].upload(bytes, "noise 1.bin", "application/octet-stream");
    expect(url.startsWith(`http://127.0.0.1:${server.httpPort}/`)).toBe(true);
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
  });

  it("keeps accounts across a kill and a restart, and registers users while running", async () => {
    await server.kill();
    expect(server.pid()).toBeUndefined();
    await server.start();
    const oldPID = server.pid();
    await server.restart();
    expect(server.pid()).not.toBe(oldPID);
    await server.register("dave", "dave-password");
    const dave = await connect("dave");
    const alice = await connect("alice", { resource: "after-restart" });
    await dave.message(alice.jid, "still here?");
    expect((await alice.waitForMessage((m) => m.body === "still here?")).from).toBe(dave.jid);
    // (Suites connect new peers after a server restart rather than rely on a dropped one reconnecting in time.)
    // A stanza built by hand goes out unchanged.
    await alice.send(xml("message", { to: dave.jid, id: "raw-1", type: "chat" }, xml("body", {}, "raw")));
    expect((await dave.waitForMessage((m) => m.id === "raw-1")).body).toBe("raw");
  });
});
