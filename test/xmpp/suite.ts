/**
 * The XMPP connector against a real Prosody, on any runtime that serves the app: inboxd signs in as alice, and
 * plain XMPP clients act as bob, carol and the others (and as alice's phone, another client of the same account).
 * The API is driven through the official SDK wherever it has the operation; every JSON answer is checked against
 * the served OpenAPI document. Tests run in order and build on each other, as a person's session would.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProsody, type ProsodyServer } from "../harness/prosody.ts";
import { ResponseChecker } from "../scenario/openapi-check.ts";
import { Client, enc, imageBytes, randomToken, sleep, waitFor, type Runtime, type RuntimeTarget } from "./kit.ts";
import { Peer, xml, type Element } from "./peer.ts";

const NS = {
  reply: "urn:xmpp:reply:0",
  correct: "urn:xmpp:message-correct:0",
  reactions: "urn:xmpp:reactions:0",
  retract: "urn:xmpp:message-retract:1",
  receipts: "urn:xmpp:receipts",
  markers: "urn:xmpp:chat-markers:0",
  mucUser: "http://jabber.org/protocol/muc#user",
  oob: "jabber:x:oob",
};

const duplicates = (texts: (string | undefined)[]) => texts.filter((t, i) => t !== undefined && texts.indexOf(t) !== i);

export function xmppSuite(target: RuntimeTarget) {
  describe(`XMPP connector on ${target.name}, against a real Prosody`, () => {
    let server: ProsodyServer;
    let runtime: Runtime;
    let api: Client;
    let bob: Peer;
    let carol: Peer;
    let phone: Peer; // alice's other client
    let accountID: string;
    let loginID: string;
    let bobChat: string;
    const peers: Peer[] = [];
    const password = (user: string) => `${user}-secret-${user.length}`;
    const fields = (user: string, pass = password(user)) => ({
      jid: `${user}@localhost`,
      password: pass,
      ...target.serverFields(server),
    });
    const peer = async (user: string, resource?: string) => {
      const p = await Peer.connect(server, user, password(user), resource ? { resource } : {});
      peers.push(p);
      return p;
    };

    beforeAll(async () => {
      server = await startProsody();
      for (const user of ["alice", "bob", "carol", "dave", "erin", "frank", "gina"])
        await server.register(user, password(user));
      runtime = await target.start(randomToken());
      api = new Client(runtime);
      api.spec = new ResponseChecker(await api.ok("GET", "/v1/spec"));
      bob = await peer("bob");
      carol = await peer("carol");
      // Sent before alice has an inboxd account: only the server's archive has them.
      await bob.message("alice@localhost", "sent while you were away");
      await bob.message("alice@localhost", "and a second one");
    });

    afterAll(async () => {
      await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
      await runtime?.stop();
      await server?.close();
    });

    it("lists the XMPP bridge, and its login asks for a JID and password with optional server fields", async () => {
      const bridges = await api.ok("GET", "/v1/bridges");
      const bridge = (bridges.items ?? bridges).find((b: { id: string }) => b.id === "local-xmpp");
      expect(bridge).toMatchObject({ id: "local-xmpp" });
      const started = await api.ok("POST", "/v1/bridges/local-xmpp/login-sessions", { flowID: "password" });
      expect(started.currentStep.type).toBe("user_input");
      const byID = Object.fromEntries(started.currentStep.fields.map((f: { id: string }) => [f.id, f]));
      expect(byID.jid.optional).toBeFalsy();
      expect(byID.password).toMatchObject({ type: "password" });
      for (const advanced of ["host", "port", "websocketURL"]) expect(byID[advanced].optional).toBe(true);
      await api.ok("DELETE", `/v1/bridges/local-xmpp/login-sessions/${started.loginSessionID}`);
    });

    it("fails a login with a wrong password with error.code invalid_credentials, and adds no account", async () => {
      const session = await api.login(fields("alice", "not-the-password"));
      expect(session.status).toBe("failed");
      expect(session.error).toMatchObject({ code: "invalid_credentials", message: expect.stringMatching(/password/i) });
      const accounts = await api.sdk.accounts.list();
      expect(accounts.filter((a) => a.accountID.startsWith("local-xmpp"))).toEqual([]);
    });

    // Only where the runtime lacks a transport (the Worker has no TCP), so there is nothing to skip elsewhere.
    if (target.unsupportedFields)
      it("fails a login over a transport this runtime cannot open, saying what to use instead", async () => {
        const session = await api.login({
          jid: "alice@localhost",
          password: password("alice"),
          ...target.unsupportedFields!(server),
        });
        expect(session).toMatchObject({
          status: "failed",
          error: { code: "unsupported_transport", message: expect.stringMatching(/WebSocket URL/) },
        });
      });

    it("signs in, goes connecting → backfilling → connected, and has what was sent while it was offline", async () => {
      const session = await api.login(fields("alice"));
      expect(session.status).toBe("complete");
      accountID = session.accountID;
      loginID = session.loginID;
      expect(JSON.stringify(session)).not.toContain(password("alice"));
      const seen: string[] = [];
      const account = await api.accountStatus(accountID, "connected", seen);
      expect(account.user).toMatchObject({ id: "alice@localhost", isSelf: true });
      expect(seen.at(-1)).toBe("connected");
      const chat = await api.chatTitled(accountID, "bob");
      bobChat = chat.id;
      expect(chat.type).toBe("single");
      const texts = (await api.messages(bobChat)).map((m) => [m.text, m.isSender]);
      expect(texts).toEqual([
        ["and a second one", false],
        ["sent while you were away", false],
      ]);
      // Nothing the API answers carries a credential.
      const everything = JSON.stringify([
        await api.ok("GET", "/v1/accounts"),
        await api.ok("GET", `/v1/bridges/local-xmpp`),
      ]);
      expect(everything).not.toContain(password("alice"));
      expect(everything).not.toMatch(/clientKey|serverKey|salt/);
    });

    it("receives text, a reply, a correction, reactions and a retraction from the other person", async () => {
      const first = await bob.message("alice@localhost", "how are you?");
      const m1 = await api.messageWith(bobChat, (m) => m.text === "how are you?", "bob's message");
      await bob.message("alice@localhost", "(I mean today)", { replyTo: { id: first, to: "alice@localhost" } });
      const reply = await api.messageWith(bobChat, (m) => m.text === "(I mean today)", "bob's reply");
      expect(reply.linkedMessageID).toBe(m1.id);

      await bob.correct("alice@localhost", first, "how are you doing?");
      const edited = await waitFor("the correction", async () => {
        const m = await api.sdk.messages.retrieve(m1.id, { chatID: bobChat });
        return m.text === "how are you doing?" && m;
      });
      expect(edited.editedTimestamp).toBeTruthy();

      await bob.react("alice@localhost", first, ["👍", "🎉"]);
      const reacted = await waitFor("bob's reactions", async () => {
        const m = await api.sdk.messages.retrieve(m1.id, { chatID: bobChat });
        return m.reactions?.length === 2 && m;
      });
      expect(reacted.reactions).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            id: "bob@localhost👍",
            participantID: "bob@localhost",
            reactionKey: "👍",
            emoji: true,
          }),
          expect.objectContaining({ id: "bob@localhost🎉", participantID: "bob@localhost", reactionKey: "🎉" }),
        ]),
      );
      await bob.react("alice@localhost", first, ["🎉"]);
      await waitFor("the 👍 to be taken back", async () => {
        const m = await api.sdk.messages.retrieve(m1.id, { chatID: bobChat });
        return m.reactions?.length === 1 && m.reactions[0].reactionKey === "🎉";
      });

      const gone = await bob.message("alice@localhost", "oops, wrong chat");
      await api.messageWith(bobChat, (m) => m.text === "oops, wrong chat", "the message to retract");
      await bob.retract("alice@localhost", gone);
      await waitFor(
        "the retraction",
        async () => !(await api.messages(bobChat)).some((m) => m.text === "oops, wrong chat"),
      );
    });

    it("sends text, a reply, an edit, reactions and a delete that the other person receives", async () => {
      const sent = await api.sdk.messages.send(bobChat, { text: "fine, and you?" });
      const got = await bob.waitForMessage((m) => m.body === "fine, and you?");
      expect(got.from).toMatch(/^alice@localhost\//);
      const mine = await waitFor("the send to settle", async () => {
        const m = await api.sdk.messages.retrieve(sent.pendingMessageID, { chatID: bobChat });
        return m.sendStatus?.status === "SUCCESS" && m;
      });
      expect(mine.isSender).toBe(true);

      const bobs = await bob.message("alice@localhost", "all good");
      const theirs = await api.messageWith(bobChat, (m) => m.text === "all good", "bob's message");
      await api.sdk.messages.send(bobChat, { text: "glad to hear", replyToMessageID: theirs.id });
      const reply = await bob.waitForMessage((m) => m.body === "glad to hear");
      expect(reply.stanza.getChild("reply", NS.reply)?.attrs.id).toBe(bobs);

      await api.sdk.messages.update(mine.id, { chatID: bobChat, text: "fine, thanks, and you?" });
      const correction = await bob.waitFor((s) => s.getChild("replace", NS.correct)?.attrs.id === got.id);
      expect(correction.getChildText("body")).toBe("fine, thanks, and you?");

      await api.sdk.chats.messages.reactions.add(theirs.id, { chatID: bobChat, reactionKey: "❤️" });
      const first = await bob.waitFor((s) => s.getChild("reactions", NS.reactions)?.attrs.id === bobs);
      expect(
        first
          .getChild("reactions", NS.reactions)!
          .getChildren("reaction")
          .map((r) => r.getText()),
      ).toEqual(["❤️"]);
      await api.sdk.chats.messages.reactions.add(theirs.id, { chatID: bobChat, reactionKey: "😂" });
      const both = await bob.waitFor((s) => s.getChild("reactions", NS.reactions)?.attrs.id === bobs);
      expect(
        both
          .getChild("reactions", NS.reactions)!
          .getChildren("reaction")
          .map((r) => r.getText())
          .sort(),
      ).toEqual(["❤️", "😂"].sort());
      await api.sdk.chats.messages.reactions.delete("❤️", { chatID: bobChat, messageID: theirs.id });
      const after = await bob.waitFor((s) => s.getChild("reactions", NS.reactions)?.attrs.id === bobs);
      expect(
        after
          .getChild("reactions", NS.reactions)!
          .getChildren("reaction")
          .map((r) => r.getText()),
      ).toEqual(["😂"]);
      const shown = await api.sdk.messages.retrieve(theirs.id, { chatID: bobChat });
      expect(shown.reactions).toEqual([
        expect.objectContaining({ id: "alice@localhost😂", participantID: "alice@localhost", reactionKey: "😂" }),
      ]);

      await api.sdk.messages.delete(mine.id, { chatID: bobChat });
      const retraction = await bob.waitFor((s) => s.getChild("retract", NS.retract)?.attrs.id === got.id);
      expect(retraction.attrs.type).toBe("chat");
    });

    it("shows delivery receipts and read markers on sent messages, and marks read both ways", async () => {
      phone = await peer("alice", "phone");
      const sent = await api.sdk.messages.send(bobChat, { text: "did you get this?" });
      const got = await bob.waitForMessage((m) => m.body === "did you get this?");
      expect(got.stanza.getChild("request", NS.receipts)).toBeDefined();
      expect(got.stanza.getChild("markable", NS.markers)).toBeDefined();
      await bob.receipt(got.from, got.id!);
      const delivered = await waitFor("the delivery receipt", async () => {
        const m = await api.sdk.messages.retrieve(sent.pendingMessageID, { chatID: bobChat });
        return m.sendStatus?.deliveredToUsers?.includes("bob@localhost") && m;
      });
      expect(delivered.seen).toBeUndefined();
      await bob.displayed("alice@localhost", got.id!);
      const seen = await waitFor("the read marker", async () => {
        const m = await api.sdk.messages.retrieve(sent.pendingMessageID, { chatID: bobChat });
        return m.seen ? m : undefined;
      });
      expect(typeof seen.seen === "string" && !Number.isNaN(Date.parse(seen.seen))).toBe(true);

      // Reading here tells bob…
      const readID = await bob.message("alice@localhost", "read me");
      const unread = await api.messageWith(bobChat, (m) => m.text === "read me", "bob's message");
      expect(unread.isUnread).toBe(true);
      await api.sdk.chats.markRead(bobChat, { messageID: unread.id });
      const marker = await bob.waitFor((s) => s.getChild("displayed", NS.markers)?.attrs.id === readID);
      expect(String(marker.attrs.from)).toMatch(/^alice@localhost\//);
      // …and reading on alice's phone marks it read here.
      const later = await bob.message("alice@localhost", "read me on your phone");
      await api.messageWith(bobChat, (m) => m.text === "read me on your phone", "bob's second message");
      expect((await api.sdk.chats.retrieve(bobChat)).unreadCount).toBeGreaterThan(0);
      await phone.displayed("bob@localhost", later);
      await waitFor(
        "the chat to be read elsewhere",
        async () => (await api.sdk.chats.retrieve(bobChat)).unreadCount === 0,
      );
    });

    it("shows messages sent from another client of the account as sent (carbons)", async () => {
      await phone.message("bob@localhost", "typed on my phone");
      const m = await api.messageWith(bobChat, (x) => x.text === "typed on my phone", "the phone's message");
      expect(m.isSender).toBe(true);
      expect(m.senderID).toBe("alice@localhost");
    });

    it("tells the other person when the account starts and stops typing (chat states)", async () => {
      await api.ok("POST", `/v1/chats/${enc(bobChat)}/typing`, { state: "typing" });
      await bob.waitFor((s) => s.getChild("composing", "http://jabber.org/protocol/chatstates") !== undefined);
      await api.ok("POST", `/v1/chats/${enc(bobChat)}/typing`, { state: "paused" });
      await bob.waitFor((s) => s.getChild("paused", "http://jabber.org/protocol/chatstates") !== undefined);
    });

    it("runs a group chat of three: created here, members invited, messages and reactions both ways", async () => {
      const created = await api.sdk.chats.create({
        accountID,
        type: "group",
        participantIDs: ["bob@localhost", "carol@localhost"],
        title: "Trio",
      });
      expect(created).toMatchObject({ type: "group", title: "Trio" });
      const room = await waitFor("the room's JID from bob's invitation", async () => {
        const invite = bob.received().find((s) => s.getChild("x", NS.mucUser)?.getChild("invite"));
        return invite?.attrs.from as string | undefined;
      });
      await bob.joinRoom(room, "bob");
      await carol.joinRoom(room, "carol");
      await waitFor("both members to be listed", async () => {
        const chat = await api.sdk.chats.retrieve(created.chatID);
        const ids = chat.participants.items.map((p) => p.id);
        return ids.includes("bob@localhost") && ids.includes("carol@localhost") && ids.includes("alice@localhost");
      });

      const carolsID = await carol.message(room, "hi all", { type: "groupchat" });
      const fromCarol = await api.messageWith(created.chatID, (m) => m.text === "hi all", "carol's message");
      expect(fromCarol).toMatchObject({ senderID: "carol@localhost", isSender: false });
      // Nobody corrects or retracts someone else's message: bob's attempts change nothing (his own next message,
      // which the room relays after them, shows they were handled).
      await bob.correct(room, carolsID, "carol said nothing", { type: "groupchat" });
      await bob.retract(room, carolsID, { type: "groupchat" });
      await bob.message(room, "bob was here", { type: "groupchat" });
      await api.messageWith(created.chatID, (m) => m.text === "bob was here", "bob's message after his attempts");
      expect(await api.sdk.messages.retrieve(fromCarol.id, { chatID: created.chatID })).toMatchObject({
        text: "hi all",
      });
      expect(
        (await api.sdk.messages.retrieve(fromCarol.id, { chatID: created.chatID })).editedTimestamp,
      ).toBeUndefined();

      await api.sdk.messages.send(created.chatID, { text: "hello trio" });
      for (const member of [bob, carol]) {
        const got = await member.waitForMessage((m) => m.body === "hello trio");
        expect(got.type).toBe("groupchat");
        expect(got.from).toBe(`${room}/alice`);
      }
      // The room's echo of our own message is not a second message.
      await sleep(200);
      expect((await api.messages(created.chatID)).filter((m) => m.text === "hello trio")).toHaveLength(1);

      const ours = (await api.messages(created.chatID)).find((m) => m.text === "hello trio")!;
      const echo = bob.received().find((s) => s.getChildText("body") === "hello trio")!;
      await bob.react(room, String(echo.attrs.id), ["👏"], { type: "groupchat" });
      await waitFor("bob's reaction in the room", async () =>
        (await api.sdk.messages.retrieve(ours.id, { chatID: created.chatID })).reactions?.some(
          (r) => r.participantID === "bob@localhost" && r.reactionKey === "👏",
        ),
      );
    });

    it("joins a room a contact invites it to, and ignores a stranger's invitation", async () => {
      const stranger = await peer("dave", "stranger");
      const trap = `trap-${Date.now()}@${server.mucDomain}`;
      await stranger.joinRoom(trap, "dave");
      await stranger.invite(trap, "alice@localhost");
      await stranger.message("alice@localhost", "did you get my invitation?");
      const daveChat = await api.chatTitled(accountID, "dave");
      await api.messageWith(
        daveChat.id,
        (m) => m.text === "did you get my invitation?",
        "dave's message after his invitation",
      );
      expect((await api.sdk.chats.list({ accountIDs: [accountID] })).items.map((c) => c.title)).not.toContain(
        trap.split("@")[0],
      );

      await phone.addContact("carol@localhost", "Carol Clark");
      const room = `book-club-${Date.now()}@${server.mucDomain}`;
      await carol.joinRoom(room, "carol");
      await carol.invite(room, "alice@localhost");
      const chat = await api.chatTitled(accountID, room.split("@")[0]);
      expect(chat.type).toBe("group");
      await carol.message(room, "welcome, alice", { type: "groupchat" });
      const m = await api.messageWith(chat.id, (x) => x.text === "welcome, alice", "carol's welcome");
      expect(m.senderID).toBe("carol@localhost");
    });

    it("sends and receives an image, byte-exact both ways", async () => {
      const bytes = imageBytes();
      const form = new FormData();
      form.append("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type: "image/png" }), "sunset.png");
      const upload = await fetch(`${runtime.url}/v1/assets/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${runtime.token}` },
        body: form,
      }).then((r) => r.json());
      const sent = await api.sdk.messages.send(bobChat, { attachment: { uploadID: upload.uploadID } });
      const status = await waitFor(
        "the upload to settle",
        async () =>
          (await api.sdk.messages.retrieve(sent.pendingMessageID, { chatID: bobChat })).sendStatus?.status !==
            "PENDING" && (await api.sdk.messages.retrieve(sent.pendingMessageID, { chatID: bobChat })).sendStatus,
      );
      expect([status.status, status.message]).toEqual(["SUCCESS", undefined]);
      const got = await bob.waitForMessage((m) => m.stanza.getChild("x", NS.oob) !== undefined);
      const url = got.stanza.getChild("x", NS.oob)!.getChildText("url")!;
      expect(new Uint8Array(await (await fetch(url)).arrayBuffer())).toEqual(bytes);

      const theirs = imageBytes();
      const link = await bob.upload(theirs, "holiday.png", "image/png");
      await bob.send(
        xml(
          "message",
          { to: "alice@localhost", type: "chat", id: `file-${Date.now()}` },
          xml("body", {}, link),
          xml("x", { xmlns: NS.oob }, xml("url", {}, link)),
        ),
      );
      const m = await api.messageWith(bobChat, (x) => x.attachments?.[0]?.fileName === "holiday.png", "bob's image");
      expect(m.attachments![0]).toMatchObject({ type: "img", mimeType: "image/png" });
      expect(m.text ?? "").toBe("");
      const downloaded = await api.sdk.assets.download({ url: m.attachments![0].id! });
      expect(downloaded.error ?? undefined).toBeUndefined();
      const served = await fetch(`${runtime.url}/v1/assets/serve?url=${enc(downloaded.srcURL!)}`, {
        headers: { authorization: `Bearer ${runtime.token}` },
      });
      expect(served.status).toBe(200);
      expect(new Uint8Array(await served.arrayBuffer())).toEqual(theirs);
      // An attachment ID is not a way to make inboxd fetch any URL.
      const forged = await api.raw("POST", "/v1/assets/download", {
        url: `mxc://xmpp/${btoa("http://127.0.0.1:1/secret").replace(/=+$/, "")}.AAAAAAAAAAAAAAAAAAAAAA`,
      });
      expect(forged.status).toBe(404);
    });

    it("lists the roster as contacts, searches it, and resolves an exact JID to start a chat", async () => {
      await phone.addContact("carol@localhost", "Carol Clark");
      const listed = await waitFor("carol in the roster", async () => {
        const all = [];
        for await (const u of api.sdk.accounts.contacts.list(accountID)) all.push(u);
        return all.find((u) => u.id === "carol@localhost");
      });
      expect(listed.fullName).toBe("Carol Clark");
      const found = await api.sdk.accounts.contacts.search(accountID, { query: "clark" });
      expect(found.items.map((u) => u.id)).toContain("carol@localhost");
      const exact = await api.sdk.accounts.contacts.search(accountID, { query: "gina@localhost" });
      expect(exact.items[0]).toMatchObject({ id: "gina@localhost" });

      const started = await api.sdk.chats.start({ accountID, user: { id: "gina@localhost" } });
      expect(started.status).toBe("created");
      const again = await api.sdk.chats.start({ accountID, user: { username: "gina@localhost" } });
      expect(again).toMatchObject({ chatID: started.chatID, status: "existing" });
      await api.sdk.messages.send(started.chatID, { text: "hello gina" });
      const gina = await peer("gina");
      await gina.waitForMessage((m) => m.body === "hello gina");
    });

    it("holds a second account, and pages back past what its first connect loaded through the archive", async () => {
      const frank = await peer("frank");
      for (let i = 0; i < 75; i++) await frank.message("erin@localhost", `note ${i}`);
      const session = await api.login(fields("erin"));
      expect(session.status).toBe("complete");
      expect(session.accountID).not.toBe(accountID);
      await api.accountStatus(session.accountID, "connected");
      const chat = await api.chatTitled(session.accountID, "frank");
      // The first connect read only the newest messages (the runtime's xmppFirstBackfill); paging loads the rest.
      const texts = (await api.messages(chat.id)).map((m) => m.text);
      expect(texts).toEqual(Array.from({ length: 75 }, (_, i) => `note ${74 - i}`));
    });

    it("reconnects after the server restarts (connecting, then connected) and loses or doubles nothing", async () => {
      const seen: string[] = [];
      await server.restart();
      await api.accountStatus(accountID, "connecting", seen);
      // A new client: the old one's sends are only safe once it has reconnected, which it does in its own time.
      const bobAgain = await peer("bob", "after-restart");
      for (let i = 0; i < 3; i++) await bobAgain.message("alice@localhost", `after the restart ${i}`);
      await api.accountStatus(accountID, "connected", seen, 20_000);
      expect(seen.slice(0, 1)).toEqual(["connecting"]);
      for (let i = 0; i < 3; i++)
        await api.messageWith(bobChat, (m) => m.text === `after the restart ${i}`, `message ${i} after the restart`);
      expect(duplicates((await api.messages(bobChat)).map((m) => m.text))).toEqual([]);
      await api.sdk.messages.send(bobChat, { text: "still here" });
      await bobAgain.waitForMessage((m) => m.body === "still here", 10_000);
    });

    it("gets what was sent while inboxd itself was down, once, and keeps the account and its history", async () => {
      const before = (await api.messages(bobChat)).length;
      const [bobNow, carolNow] = [await peer("bob", "downtime"), await peer("carol", "downtime")];
      await runtime.restart(async () => {
        await bobNow.message("alice@localhost", "while inboxd was down");
        await carolNow.message("alice@localhost", "me too");
      });
      await api.accountStatus(accountID, "connected", undefined, 20_000);
      await api.messageWith(bobChat, (m) => m.text === "while inboxd was down", "bob's message from the downtime");
      const texts = (await api.messages(bobChat)).map((m) => m.text);
      expect(duplicates(texts)).toEqual([]);
      expect(texts.length).toBe(before + 1);
      const carolChat = await api.chatTitled(accountID, "Carol Clark"); // titled from the roster
      expect((await api.messages(carolChat.id)).map((m) => m.text)).toContain("me too");
    });

    it("reconnects a login with the reconnect flow, keeping the account ID and history; a changed password needs sign-in", async () => {
      const session = await api.login(fields("alice"), { loginID });
      expect(session).toMatchObject({ status: "complete", accountID });
      await api.accountStatus(accountID, "connected");
      expect((await api.messages(bobChat)).some((m) => m.text === "sent while you were away")).toBe(true);

      await server.register("alice", "a-new-password");
      await server.restart();
      const account = await api.accountStatus(accountID, "reconnect_required", undefined, 20_000);
      expect(account.statusText).toMatch(/sign in again/i);
      await server.register("alice", password("alice"));
    });
  });
}

export type { Element };
