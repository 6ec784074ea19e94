/**
 * End-to-end encryption in the Matrix connector, against a real Synapse: inboxd signs in as alice (a password login,
 * so the device is inboxd's own) and matrix-js-sdk with its Rust crypto — what Element runs — acts as bob and carol.
 * Every message here is encrypted on the wire; the tests check what each side reads in the clear. Tests run in
 * order and build on each other.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startSynapse, type SynapseServer } from "../harness/synapse.ts";
import {
  Client,
  describeWithSynapse,
  enc,
  imageBytes,
  MATRIX_BRIDGE,
  randomToken,
  waitFor,
  type MatrixTarget,
  type Runtime,
} from "./kit.ts";
import { EncryptedPeer } from "./encrypted-peer.ts";
import { HeldKeySender } from "./held-key-sender.ts";
import { Peer } from "./peer.ts";

export function encryptedSuite(target: MatrixTarget) {
  describeWithSynapse(`Matrix end-to-end encryption on ${target.name}, against a real Synapse`, () => {
    let server: SynapseServer;
    let runtime: Runtime;
    let api: Client;
    let bob: EncryptedPeer;
    let carol: EncryptedPeer;
    let dave: HeldKeySender; // sends a message first and its room key later
    let phone: Peer; // alice's other session (plain HTTP, no keys): joins rooms for her
    let lateRoom: string;
    let reacted: { messageID: string; reactionEventID: string }; // alice's 🔐 on bob's message
    let lateChat: string;
    let accountID: string;
    let loginID: string;
    let dmRoom: string;
    let dmChat: string;
    const password = (user: string) => `${user}-secret-${user.length * 7}`;
    // People with cross-signing and a key backup, each with an Element session (the trust tests at the end).
    let trusted: Record<
      "erin" | "frank" | "gina" | "hana" | "ivy",
      { userID: string; accessToken: string; deviceID: string }
    >;
    const elements: EncryptedPeer[] = [];
    let erinSession: { accountID: string; element: EncryptedPeer };
    let frankSession: { accountID: string; element: EncryptedPeer };
    const inboxdDeviceKeys = async () => {
      const answer = await phone.request("POST", "/_matrix/client/v3/keys/query", {
        device_keys: { [phone.userID]: [] },
      });
      const devices = answer.device_keys[phone.userID] as Record<string, { keys: Record<string, string> }>;
      return Object.fromEntries(Object.entries(devices).map(([id, d]) => [id, d.keys]));
    };

    beforeAll(async () => {
      server = await startSynapse();
      const registered = {
        ...(trusted = {
          erin: await server.register("erin", password("erin"), { displayName: "Erin" }),
          frank: await server.register("frank", password("frank"), { displayName: "Frank" }),
          gina: await server.register("gina", password("gina"), { displayName: "Gina" }),
          hana: await server.register("hana", password("hana"), { displayName: "Hana" }),
          ivy: await server.register("ivy", password("ivy"), { displayName: "Ivy" }),
        }),
        alice: await server.register("alice", password("alice"), { displayName: "Alice" }),
        bob: await server.register("bob", password("bob"), { displayName: "Bob" }),
        carol: await server.register("carol", password("carol"), { displayName: "Carol" }),
        dave: await server.register("dave", password("dave"), { displayName: "Dave" }),
      };
      phone = await Peer.from(server, registered.alice);
      bob = await EncryptedPeer.start(server, registered.bob);
      carol = await EncryptedPeer.start(server, registered.carol);
      dave = await HeldKeySender.start(server, registered.dave);
      runtime = await target.start(randomToken(), { firstBackfill: 20 });
      api = new Client(runtime);
    }, 120_000);

    afterAll(async () => {
      await Promise.all([bob, carol, dave, phone, ...elements].map((p) => p?.close().catch(() => undefined)));
      await runtime?.stop();
      await server?.close();
    });

    it("signs in with a password and uploads the device's keys", async () => {
      const session = await api.login(
        { username: `@alice:${server.serverName}`, password: password("alice"), homeserver: server.url },
        undefined,
        { bridgeID: MATRIX_BRIDGE, flowID: "password" },
      );
      expect(session.status).toBe("complete");
      accountID = session.accountID;
      loginID = session.loginID;
      await api.accountStatus(accountID, "connected", undefined, 60_000);
      const devices = await waitFor("inboxd's device keys on the server", async () => {
        const keys = await inboxdDeviceKeys();
        return Object.keys(keys).length > 0 ? keys : undefined;
      });
      const [deviceID, keys] = Object.entries(devices)[0];
      expect(keys[`ed25519:${deviceID}`]).toMatch(/^[A-Za-z0-9+/]{43}$/);
      expect(keys[`curve25519:${deviceID}`]).toMatch(/^[A-Za-z0-9+/]{43}$/);
    });

    it("reads bob's encrypted DM, and bob reads alice's answer (encrypted on the wire both ways)", async () => {
      dmRoom = await bob.createEncryptedRoom([phone.userID], { direct: true });
      await phone.join(dmRoom);
      await bob.waitForMember(dmRoom, phone.userID);
      const first = await bob.text(dmRoom, "a secret hello");
      const wire = await phone.request("GET", `/_matrix/client/v3/rooms/${enc(dmRoom)}/event/${enc(first)}`);
      expect(wire.type).toBe("m.room.encrypted");
      const chat = await api.chatTitled(accountID, "Bob");
      dmChat = chat.id;
      const got = await api.messageWith(dmChat, (m) => m.text === "a secret hello", "bob's decrypted message", 30_000);
      expect(got).toMatchObject({ senderID: bob.userID, isSender: false });
      const sent = await api.sdk.messages.send(dmChat, { text: "hello **bob**, secretly" });
      const answer = await bob.waitFor("alice's encrypted answer", (s) => s.content.body === "hello **bob**, secretly");
      expect(answer).toMatchObject({ encrypted: true, sender: phone.userID, type: "m.room.message" });
      expect(answer.content.formatted_body).toBe("hello <strong>bob</strong>, secretly");
      await api.messageWith(
        dmChat,
        (m) => m.id === sent.pendingMessageID && m.sendStatus?.status === "SUCCESS",
        "alice's own message",
      );
      // Nothing doubled by the echo of alice's encrypted send.
      const texts = (await api.messages(dmChat)).map((m) => m.text);
      expect(texts.filter((t) => t === "hello **bob**, secretly")).toHaveLength(1);
    });

    it("passes a reply, an edit and a reaction both ways in the encrypted DM", async () => {
      const target = await bob.text(dmRoom, "reply to me, encrypted");
      const message = await api.messageWith(dmChat, (m) => m.text === "reply to me, encrypted", "bob's message");
      await api.sdk.messages.send(dmChat, { text: "an encrypted reply", replyToMessageID: message.id });
      const reply = await bob.waitFor("alice's reply", (s) => s.content.body === "an encrypted reply");
      expect(reply.encrypted).toBe(true);
      expect(reply.content["m.relates_to"]).toMatchObject({ "m.in_reply_to": { event_id: target } });
      await api.sdk.chats.messages.reactions.add(message.id, { chatID: dmChat, reactionKey: "🔐" });
      const reaction = await bob.waitFor(
        "alice's reaction",
        (s) => s.type === "m.reaction" && s.sender === phone.userID,
      );
      expect(reaction.encrypted).toBe(true);
      reacted = { messageID: message.id, reactionEventID: reaction.eventID };
      expect(reaction.content["m.relates_to"]).toMatchObject({ rel_type: "m.annotation", event_id: target, key: "🔐" });
      const mine = await api.messageWith(dmChat, (m) => m.text === "an encrypted reply", "alice's reply");
      await api.sdk.messages.update(mine.id, { chatID: dmChat, text: "an encrypted reply, edited" });
      const edit = await bob.waitFor(
        "alice's edit",
        (s) => s.sender === phone.userID && s.content["m.relates_to"]?.rel_type === "m.replace",
      );
      expect(edit.encrypted).toBe(true);
      expect(edit.content["m.new_content"]).toMatchObject({ body: "an encrypted reply, edited" });

      await bob.reply(dmRoom, target, "bob answers himself");
      const bobsReply = await api.messageWith(dmChat, (m) => m.text === "bob answers himself", "bob's reply");
      expect(bobsReply.linkedMessageID).toBe(message.id);
      await bob.edit(dmRoom, target, "reply to me, encrypted and edited");
      await api.messageWith(dmChat, (m) => m.text === "reply to me, encrypted and edited", "bob's edit");
      await bob.react(dmRoom, target, "👍");
      await waitFor("bob's reaction", async () =>
        (await api.messages(dmChat))
          .find((m) => m.id === message.id)
          ?.reactions?.some((r) => r.participantID === bob.userID && r.reactionKey === "👍"),
      );
    });

    it("passes an image both ways in the encrypted DM, byte-exact, with its key never in the API", async () => {
      const bytes = imageBytes();
      const serve = async (id: string) => {
        const served = await fetch(`${runtime.url}/v1/assets/serve?url=${enc(id)}`, {
          headers: { authorization: `Bearer ${runtime.token}` },
        });
        expect(served.status).toBe(200);
        return Buffer.from(await served.arrayBuffer());
      };
      const sent = await bob.sendEncryptedImage(dmRoom, bytes, {
        name: "secret-cat.png",
        mimeType: "image/png",
        width: 1,
        height: 1,
      });
      const key = sent.file.key.k as string;
      const wire = await phone.request("GET", `/_matrix/client/v3/rooms/${enc(dmRoom)}/event/${enc(sent.eventID)}`);
      expect(wire.type).toBe("m.room.encrypted");
      const got = await api.messageWith(
        dmChat,
        (m) => m.type === "IMAGE" && m.attachments?.[0]?.fileName === "secret-cat.png",
        "bob's encrypted image",
        30_000,
      );
      const attachment = got.attachments![0];
      expect(attachment).toMatchObject({ type: "img", mimeType: "image/png", size: { width: 1, height: 1 } });
      expect((await serve(attachment.id!)).equals(Buffer.from(bytes))).toBe(true);

      const upload = await api.sdk.assets.upload({
        file: new File([Buffer.from(bytes)], "secret-dog.png", { type: "image/png" }),
      });
      await api.sdk.messages.send(dmChat, { attachment: { uploadID: upload.uploadID! } });
      const image = await bob.waitFor(
        "alice's encrypted image",
        (s) => s.sender === phone.userID && s.content.msgtype === "m.image",
      );
      expect(image.encrypted).toBe(true);
      expect(image.content.url).toBeUndefined(); // only `file`: the server never sees the image
      expect(image.content).toMatchObject({
        filename: "secret-dog.png",
        info: { mimetype: "image/png", size: bytes.length, w: 1, h: 1 },
      });
      expect(Buffer.from(await bob.openEncryptedFile(image.content.file)).equals(Buffer.from(bytes))).toBe(true);
      const stored = await fetch(
        `${server.url}/_matrix/media/v3/download/${(image.content.file.url as string).slice("mxc://".length)}`,
      );
      expect(Buffer.from(await stored.arrayBuffer()).equals(Buffer.from(bytes))).toBe(false);
      // alice's own image, as the API lists it, is served from the same encrypted file.
      const mine = await api.messageWith(
        dmChat,
        (m) => m.isSender === true && m.attachments?.[0]?.fileName === "secret-dog.png" && !!m.attachments[0].id,
        "alice's image in the list",
      );
      expect((await serve(mine.attachments![0].id!)).equals(Buffer.from(bytes))).toBe(true);
      // Neither file's key is anywhere in what the API answers.
      const listed = JSON.stringify(await api.messages(dmChat));
      for (const k of [key, image.content.file.key.k as string]) expect(listed).not.toContain(k);
    });

    it("talks in an encrypted group of three", async () => {
      const room = await bob.createEncryptedRoom([phone.userID, carol.userID], { name: "Secret three" });
      await phone.join(room);
      await carol.waitForRoom(room);
      await bob.waitForMember(room, phone.userID);
      await bob.waitForMember(room, carol.userID);
      await bob.text(room, "bob to the three");
      const chat = await api.chatTitled(accountID, "Secret three");
      await api.messageWith(chat.id, (m) => m.text === "bob to the three", "bob's group message", 30_000);
      await carol.waitForMember(room, phone.userID);
      await carol.text(room, "carol to the three");
      await api.messageWith(chat.id, (m) => m.text === "carol to the three", "carol's group message", 30_000);
      await api.sdk.messages.send(chat.id, { text: "alice to the three" });
      for (const peer of [bob, carol]) {
        const seen = await peer.waitFor("alice's group message", (s) => s.content.body === "alice to the three");
        expect(seen.encrypted).toBe(true);
      }
    });

    it("accepts an encrypted group's invitation by sending, and every member reads that first message", async () => {
      const room = await carol.createEncryptedRoom([phone.userID, bob.userID], { name: "Invited, encrypted" });
      await bob.waitForRoom(room); // bob's client joins on its own
      await carol.waitForMember(room, bob.userID);
      const chat = await api.chatTitled(accountID, "Invited, encrypted");
      await api.sdk.messages.send(chat.id, { text: "first words, on joining" });
      for (const peer of [carol, bob]) {
        const seen = await peer.waitFor("alice's first message", (s) => s.content.body === "first words, on joining");
        expect(seen.encrypted).toBe(true);
      }
    });

    const waitingNotice = (chatID: string, what: string) =>
      api.messageWith(
        chatID,
        (m) => m.senderID === dave.userID && m.type === "NOTICE" && /Waiting for this message's key/.test(m.text ?? ""),
        what,
        30_000,
      );

    it("shows a message whose key comes late as waiting, and fills it in where it is when the key arrives", async () => {
      lateRoom = await dave.peer.createRoom({ name: "Late keys", invite: [phone.userID], encrypted: true });
      await phone.join(lateRoom);
      lateChat = (await api.chatTitled(accountID, "Late keys")).id;
      const held = await dave.sendHoldingKey(lateRoom, [phone.userID], "a secret that waited for its key");
      const waiting = await waitingNotice(lateChat, "the message waiting for its key");
      await held.release();
      const filled = await api.messageWith(
        lateChat,
        (m) => m.id === waiting.id && m.text === "a secret that waited for its key",
        "the message filled in once its key came",
        30_000,
      );
      expect(filled).toMatchObject({ type: "TEXT", senderID: dave.userID, sortKey: waiting.sortKey });
      const texts = (await api.messages(lateChat)).map((m) => m.text);
      expect(texts.filter((t) => t === "a secret that waited for its key")).toHaveLength(1);
      expect(texts.filter((t) => /🔒/.test(t ?? ""))).toEqual([]);
    });

    it("restarts in the middle of the conversation: same device, same keys, nothing left unreadable", async () => {
      const before = await inboxdDeviceKeys();
      // A message still waiting for its key when inboxd stops, whose key comes while it is down.
      const held = await dave.sendHoldingKey(lateRoom, [phone.userID], "its key came while inboxd was down");
      const waiting = await waitingNotice(lateChat, "the message waiting across the restart");
      await runtime.restart(async () => {
        for (let i = 1; i <= 3; i++) await bob.text(dmRoom, `while inboxd was down ${i}`);
        await held.release();
      });
      await api.accountStatus(accountID, "connected", undefined, 60_000);
      for (let i = 1; i <= 3; i++)
        await api.messageWith(dmChat, (m) => m.text === `while inboxd was down ${i}`, `offline message ${i}`, 30_000);
      await api.messageWith(
        lateChat,
        (m) => m.id === waiting.id && m.text === "its key came while inboxd was down",
        "the message whose key came during the restart",
        30_000,
      );
      await bob.text(dmRoom, "after the restart");
      await api.messageWith(dmChat, (m) => m.text === "after the restart", "bob's message after the restart", 30_000);
      await api.sdk.messages.send(dmChat, { text: "alice after the restart" });
      await bob.waitFor("alice's message after the restart", (s) => s.content.body === "alice after the restart");
      // A reaction made before the restart is found again (an encrypted event) and removed on the server.
      await api.sdk.chats.messages.reactions.delete("🔐", { chatID: dmChat, messageID: reacted.messageID });
      await bob.waitFor("the removal of alice's reaction", (s) => s.redacts === reacted.reactionEventID);
      expect(await inboxdDeviceKeys()).toEqual(before);
      for (const chat of [dmChat, lateChat]) {
        const unreadable = (await api.messages(chat)).filter((m) => /🔒/.test(m.text ?? ""));
        expect(unreadable).toEqual([]);
      }
    });

    it("signs in again after its device was deleted elsewhere: a new device with keys of its own, read as before", async () => {
      const [oldDevice] = Object.keys(await inboxdDeviceKeys());
      const auth = {
        type: "m.login.password",
        identifier: { type: "m.id.user", user: phone.userID },
        password: password("alice"),
      };
      const first = await phone
        .request("POST", "/_matrix/client/v3/delete_devices", { devices: [oldDevice] })
        .catch((e: { body?: { session?: string } }) => e.body);
      if (first?.session)
        await phone.request("POST", "/_matrix/client/v3/delete_devices", {
          devices: [oldDevice],
          auth: { ...auth, session: first.session },
        });
      await api.accountStatus(accountID, "reconnect_required", undefined, 45_000);
      const again = await api.login(
        { username: `@alice:${server.serverName}`, password: password("alice"), homeserver: server.url },
        { loginID },
        { bridgeID: MATRIX_BRIDGE, flowID: "password" },
      );
      expect(again).toMatchObject({ status: "complete", accountID });
      await api.accountStatus(accountID, "connected", undefined, 60_000);
      // Not the deleted device's ID made again (it would have no keys on the server, and a store that says it has).
      const devices = await waitFor("the new device's keys", async () => {
        const keys = await inboxdDeviceKeys();
        return Object.keys(keys).length > 0 ? keys : undefined;
      });
      const [newDevice] = Object.keys(devices);
      expect(newDevice).not.toBe(oldDevice);
      await bob.text(dmRoom, "to alice's new device");
      await api.messageWith(
        dmChat,
        (m) => m.text === "to alice's new device",
        "bob's message to the new device",
        30_000,
      );
      await api.sdk.messages.send(dmChat, { text: "from alice's new device" });
      await bob.waitFor("alice's message from the new device", (s) => s.content.body === "from alice's new device");
    });
    /** A login session of `user`, driven through its password step: the session after it. */
    const signIn = async (user: keyof typeof trusted, reconnect?: { loginID: string }) => {
      const base = `/v1/bridges/${MATRIX_BRIDGE}/login-sessions`;
      const started = await api.ok("POST", base, { flowID: "password", ...reconnect });
      const path = `${base}/${started.loginSessionID}`;
      const session = await api.ok("POST", `${path}/steps/${started.currentStep.stepID}`, {
        type: "user_input",
        fields: { username: trusted[user].userID, password: password(user), homeserver: server.url },
      });
      return { session, path };
    };
    const answer = (path: string, session: any, fields: Record<string, string>) =>
      api.ok("POST", `${path}/steps/${session.currentStep.stepID}`, {
        type: session.currentStep.type,
        fields,
      });
    /** inboxd's device of `user`: the one of their devices that is not their Element session's. */
    const inboxdDevice = (user: keyof typeof trusted) =>
      waitFor(`inboxd's device of ${user}`, async () => {
        const { userID, accessToken, deviceID } = trusted[user];
        const response = await fetch(`${server.url}/_matrix/client/v3/keys/query`, {
          method: "POST",
          headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
          body: JSON.stringify({ device_keys: { [userID]: [] } }),
        });
        const devices = Object.keys((await response.json()).device_keys[userID] ?? {});
        return devices.find((d) => d !== deviceID);
      });
    /** A homeserver request as `user` (with their Element session's token). */
    const asUser = async (user: keyof typeof trusted, method: string, path: string) => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${trusted[user].accessToken}` },
      });
      return response.json();
    };
    const erinRequest = (method: string, path: string) => asUser("erin", method, path);
    const element = async (user: keyof typeof trusted) => {
      const peer = await EncryptedPeer.start(server, trusted[user]);
      elements.push(peer);
      return { peer, recoveryKey: await peer.setUpRecovery(password(user)) };
    };

    it("verifies a new session with the recovery key: cross-signed, and history from before it read from the key backup", async () => {
      const erin = await element("erin");
      const room = await bob.createEncryptedRoom([erin.peer.userID], { direct: true });
      await bob.waitForMember(room, erin.peer.userID);
      await bob.text(room, "sent before inboxd had a session");
      await erin.peer.waitFor("bob's message in Element", (s) => s.content.body === "sent before inboxd had a session");
      // Element backs the room key up (within seconds of receiving it), as a careful person's client does.
      await waitFor(
        "the room key in erin's key backup",
        async () => {
          const keys = await erinRequest("GET", "/_matrix/client/v3/room_keys/keys?version=1");
          return Object.keys(keys.rooms?.[room]?.sessions ?? {}).length > 0 || undefined;
        },
        60_000,
      );
      const { session, path } = await signIn("erin");
      expect(session).toMatchObject({ status: "waiting_for_input" });
      expect(session.currentStep.stepID).toBe("matrix.verify.recovery_key");
      expect(session.currentStep.fields).toEqual([
        { id: "recoveryKey", label: "Recovery key", type: "password", optional: true },
      ]);
      // A mistyped key is asked for again, saying what was wrong.
      const wrongKey = erin.recoveryKey.replace(/[A-Za-z]/, (c) => (c === "a" ? "b" : "a"));
      const retried = await answer(path, session, { recoveryKey: wrongKey });
      expect(retried.status).toBe("waiting_for_input");
      expect(retried.currentStep.instructions).toMatch(/not a recovery key|does not open/);
      const done = await answer(path, retried, { recoveryKey: erin.recoveryKey });
      expect(done).toMatchObject({ status: "complete" });
      expect(done.currentStep?.instructions ?? "").not.toContain(erin.recoveryKey);
      await api.accountStatus(done.accountID, "connected", undefined, 60_000);
      const device = await inboxdDevice("erin");
      expect(await erin.peer.crossSigningVerified(device)).toBe(true);
      const chat = await api.chatTitled(done.accountID, "Bob");
      await api.messageWith(
        chat.id,
        (m) => m.text === "sent before inboxd had a session",
        "the message read with a key from the backup",
        30_000,
      );
      erinSession = { accountID: done.accountID, element: erin.peer };
    });

    it("reads a message whose key reached only the user's Element session, from the key backup", async () => {
      const { accountID: erinAccount, element: erinElement } = erinSession;
      const room = await dave.peer.createRoom({ name: "Key elsewhere", invite: [erinElement.userID], encrypted: true });
      await erinElement.waitForRoom(room);
      const chat = (await api.chatTitled(erinAccount, "Key elsewhere")).id;
      const held = await dave.sendHoldingKey(room, [erinElement.userID], "only Element got this key");
      const waiting = await waitingNotice(chat, "the message waiting for a key sent elsewhere");
      await held.release([trusted.erin.deviceID]);
      await erinElement.waitFor("the message in Element", (s) => s.content.body === "only Element got this key");
      // Element backs the key up; inboxd looks it up there (at once, then after 3 s, 15 s, 1 min…).
      const filled = await api.messageWith(
        chat,
        (m) => m.id === waiting.id && m.text === "only Element got this key",
        "the message filled in from the key backup",
        90_000,
      );
      expect(filled.senderID).toBe(dave.userID);
      // inboxd backs up the keys it receives too: one sent to its device alone reaches the backup (Element stopped
      // first, so that nothing but inboxd can have put it there).
      await erinElement.close();
      const mine = await dave.sendHoldingKey(room, [erinElement.userID], "only inboxd got this key");
      await mine.release([await inboxdDevice("erin")]);
      await api.messageWith(chat, (m) => m.text === "only inboxd got this key", "the message inboxd alone can read");
      const wire = await erinRequest("GET", `/_matrix/client/v3/rooms/${enc(room)}/event/${enc(mine.eventID)}`);
      await waitFor(
        "inboxd's key in the backup",
        async () => {
          const keys = await erinRequest("GET", "/_matrix/client/v3/room_keys/keys?version=1");
          return keys.rooms?.[room]?.sessions?.[wire.content.session_id] ? true : undefined;
        },
        30_000,
      );
    });

    /**
     * A sign-in of `user` that compares emoji with their Element session `peer` (which starts the comparison itself
     * with `start`): the emoji inboxd lists are the ones Element shows. The session at its end.
     */
    const compareEmoji = async (user: keyof typeof trusted, peer: EncryptedPeer, options: { start?: boolean } = {}) => {
      const { session, path } = await signIn(user);
      expect(session.currentStep.stepID).toBe("matrix.verify.recovery_key");
      let shownByInboxd: ((names: string[]) => void) | undefined;
      const inboxdEmoji = new Promise<string[]>((resolve) => (shownByInboxd = resolve));
      const answered = peer.answerVerification(async (emoji) => {
        const ours = await inboxdEmoji;
        return ours.join() === emoji.join();
      }, options);
      let current = await answer(path, session, { recoveryKey: "" });
      expect(current).toMatchObject({ status: "waiting_for_display" });
      expect(current.currentStep.stepID).toBe("matrix.verify.waiting_for_session");
      const deadline = Date.now() + 90_000;
      while (current.status === "waiting_for_display" && Date.now() < deadline) {
        if (current.currentStep.stepID === "matrix.verify.emoji") {
          const step = current.currentStep;
          expect(step.display.type).toBe("emoji");
          expect(step.display.imageURL).toMatch(/^data:image\/svg\+xml;base64,/);
          const listed = step.instructions.slice(
            step.instructions.indexOf(": ") + 2,
            step.instructions.indexOf(". If"),
          );
          const symbols = listed.split(", ").map((e: string) => e.split(" ")[0]);
          expect(symbols).toHaveLength(7);
          shownByInboxd!(symbols);
        }
        current = await answer(path, current, {});
      }
      expect(current).toMatchObject({ status: "complete" });
      expect(await answered).toHaveLength(7);
      await api.accountStatus(current.accountID, "connected", undefined, 60_000);
      expect(await peer.crossSigningVerified(await inboxdDevice(user))).toBe(true);
      return current;
    };

    it("verifies a new session by comparing emoji with the user's Element session", async () => {
      const frank = await element("frank");
      const current = await compareEmoji("frank", frank.peer);
      frankSession = { accountID: current.accountID, element: frank.peer };
    });

    it("asks the user's verified Element session for a key that reached only it, with no key backup to read", async () => {
      const { accountID: frankAccount, element: frankElement } = frankSession;
      // No key backup any more: the key can come only from Element, forwarded on inboxd's request.
      const { version } = await asUser("frank", "GET", "/_matrix/client/v3/room_keys/version");
      await asUser("frank", "DELETE", `/_matrix/client/v3/room_keys/version/${enc(version)}`);
      expect((await asUser("frank", "GET", "/_matrix/client/v3/room_keys/version")).errcode).toBe("M_NOT_FOUND");
      const room = await dave.peer.createRoom({ name: "Asked for", invite: [frankElement.userID], encrypted: true });
      await frankElement.waitForRoom(room);
      const chat = (await api.chatTitled(frankAccount, "Asked for")).id;
      // The room key goes to Element's device alone, before the message: inboxd's device never receives it.
      const text = "a key inboxd had to ask for";
      await dave.sendHoldingKey(room, [frankElement.userID], text, [trusted.frank.deviceID]);
      await frankElement.waitFor("the message in Element", (s) => s.content.body === text);
      const read = await api.messageWith(
        chat,
        (m) => m.text === text,
        "the message read with Element's forward",
        20_000,
      );
      expect(read.senderID).toBe(dave.userID);
    });

    it("compares emoji when the Element session starts the comparison itself", async () => {
      const hana = await element("hana");
      await compareEmoji("hana", hana.peer, { start: true });
    });

    it("signs out the device a sign-in made when the sign-in is cancelled at its verification step", async () => {
      await element("ivy");
      const inboxdDevices = async () => {
        const { devices } = await asUser("ivy", "GET", "/_matrix/client/v3/devices");
        return devices.filter((d: { display_name?: string }) => d.display_name === "inboxd");
      };
      const { session, path } = await signIn("ivy");
      expect(session.currentStep.stepID).toBe("matrix.verify.recovery_key");
      expect(await inboxdDevices()).toHaveLength(1); // made by the password step, its keys uploaded
      await api.ok("DELETE", path);
      await waitFor("the abandoned device signed out", async () => (await inboxdDevices()).length === 0 || undefined);
      expect((await api.sdk.accounts.list()).some((a) => a.user.id === trusted.ivy.userID)).toBe(false);
    });

    it("lets a sign-in skip verification, says attention_required, and verifies on reconnecting", async () => {
      const gina = await element("gina");
      const { session, path } = await signIn("gina");
      const skipped = await answer(path, session, { recoveryKey: "skip" });
      expect(skipped).toMatchObject({ status: "complete" });
      const account = await api.accountStatus(skipped.accountID, "attention_required", undefined, 60_000);
      expect(account.statusText).toMatch(/not verified/);
      const device = await inboxdDevice("gina");
      expect(await gina.peer.crossSigningVerified(device)).toBe(false);
      // Reconnecting signs in as the same device, verified this time through the running account's store.
      const again = await signIn("gina", { loginID: skipped.loginID });
      expect(again.session.currentStep.stepID).toBe("matrix.verify.recovery_key");
      const done = await answer(again.path, again.session, { recoveryKey: gina.recoveryKey });
      expect(done).toMatchObject({ status: "complete", accountID: skipped.accountID });
      await api.accountStatus(skipped.accountID, "connected", undefined, 60_000);
      expect(await inboxdDevice("gina")).toBe(device);
      expect(await gina.peer.crossSigningVerified(device)).toBe(true);
    });
  });
}
