/**
 * The Matrix connector against a real Synapse, on any runtime that serves the app: inboxd signs in as alice, and
 * plain Matrix clients act as bob, carol and dave (and as alice's phone, another session of the same account). The
 * API is driven through the official SDK wherever it has the operation; every JSON answer is checked against the
 * served OpenAPI document. Tests run in order and build on each other, as a person's session would.
 */
import { crc32, deflateSync } from "node:zlib";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startSynapse, type SynapseServer } from "../harness/synapse.ts";
import { ResponseChecker } from "../scenario/openapi-check.ts";
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
import { connect } from "../events/kit.ts";
import { Peer } from "./peer.ts";

/** A valid PNG of the given size (a gradient), made here so its dimensions are known. */
function pngOf(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) rows.set([x % 256, y % 256, (x + y) % 256], y * (width * 3 + 1) + 1 + x * 3);
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A first sync loads this many messages per room, so that paging back has to reach the server. */
const FIRST_BACKFILL = 20;

export function matrixSuite(target: MatrixTarget) {
  describeWithSynapse(`Matrix connector on ${target.name}, against a real Synapse`, () => {
    let server: SynapseServer;
    let runtime: Runtime;
    let api: Client;
    let bob: Peer;
    let carol: Peer;
    let phone: Peer; // alice's other session
    let accountID: string;
    let loginID: string;
    let dmRoom: string; // bob's DM with alice
    let dmChat: string;
    let historyRoom: string;
    let longRoom: string;
    const password = (user: string) => `${user}-secret-${user.length * 7}`;
    const peers: Peer[] = [];
    const track = (p: Peer) => (peers.push(p), p);
    const fields = (user: string, pass = password(user)) => ({
      username: `@${user}:${server.serverName}`,
      password: pass,
      homeserver: server.url,
    });
    const login = (f: Record<string, string>, reconnect?: { loginID: string }, flowID = "password") =>
      api.login(f, reconnect, { bridgeID: MATRIX_BRIDGE, flowID });
    let session2: Peer; // the alice session the account uses after the reconnect
    let whatsappBot: Peer; // a bridge's bot, as a WhatsApp bridge has one
    let signalBot: Peer;
    let bridgedAccounts: string[] = []; // the accounts of the networks bridged into alice's Matrix account
    const accountsOfLogin = async () =>
      (await api.sdk.accounts.list())
        .filter((a) => (a as { loginID?: string }).loginID === loginID)
        .map((a) => a.accountID)
        .sort();
    let admin: Peer;

    beforeAll(async () => {
      server = await startSynapse();
      const registered = {
        alice: await server.register("alice", password("alice"), { displayName: "Alice Liddell" }),
        bob: await server.register("bob", password("bob"), { displayName: "Bob" }),
        carol: await server.register("carol", password("carol"), { displayName: "Carol" }),
        dave: await server.register("dave", password("dave"), { displayName: "Dave" }),
        admin: await server.register("admin", password("admin"), { admin: true }),
        signalbot: await server.register("signalbot", password("signalbot"), { displayName: "Signal bridge bot" }),
        whatsappbot: await server.register("whatsappbot", password("whatsappbot"), {
          displayName: "WhatsApp bridge bot",
        }),
      };
      whatsappBot = track(await Peer.from(server, registered.whatsappbot));
      signalBot = track(await Peer.from(server, registered.signalbot));
      admin = track(await Peer.from(server, registered.admin));
      bob = track(await Peer.from(server, registered.bob));
      carol = track(await Peer.from(server, registered.carol));
      phone = track(await Peer.from(server, registered.alice));
      runtime = await target.start(randomToken(), { firstBackfill: FIRST_BACKFILL });
      api = new Client(runtime);
      api.spec = new ResponseChecker(await api.ok("GET", "/v1/spec"));
      // Before alice has an inboxd account: a DM from bob with two messages, and a group with a long history.
      dmRoom = await bob.createRoom({ invite: [registered.alice.userID], isDirect: true });
      await phone.join(dmRoom);
      await phone.request("PUT", `/_matrix/client/v3/user/${enc(registered.alice.userID)}/account_data/m.direct`, {
        [bob.userID]: [dmRoom],
      });
      await bob.text(dmRoom, "sent while you were away");
      await bob.text(dmRoom, "and a second one");
      historyRoom = await bob.createRoom({
        name: "Book club",
        invite: [registered.alice.userID, registered.carol.userID],
      });
      await phone.join(historyRoom);
      await carol.join(historyRoom);
      for (let i = 1; i <= 45; i++) await (i % 2 ? bob : carol).text(historyRoom, `chapter ${i}`);
      // Edits and reactions of messages more than a sync's timeline (100 events) older than they are: a first load
      // carries the relations without their messages.
      longRoom = await bob.createRoom({
        name: "Long read",
        invite: [registered.alice.userID, registered.carol.userID],
      });
      await phone.join(longRoom);
      await carol.join(longRoom);
      const opening = [
        await bob.text(longRoom, "page 1"),
        await carol.text(longRoom, "page 2"),
        await bob.text(longRoom, "page 3"),
        await bob.text(longRoom, "page 4"),
      ];
      const filler = Array.from({ length: 110 }, (_, i) => `filler ${i}`);
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let text = filler.shift(); text; text = filler.shift()) await bob.text(longRoom, text);
        }),
      );
      await bob.edit(longRoom, opening[0], "page 1, revised");
      await carol.edit(longRoom, opening[2], "page 3, as carol would have it"); // bob's message: not carol's to edit
      await carol.react(longRoom, opening[0], "👍");
      await bob.react(longRoom, opening[1], "🎉");
      await carol.redact(longRoom, await carol.react(longRoom, opening[3], "🤔"));
    });

    afterAll(async () => {
      await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
      await runtime?.stop();
      await server?.close();
    });

    it("lists the Matrix bridge with a password and an access-token flow", async () => {
      const bridge = await api.ok("GET", `/v1/bridges/${MATRIX_BRIDGE}`);
      expect(bridge).toMatchObject({ id: MATRIX_BRIDGE, displayName: "Matrix" });
      const flows = await api.ok("GET", `/v1/bridges/${MATRIX_BRIDGE}/login-flows`).catch(() => undefined);
      if (flows) expect((flows.items ?? flows).map((f: { id: string }) => f.id)).toEqual(["password", "token"]);
      const started = await api.ok("POST", `/v1/bridges/${MATRIX_BRIDGE}/login-sessions`, { flowID: "password" });
      const byID = Object.fromEntries(started.currentStep.fields.map((f: { id: string }) => [f.id, f]));
      expect(byID.password).toMatchObject({ type: "password" });
      expect(byID.homeserver.optional).toBe(true);
      await api.ok("DELETE", `/v1/bridges/${MATRIX_BRIDGE}/login-sessions/${started.loginSessionID}`);
    });

    it("fails logins with codes that say why: wrong password, not a homeserver, unreachable, unknown token", async () => {
      expect(await login(fields("alice", "wrong"))).toMatchObject({
        status: "failed",
        error: { code: "invalid_credentials" },
      });
      // inboxd itself answers HTTP but is no homeserver.
      expect(await login({ ...fields("alice"), homeserver: runtime.url })).toMatchObject({
        status: "failed",
        error: { code: "not_a_homeserver" },
      });
      expect(await login({ ...fields("alice"), homeserver: "http://127.0.0.1:9" })).toMatchObject({
        status: "failed",
        error: { code: "unreachable" },
      });
      expect(await login({ homeserver: server.url, accessToken: "syt_not_a_token" }, undefined, "token")).toMatchObject(
        { status: "failed", error: { code: "invalid_token" } },
      );
      const accounts = await api.sdk.accounts.list();
      expect(accounts.filter((a) => a.accountID.startsWith("local-matrix"))).toEqual([]);
    });

    it("signs in with a password, goes backfilling → connected, and has the DM and the group with recent history", async () => {
      const session = await login(fields("alice"));
      expect(session.status).toBe("complete");
      accountID = session.accountID;
      loginID = session.loginID;
      expect(JSON.stringify(session)).not.toContain(password("alice"));
      const account = await api.accountStatus(accountID, "connected", undefined, 30_000);
      expect(account.user).toMatchObject({
        id: `@alice:${server.serverName}`,
        fullName: "Alice Liddell",
        isSelf: true,
      });
      const dm = await api.chatTitled(accountID, "Bob");
      dmChat = dm.id;
      expect(dm.type).toBe("single");
      expect((await api.messages(dmChat)).map((m) => [m.text, m.isSender, m.senderName])).toEqual(
        expect.arrayContaining([
          ["and a second one", false, "Bob"],
          ["sent while you were away", false, "Bob"],
        ]),
      );
      // Membership shows as notices, with the names people have (the creation comes before its creator's join).
      const notices = (await api.messages(dmChat)).filter((m) => m.type === "NOTICE").map((m) => m.text);
      expect(notices).toEqual(
        expect.arrayContaining([
          "Bob created the room",
          "Bob joined",
          "Bob invited Alice Liddell",
          "Alice Liddell joined",
        ]),
      );
      const group = await api.chatTitled(accountID, "Book club");
      expect(group.type).toBe("group");
      expect(group.participants.items.map((p) => p.fullName).sort()).toEqual(["Alice Liddell", "Bob", "Carol"]);
      const texts = (await api.sdk.messages.list(group.id)).items.map((m) => m.text);
      expect(texts).toContain("chapter 45");
      expect(texts).not.toContain("chapter 1");
      const everything = JSON.stringify([
        await api.ok("GET", "/v1/accounts"),
        await api.ok("GET", `/v1/bridges/${MATRIX_BRIDGE}`),
      ]);
      expect(everything).not.toMatch(/syt_|accessToken|access_token/);
    });

    it("signs in again as the same user (by user name) into the same account and the same device", async () => {
      const inboxdDevices = async () =>
        (await phone.request("GET", "/_matrix/client/v3/devices")).devices
          .filter((d: { display_name?: string }) => d.display_name === "inboxd")
          .map((d: { device_id: string }) => d.device_id);
      const before = await inboxdDevices();
      expect(before).toHaveLength(1);
      const again = await login({ username: "alice", password: password("alice"), homeserver: server.url });
      expect(again).toMatchObject({ status: "complete", accountID, loginID });
      await api.accountStatus(accountID, "connected", undefined, 30_000);
      expect(await inboxdDevices()).toEqual(before);
      expect((await api.sdk.accounts.list()).filter((a) => a.accountID.startsWith("local-matrix"))).toHaveLength(1);
    });

    it("pages back past what the first sync loaded, to the room's first message", async () => {
      const group = await api.chatTitled(accountID, "Book club");
      const texts = (await api.messages(group.id)).map((m) => m.text).filter((t) => t?.startsWith("chapter"));
      expect(texts).toHaveLength(45);
      expect(new Set(texts).size).toBe(45);
      expect(texts.at(-1)).toBe("chapter 1");
    });

    it("pages back with the edits and reactions that arrived before their messages", async () => {
      const chat = await api.chatTitled(accountID, "Long read");
      const byText = new Map((await api.messages(chat.id)).map((m) => [m.text, m]));
      expect([...byText.keys()].filter((t) => t?.startsWith("filler"))).toHaveLength(110);
      const reactions = (text: string) =>
        (byText.get(text)?.reactions ?? []).map((r) => [r.participantID, r.reactionKey]).sort();
      expect(byText.get("page 1, revised")?.editedTimestamp).toBeDefined();
      expect(reactions("page 1, revised")).toEqual([[carol.userID, "👍"]]);
      expect(reactions("page 2")).toEqual([[bob.userID, "🎉"]]);
      expect(byText.has("page 3")).toBe(true);
      expect(byText.get("page 3")?.editedTimestamp).toBeUndefined();
      expect(byText.has("page 4")).toBe(true);
      expect(reactions("page 4")).toEqual([]);
    });

    it("receives text, formatting, a reply, an edit, reactions (added and removed) and a redaction", async () => {
      const first = await bob.text(dmRoom, "how are you?");
      const m1 = await api.messageWith(dmChat, (m) => m.text === "how are you?", "bob's message");
      await bob.send(dmRoom, {
        msgtype: "m.text",
        body: "**bold** and a link",
        format: "org.matrix.custom.html",
        formatted_body: '<strong>bold</strong> and <a href="https://example.org/x">a link</a>',
      });
      await api.messageWith(
        dmChat,
        (m) => m.text === "bold and a link (https://example.org/x)",
        "the formatted message as text",
      );
      await bob.reply(dmRoom, first, "that was me asking");
      const reply = await api.messageWith(
        dmChat,
        (m) => m.text === "that was me asking",
        "the reply (fallback stripped)",
      );
      expect(reply.linkedMessageID).toBe(m1.id);
      await bob.edit(dmRoom, first, "how are you doing?");
      await api.messageWith(dmChat, (m) => m.id === m1.id && m.text === "how are you doing?", "the edit");
      const thumbs = await bob.react(dmRoom, first, "👍");
      await carol.join(dmRoom).catch(() => undefined); // not a member: her reaction cannot reach the room
      await api.messageWith(
        dmChat,
        (m) =>
          m.id === m1.id && (m.reactions ?? []).some((r) => r.reactionKey === "👍" && r.participantID === bob.userID),
        "bob's reaction",
      );
      await bob.redact(dmRoom, thumbs);
      await api.messageWith(
        dmChat,
        (m) => m.id === m1.id && (m.reactions ?? []).length === 0,
        "the reaction removed by redaction",
      );
      const doomed = await bob.text(dmRoom, "delete me");
      await api.messageWith(dmChat, (m) => m.text === "delete me", "the doomed message");
      await bob.redact(dmRoom, doomed);
      await waitFor(
        "the redacted message to go",
        async () => !(await api.messages(dmChat)).some((m) => m.text === "delete me"),
      );
      await bob.send(dmRoom, { msgtype: "m.notice", body: "a bot says hi" });
      const notice = await api.messageWith(dmChat, (m) => m.text === "a bot says hi", "the notice");
      expect(notice.type).toBe("NOTICE");
    });

    it("sends text with markdown, a reply, an edit, a reaction and its removal, and a delete that bob receives", async () => {
      const sent = await api.sdk.messages.send(dmChat, { text: "hello **bob**" });
      const got = await bob.waitForEvent((e, r) => r === dmRoom && e.content?.body === "hello **bob**");
      expect(got.event.content).toMatchObject({
        format: "org.matrix.custom.html",
        formatted_body: "hello <strong>bob</strong>",
      });
      const mine = await api.messageWith(
        dmChat,
        (m) => m.id === sent.pendingMessageID && m.text === "hello **bob**",
        "the sent message",
      );
      const fromBob = await bob.text(dmRoom, "reply to this");
      const target = await api.messageWith(dmChat, (m) => m.text === "reply to this", "bob's message to reply to");
      await api.sdk.messages.send(dmChat, { text: "replying", replyToMessageID: target.id });
      const reply = await bob.waitForEvent((e) => e.content?.body === "replying");
      expect(reply.event.content["m.relates_to"]).toMatchObject({ "m.in_reply_to": { event_id: fromBob } });
      await api.sdk.messages.update(mine.id, { chatID: dmChat, text: "hello again" });
      const edit = await bob.waitForEvent(
        (e) => e.sender === phone.userID && e.content?.["m.relates_to"]?.rel_type === "m.replace",
      );
      expect(edit.event.content["m.new_content"]).toMatchObject({ body: "hello again" });
      await api.sdk.chats.messages.reactions.add(target.id, { chatID: dmChat, reactionKey: "🎉" });
      const reaction = await bob.waitForEvent((e) => e.sender === phone.userID && e.type === "m.reaction");
      expect(reaction.event.content["m.relates_to"]).toMatchObject({
        rel_type: "m.annotation",
        event_id: fromBob,
        key: "🎉",
      });
      await api.sdk.chats.messages.reactions.delete("🎉", { chatID: dmChat, messageID: target.id });
      await bob.waitForEvent(
        (e) => e.type === "m.room.redaction" && (e.redacts ?? e.content?.redacts) === reaction.event.event_id,
      );
      const gone = await api.sdk.messages.send(dmChat, { text: "to be deleted" });
      const goneEvent = await bob.waitForEvent((e) => e.content?.body === "to be deleted");
      await api
        .messageWith(
          dmChat,
          (m) => m.id === gone.pendingMessageID && m.sendStatus?.status === "SUCCESS",
          "the message confirmed",
          15_000,
        )
        .catch(() => undefined);
      await api.ok("DELETE", `/v1/chats/${enc(dmChat)}/messages/${enc(gone.pendingMessageID)}`);
      await bob.waitForEvent(
        (e) => e.type === "m.room.redaction" && (e.redacts ?? e.content?.redacts) === goneEvent.event.event_id,
      );
      // Nothing was doubled by the echo of alice's own sends.
      const texts = (await api.messages(dmChat)).map((m) => m.text);
      expect(texts.filter((t) => t === "hello again")).toHaveLength(1);
      expect(texts.filter((t) => t === "replying")).toHaveLength(1);
    });

    it("shows bob's read receipt on alice's message, and marks read on the server", async () => {
      const sent = await api.sdk.messages.send(dmChat, { text: "did you read this?" });
      const event = await bob.waitForEvent((e) => e.content?.body === "did you read this?");
      await bob.receipt(dmRoom, event.event.event_id);
      const read = await api.messageWith(
        dmChat,
        (m) => m.id === sent.pendingMessageID && m.seen !== undefined && m.seen !== false,
        "bob's read receipt",
      );
      expect(read.sendStatus?.deliveredToUsers).toContain(bob.userID);
      const incoming = await bob.text(dmRoom, "read me");
      await api.messageWith(dmChat, (m) => m.text === "read me", "bob's message");
      await api.ok("POST", `/v1/chats/${enc(dmChat)}/read`, {});
      const receipt = await bob.waitForEphemeral(
        (e, r) =>
          r === dmRoom && e.type === "m.receipt" && e.content?.[incoming]?.["m.read"]?.[phone.userID] !== undefined,
      );
      expect(receipt.roomID).toBe(dmRoom);
      // The fully-read marker moves with it (what Element shows as the read line).
      const marker = await phone.request(
        "GET",
        `/_matrix/client/v3/user/${enc(phone.userID)}/rooms/${enc(dmRoom)}/account_data/m.fully_read`,
      );
      expect(marker.event_id).toBe(incoming);
    });

    it("passes typing both ways (bob's arrives on /v1/ws)", async () => {
      await api.ok("POST", `/v1/chats/${enc(dmChat)}/typing`, { state: "typing" });
      await bob.waitForEphemeral(
        (e, r) => r === dmRoom && e.type === "m.typing" && e.content.user_ids.includes(phone.userID),
      );
      await api.ok("POST", `/v1/chats/${enc(dmChat)}/typing`, { state: "paused" });
      await bob.waitForEphemeral(
        (e, r) => r === dmRoom && e.type === "m.typing" && !e.content.user_ids.includes(phone.userID),
      );
      const ws = await connect(runtime.url, runtime.token, [dmChat]);
      try {
        await bob.typing(dmRoom, true);
        await ws.next(
          (f) =>
            f.type === "typing" &&
            f.chatID === dmChat &&
            f.typing?.participantID === bob.userID &&
            f.typing.state === "typing",
          { what: "bob typing", timeoutMs: 10_000 },
        );
        await bob.typing(dmRoom, false);
        await ws.next(
          (f) =>
            f.type === "typing" &&
            f.chatID === dmChat &&
            f.typing?.participantID === bob.userID &&
            f.typing.state === "paused",
          { what: "bob stopping", timeoutMs: 10_000 },
        );
      } finally {
        ws.ws.close();
      }
    });

    it("sends and receives an image, byte-exact both ways", async () => {
      const bytes = imageBytes();
      await bob.sendImage(dmRoom, bytes, { mimeType: "image/png", fileName: "cat.png", width: 1, height: 1 });
      const got = await api.messageWith(dmChat, (m) => m.type === "IMAGE", "bob's image");
      const attachment = got.attachments![0];
      expect(attachment).toMatchObject({
        type: "img",
        mimeType: "image/png",
        fileName: "cat.png",
        size: { width: 1, height: 1 },
      });
      const served = await fetch(`${runtime.url}/v1/assets/serve?url=${enc(attachment.id!)}`, {
        headers: { authorization: `Bearer ${runtime.token}` },
      });
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
      const range = await fetch(`${runtime.url}/v1/assets/serve?url=${enc(attachment.id!)}`, {
        headers: { authorization: `Bearer ${runtime.token}`, range: "bytes=100-199" },
      });
      expect(range.status).toBe(206);
      expect(Buffer.from(await range.arrayBuffer()).equals(Buffer.from(bytes.subarray(100, 200)))).toBe(true);
      const upload = await api.sdk.assets.upload({
        file: new File([Buffer.from(bytes)], "dog.png", { type: "image/png" }),
      });
      await api.sdk.messages.send(dmChat, { attachment: { uploadID: upload.uploadID! } });
      const image = await bob.waitForEvent((e) => e.content?.msgtype === "m.image" && e.sender === phone.userID);
      expect(image.event.content).toMatchObject({
        body: "dog.png",
        filename: "dog.png",
        info: { mimetype: "image/png", size: bytes.length, w: 1, h: 1 },
      });
      expect(Buffer.from(await bob.download(image.event.content.url)).equals(Buffer.from(bytes))).toBe(true);
      expect(image.event.content.info.thumbnail_url).toBeUndefined(); // 1×1: its own thumbnail
    });

    it("receives a location, a sticker, a video, a file, a voice message, an emote and a thread's replies", async () => {
      const root = await bob.text(dmRoom, "a thread starts here");
      await bob.send(dmRoom, { msgtype: "m.location", body: "The old harbour", geo_uri: "geo:51.5,-0.12" });
      const sticker = await bob.upload(pngOf(64, 64), "image/png", "sticker.png");
      await bob.send(
        dmRoom,
        { body: "a waving cat", url: sticker, info: { mimetype: "image/png", w: 64, h: 64, size: 100 } },
        "m.sticker",
      );
      const clip = await bob.upload(new Uint8Array(2048), "video/mp4", "clip.mp4");
      await bob.send(dmRoom, {
        msgtype: "m.video",
        body: "clip.mp4",
        url: clip,
        info: { mimetype: "video/mp4", size: 2048, duration: 3500, w: 320, h: 240 },
      });
      const report = await bob.upload(new TextEncoder().encode("numbers"), "text/csv", "report.csv");
      await bob.send(dmRoom, {
        msgtype: "m.file",
        body: "this quarter's numbers",
        filename: "report.csv",
        url: report,
        info: { mimetype: "text/csv", size: 7 },
      });
      const voice = await bob.upload(new Uint8Array(512), "audio/ogg", "voice.ogg");
      await bob.send(dmRoom, {
        msgtype: "m.audio",
        body: "Voice message",
        url: voice,
        info: { mimetype: "audio/ogg", size: 512, duration: 2000 },
        "org.matrix.msc3245.voice": {},
      });
      await bob.send(dmRoom, { msgtype: "m.emote", body: "waves" });
      await bob.send(dmRoom, {
        msgtype: "m.text",
        body: "in the thread",
        "m.relates_to": {
          rel_type: "m.thread",
          event_id: root,
          is_falling_back: true,
          "m.in_reply_to": { event_id: root },
        },
      });
      const threaded = await api.messageWith(dmChat, (m) => m.text === "in the thread", "the thread's reply");
      const messages = await api.messages(dmChat);
      const find = (match: (m: (typeof messages)[number]) => boolean) => messages.find(match)!;
      expect(threaded.linkedMessageID).toBe(find((m) => m.text === "a thread starts here").id);
      expect(find((m) => m.type === "LOCATION")?.text).toBe("The old harbour\ngeo:51.5,-0.12");
      expect(find((m) => m.type === "STICKER")?.attachments?.[0]).toMatchObject({
        id: sticker,
        isSticker: true,
        size: { width: 64, height: 64 },
      });
      expect(find((m) => m.type === "VIDEO")?.attachments?.[0]).toMatchObject({
        id: clip,
        mimeType: "video/mp4",
        duration: 3.5,
        size: { width: 320, height: 240 },
      });
      const file = find((m) => m.type === "FILE");
      expect(file).toMatchObject({
        text: "this quarter's numbers",
        attachments: [{ id: report, fileName: "report.csv", mimeType: "text/csv", fileSize: 7 }],
      });
      expect(find((m) => m.type === "VOICE")?.attachments?.[0]).toMatchObject({
        id: voice,
        isVoiceNote: true,
        duration: 2,
      });
      expect(messages.some((m) => m.text === "* Bob waves")).toBe(true);
      // The file downloads through the API, as it was uploaded.
      const served = await fetch(`${runtime.url}/v1/assets/serve?url=${enc(report)}`, {
        headers: { authorization: `Bearer ${runtime.token}` },
      });
      expect(served.status).toBe(200);
      expect(await served.text()).toBe("numbers");
    });

    it("sends a large image with a thumbnail the homeserver made", async () => {
      const big = pngOf(1600, 1200);
      const upload = await api.sdk.assets.upload({
        file: new File([new Uint8Array(big)], "landscape.png", { type: "image/png" }),
      });
      await api.sdk.messages.send(dmChat, { attachment: { uploadID: upload.uploadID! } });
      const image = await bob.waitForEvent((e) => e.content?.body === "landscape.png");
      const info = image.event.content.info;
      expect(info).toMatchObject({ w: 1600, h: 1200, mimetype: "image/png", thumbnail_info: { w: 800, h: 600 } });
      expect(info.thumbnail_url).toMatch(/^mxc:\/\//);
      expect((await bob.download(info.thumbnail_url)).byteLength).toBe(info.thumbnail_info.size);
    });

    it("creates a group of three with a title; the invitees join and messages flow both ways", async () => {
      const created = await api.sdk.chats.create({
        accountID,
        type: "group",
        participantIDs: [bob.userID, carol.userID],
        title: "Trip planning",
      });
      const roomID = await bob.waitForInvite((_r, state) =>
        state.some((e) => e.type === "m.room.name" && e.content?.name === "Trip planning"),
      );
      await bob.join(roomID);
      await carol.join(roomID);
      await api.sdk.messages.send(created.chatID, { text: "where to?" });
      await carol.waitForEvent((e, r) => r === roomID && e.content?.body === "where to?");
      await carol.text(roomID, "the sea");
      await api.messageWith(created.chatID, (m) => m.text === "the sea" && m.senderName === "Carol", "carol's answer");
      const chat = await api.sdk.chats.retrieve(created.chatID);
      expect(chat).toMatchObject({ title: "Trip planning", type: "group" });
    });

    it("starts a DM by user ID: the room is direct for both sides", async () => {
      const started = await api.ok("POST", "/v1/chats", {
        accountID,
        mode: "start",
        user: { id: `@dave:${server.serverName}` },
      });
      expect(started.status).toBe("created");
      const chat = await api.sdk.chats.retrieve(started.chatID);
      expect(chat.type).toBe("single");
      const direct = await phone.request("GET", `/_matrix/client/v3/user/${enc(phone.userID)}/account_data/m.direct`);
      expect(direct[`@dave:${server.serverName}`]).toHaveLength(1);
      const again = await api.ok("POST", "/v1/chats", {
        accountID,
        mode: "start",
        user: { id: `@dave:${server.serverName}` },
      });
      expect(again).toMatchObject({ status: "existing", chatID: started.chatID });
      // A name, not a user ID: found through the user directory.
      const byName = await api.ok("POST", "/v1/chats", { accountID, mode: "start", user: { fullName: "Dave" } });
      expect(byName).toMatchObject({ status: "existing", chatID: started.chatID });
    });

    it("lists the people of its rooms as contacts, searches the user directory, and looks up an exact user ID", async () => {
      const all = [];
      for await (const u of api.sdk.accounts.contacts.list(accountID)) all.push(u.id);
      expect(all).toEqual(expect.arrayContaining([bob.userID, carol.userID]));
      const found = await api.sdk.accounts.contacts.search(accountID, { query: "dave" });
      expect(found.items.map((u) => [u.id, u.fullName])).toContainEqual([`@dave:${server.serverName}`, "Dave"]);
      const exact = await api.sdk.accounts.contacts.search(accountID, { query: `@dave:${server.serverName}` });
      expect(exact.items.map((u) => u.id)).toContain(`@dave:${server.serverName}`);
      const nobody = await api
        .ok("POST", "/v1/chats", { accountID, mode: "start", user: { id: `@nobody:${server.serverName}` } })
        .catch((e: Error) => e.message);
      expect(String(nobody)).toMatch(/422/);
    });

    it("counts unread messages as the server does, and marks the chat read when alice reads it on her phone", async () => {
      await api.sdk.chats.markRead(dmChat, {});
      await waitFor("nothing unread", async () => (await api.sdk.chats.retrieve(dmChat)).unreadCount === 0);
      await bob.text(dmRoom, "unread one");
      await bob.setState(dmRoom, "m.room.topic", "", { topic: "a new topic" }); // a notice here, no notification there
      const last = await bob.text(dmRoom, "unread two");
      await api.messageWith(dmChat, (m) => m.text === "unread two", "bob's messages");
      expect(
        (await api.messages(dmChat)).some((m) => m.type === "NOTICE" && /changed the topic/.test(m.text ?? "")),
      ).toBe(true);
      await waitFor("the server's count", async () => (await api.sdk.chats.retrieve(dmChat)).unreadCount === 2);
      await phone.receipt(dmRoom, last);
      await waitFor(
        "the chat to be read elsewhere",
        async () => (await api.sdk.chats.retrieve(dmChat)).unreadCount === 0,
      );
    });

    it("waits out the server's rate limit instead of failing a send", async () => {
      const override = `/_synapse/admin/v1/users/${enc(phone.userID)}/override_ratelimit`;
      await admin.request("POST", override, { messages_per_second: 1, burst_count: 1 });
      try {
        const sent = [];
        for (const text of ["limited 1", "limited 2", "limited 3"])
          sent.push((await api.sdk.messages.send(dmChat, { text })).pendingMessageID);
        for (const text of ["limited 1", "limited 2", "limited 3"])
          await bob.waitForEvent((e) => e.content?.body === text, 20_000);
        for (const id of sent)
          await api.messageWith(
            dmChat,
            (m) => m.id === id && m.sendStatus?.status === "SUCCESS",
            `${id} confirmed`,
            20_000,
          );
      } finally {
        await admin.request("DELETE", override);
      }
    });

    it("round-trips pin, low priority and mute with alice's other session", async () => {
      await api.ok("PATCH", `/v1/chats/${enc(dmChat)}`, { isPinned: true, isMuted: true });
      expect(await phone.tags(dmRoom)).toHaveProperty("m.favourite");
      const rules = await phone.request("GET", "/_matrix/client/v3/pushrules/");
      expect(JSON.stringify(rules.global.override)).toContain(dmRoom);
      await phone.request(
        "PUT",
        `/_matrix/client/v3/user/${enc(phone.userID)}/rooms/${enc(dmRoom)}/tags/m.lowpriority`,
        {},
      );
      await phone.request(
        "DELETE",
        `/_matrix/client/v3/user/${enc(phone.userID)}/rooms/${enc(dmRoom)}/tags/m.favourite`,
      );
      await waitFor("the tags changed elsewhere to show", async () => {
        const chat = await api.sdk.chats.retrieve(dmChat);
        return chat.isLowPriority === true && chat.isPinned === false && chat.isMuted === true;
      });
      await api.ok("PATCH", `/v1/chats/${enc(dmChat)}`, { isLowPriority: false, isMuted: false });
      expect(await phone.tags(dmRoom)).not.toHaveProperty("m.lowpriority");
      const after = await phone.request("GET", "/_matrix/client/v3/pushrules/");
      expect(JSON.stringify(after.global.override ?? [])).not.toContain(dmRoom);
    });

    it("shows a malformed encrypted message as unreadable, and sends to the room encrypted", async () => {
      const roomID = await bob.createRoom({ name: "Secret", invite: [phone.userID], encrypted: true });
      await phone.join(roomID);
      // Not a real Megolm message (the sender key is no Curve25519 key): no key could ever open it, so it is not waited for.
      await bob.send(
        roomID,
        {
          algorithm: "m.megolm.v1.aes-sha2",
          ciphertext: "AwgAEnAC",
          device_id: "BOBDEVICE",
          sender_key: "abc",
          session_id: "xyz",
        },
        "m.room.encrypted",
      );
      const chat = await api.chatTitled(accountID, "Secret");
      const notice = await api.messageWith(
        chat.id,
        // The encrypted message's notice (others, such as the room's naming, may come first).
        (m) => m.senderID === bob.userID && m.type === "NOTICE" && /🔒/.test(m.text ?? ""),
        "the unreadable notice",
      );
      expect(notice.text).toMatch(/cannot be decrypted on this device/);
      expect(notice.senderID).toBe(bob.userID);
      await api.ok("POST", `/v1/chats/${enc(chat.id)}/messages`, { text: "the secret words" });
      // bob's session here has no crypto: what reaches the room is ciphertext (base64, so never a space), not words.
      const { event } = await bob.waitForEvent(
        (e, room) => room === roomID && e.sender !== bob.userID && e.type === "m.room.encrypted",
      );
      expect(event.content.algorithm).toBe("m.megolm.v1.aes-sha2");
      expect(JSON.stringify(event)).not.toContain("secret words");
    });

    it("refuses an edit or a redaction of bob's message forged by carol", async () => {
      const group = await api.chatTitled(accountID, "Book club");
      const original = await bob.text(historyRoom, "the original words");
      const message = await api.messageWith(group.id, (m) => m.text === "the original words", "bob's message");
      await carol.edit(historyRoom, original, "words bob never said");
      // The server lets a moderator redact others' messages; here, as for every network, only the sender's own count.
      const levels = await bob.request(
        "GET",
        `/_matrix/client/v3/rooms/${enc(historyRoom)}/state/m.room.power_levels/`,
      );
      await bob.setState(historyRoom, "m.room.power_levels", "", {
        ...levels,
        users: { ...levels.users, [carol.userID]: 50 },
      });
      await carol.redact(historyRoom, original);
      await carol.text(historyRoom, "after the forgery");
      await api.messageWith(group.id, (m) => m.text === "after the forgery", "carol's next message");
      expect((await api.messages(group.id)).find((m) => m.id === message.id)?.text).toBe("the original words");
    });

    it("gets what was sent while inboxd was down, across a gappy sync, once each", async () => {
      await runtime.restart(async () => {
        for (let i = 1; i <= 130; i++) await bob.text(dmRoom, `offline ${i}`);
      });
      await api.accountStatus(accountID, "connected", undefined, 30_000);
      await waitFor(
        "all 130 offline messages",
        async () => (await api.messages(dmChat)).filter((m) => m.text?.startsWith("offline ")).length >= 130,
        30_000,
      );
      const texts = (await api.messages(dmChat)).map((m) => m.text).filter((t) => t?.startsWith("offline "));
      expect(texts).toHaveLength(130);
      expect(texts[0]).toBe("offline 130");
      expect(texts.at(-1)).toBe("offline 1");
    });

    it("reconnects after Synapse restarts, and loses or doubles nothing", async () => {
      await server.restart();
      await bob.text(dmRoom, "after the server restart");
      await api.messageWith(
        dmChat,
        (m) => m.text === "after the server restart",
        "the message after the restart",
        30_000,
      );
      await api.accountStatus(accountID, "connected", undefined, 30_000);
      const texts = (await api.messages(dmChat)).map((m) => m.text);
      expect(texts.filter((t) => t === "after the server restart")).toHaveLength(1);
      expect(texts.filter((t) => t === "how are you doing?")).toHaveLength(1);
    });

    it("shows connecting with the reason while Synapse is gone, and catches up once it is back", async () => {
      await server.kill();
      const away = await api.accountStatus(accountID, "connecting", undefined, 45_000);
      expect(away.statusText).toMatch(/cannot reach .*retrying in \d+ s/);
      await server.start();
      await bob.text(dmRoom, "after the server came back");
      await api.messageWith(
        dmChat,
        (m) => m.text === "after the server came back",
        "the message after the outage",
        45_000,
      );
      await api.accountStatus(accountID, "connected", undefined, 30_000);
    });

    it("shows an invitation as a chat, and joins the room when alice answers", async () => {
      const roomID = await carol.createRoom({ name: "Carol's party", invite: [phone.userID] });
      const chat = await api.chatTitled(accountID, "Carol's party");
      await api.messageWith(chat.id, (m) => /invited you/.test(m.text ?? ""), "the invitation notice");
      await api.sdk.messages.send(chat.id, { text: "count me in" });
      await carol.waitForEvent((e, r) => r === roomID && e.content?.body === "count me in");
    });

    it("follows a room upgrade to the new room, and archives a room alice was removed from", async () => {
      // Public, so that members may join its successor without a new invitation (as a space's rooms are, too).
      const old = await bob.createRoom({ name: "Old house", invite: [phone.userID], preset: "public_chat" });
      await phone.join(old);
      const before = await api.chatTitled(accountID, "Old house");
      const upgraded = await bob.request("POST", `/_matrix/client/v3/rooms/${enc(old)}/upgrade`, { new_version: "9" });
      await waitFor(
        "alice in the new room",
        async () => {
          const joined = await phone.request("GET", "/_matrix/client/v3/joined_rooms");
          return joined.joined_rooms.includes(upgraded.replacement_room);
        },
        20_000,
      );
      await waitFor("the old chat archived", async () => (await api.sdk.chats.retrieve(before.id)).isArchived === true);
      await bob.text(upgraded.replacement_room, "in the new house");
      const chats = await waitFor("the new room's chat", async () => {
        const page = await api.sdk.chats.list({ accountIDs: [accountID] });
        return page.items.find((c) => c.title === "Old house" && c.id !== before.id);
      });
      await api.messageWith(chats.id, (m) => m.text === "in the new house", "the message in the new room");
      await bob.request("POST", `/_matrix/client/v3/rooms/${enc(upgraded.replacement_room)}/kick`, {
        user_id: phone.userID,
        reason: "moving on",
      });
      await waitFor(
        "the chat archived after the kick",
        async () => (await api.sdk.chats.retrieve(chats.id)).isArchived === true,
      );
      expect((await api.messages(chats.id)).some((m) => /removed Alice Liddell: moving on/.test(m.text ?? ""))).toBe(
        true,
      );
    });

    it("declines an invitation when its chat is archived", async () => {
      const roomID = await carol.createRoom({ name: "Not for me", invite: [phone.userID] });
      const chat = await api.chatTitled(accountID, "Not for me");
      await api.ok("PATCH", `/v1/chats/${enc(chat.id)}`, { isArchived: true });
      const left = await carol.waitForEvent(
        (e, r) =>
          r === roomID &&
          e.type === "m.room.member" &&
          e.state_key === phone.userID &&
          e.content.membership === "leave",
      );
      expect(left.event.sender).toBe(phone.userID);
    });

    it("shows bridged networks' rooms under an account per network, the bridge bot's room archived there", async () => {
      // As bridges do: each bot makes its portal rooms, with bridge state it sends itself, and invites the people.
      const icon = await whatsappBot.upload(new TextEncoder().encode("the WhatsApp icon"), "image/png", "wa.png");
      const bridgeState = (type: string, protocol: string, displayname: string, bot: Peer) => ({
        type,
        state_key: `inboxd.test://${protocol}/chan`,
        content: {
          bridgebot: bot.userID,
          protocol: { id: protocol, displayname, ...(protocol === "whatsapp" ? { avatar_url: icon } : {}) },
          channel: { id: "chan" },
        },
      });
      const waRoom = await whatsappBot.createRoom({
        name: "Family (WhatsApp)",
        invite: [phone.userID, bob.userID],
        initialState: [bridgeState("m.bridge", "whatsapp", "WhatsApp", whatsappBot)],
      });
      const signalRoom = await signalBot.createRoom({
        name: "Climbing (Signal)",
        invite: [phone.userID, bob.userID],
        initialState: [bridgeState("uk.half-shot.bridge", "signal", "Signal", signalBot)],
      });
      // Bridge state from someone who is not the bridge's bot does not make a room bridged.
      const forged = await bob.createRoom({
        name: "Not really Telegram",
        invite: [phone.userID],
        initialState: [bridgeState("m.bridge", "telegram", "Telegram", bob)].map((e) => ({
          ...e,
          content: { ...e.content, bridgebot: whatsappBot.userID },
        })),
      });
      for (const room of [waRoom, signalRoom, forged]) await phone.join(room);
      for (const room of [waRoom, signalRoom]) await bob.join(room);
      const botRoom = await whatsappBot.createRoom({ invite: [phone.userID], isDirect: true });
      await phone.join(botRoom);
      await whatsappBot.text(botRoom, "Bridge status: connected");

      const { whatsapp, signal } = await waitFor("an account for each bridged network", async () => {
        const accounts = await api.sdk.accounts.list();
        const find = (network: string) => accounts.find((a) => (a as { network?: string }).network === network);
        const [whatsapp, signal] = [find("WhatsApp"), find("Signal")];
        return whatsapp && signal ? { whatsapp, signal } : undefined;
      });
      for (const [account, type] of [
        [whatsapp, "whatsapp"],
        [signal, "signal"],
      ] as const)
        expect(account).toMatchObject({
          loginID,
          user: { id: phone.userID },
          bridge: { id: MATRIX_BRIDGE, provider: "self-hosted", type },
          via: { accountID, servers: [] },
        });
      // The network's icon, as the bridge names it, downloads through the API.
      expect((whatsapp as { via?: { iconURL?: string } }).via?.iconURL).toBe(icon);
      expect((signal as { via?: { iconURL?: string } }).via?.iconURL).toBeUndefined();
      const served = await fetch(`${runtime.url}/v1/assets/serve?url=${enc(icon)}`, {
        headers: { authorization: `Bearer ${runtime.token}` },
      });
      expect(served.status).toBe(200);
      expect(await served.text()).toBe("the WhatsApp icon");
      const waChat = await api.chatTitled(whatsapp.accountID, "Family (WhatsApp)");
      const signalChat = await api.chatTitled(signal.accountID, "Climbing (Signal)");
      const shownUnderMatrix = async () =>
        (await api.sdk.chats.search({ accountIDs: [accountID], inbox: "primary", limit: 200 })).items.map(
          (c) => c.title,
        );
      expect(await shownUnderMatrix()).not.toContain("Family (WhatsApp)");
      expect(await shownUnderMatrix()).not.toContain("Climbing (Signal)");
      await api.chatTitled(accountID, "Not really Telegram"); // stays with Matrix
      expect((await api.sdk.accounts.list()).some((a) => (a as { network?: string }).network === "Telegram")).toBe(
        false,
      );

      // Messages both ways, through the Matrix account's sync and session.
      await bob.text(waRoom, "hello from the family group");
      await api.messageWith(waChat.id, (m) => m.text === "hello from the family group", "bob's bridged message");
      await api.ok("POST", `/v1/chats/${enc(waChat.id)}/messages`, { text: "hello back, through the bridge" });
      await bob.waitForEvent(
        (e, room) =>
          room === waRoom && e.sender === phone.userID && e.content?.body === "hello back, through the bridge",
      );

      // The bot's room: the WhatsApp account's, archived (out of the inbox), its messages there.
      const botChat = await waitFor("the bridge bot's room", async () =>
        (await api.sdk.chats.list({ accountIDs: [whatsapp.accountID] })).items.find((c) => c.id !== waChat.id),
      );
      expect(botChat.isArchived).toBe(true);
      await api.messageWith(botChat.id, (m) => m.text === "Bridge status: connected", "the bot's notice");
      const inbox = await api.sdk.chats.search({ accountIDs: [whatsapp.accountID], inbox: "primary" });
      expect(inbox.items.map((c) => c.id)).toEqual([waChat.id]);

      // A restart keeps every room with its account.
      await runtime.restart();
      await api.accountStatus(accountID, "connected", undefined, 30_000);
      await bob.text(signalRoom, "after the restart");
      await api.messageWith(
        signalChat.id,
        (m) => m.text === "after the restart",
        "the Signal room after a restart",
        30_000,
      );
      bridgedAccounts = [whatsapp.accountID, signal.accountID];
      expect(await accountsOfLogin()).toEqual([accountID, ...bridgedAccounts].sort());
      expect((await api.sdk.chats.list({ accountIDs: [whatsapp.accountID] })).items.map((c) => c.id).sort()).toEqual(
        [waChat.id, botChat.id].sort(),
      );
      expect(await shownUnderMatrix()).not.toContain("Family (WhatsApp)");
    });

    it("asks for sign-in again when the session is signed out elsewhere", async () => {
      const devices = await phone.request("GET", "/_matrix/client/v3/devices");
      const device = devices.devices.find((d: { display_name?: string }) => d.display_name === "inboxd");
      expect(device).toBeDefined();
      const auth = {
        type: "m.login.password",
        identifier: { type: "m.id.user", user: phone.userID },
        password: password("alice"),
      };
      const first = await phone
        .request("POST", "/_matrix/client/v3/delete_devices", { devices: [device.device_id] })
        .catch((e: { body?: { session?: string } }) => e.body);
      if (first?.session)
        await phone.request("POST", "/_matrix/client/v3/delete_devices", {
          devices: [device.device_id],
          auth: { ...auth, session: first.session },
        });
      const account = await api.accountStatus(accountID, "reconnect_required", undefined, 45_000);
      expect(account.statusText).toMatch(/sign in again/i);
    });

    it("reconnects the login in place with an access token, keeping the account and its history", async () => {
      const token = (await server.register("alice2", password("alice2"))).accessToken; // a session of another user…
      const other = await login({ homeserver: server.url, accessToken: token }, undefined, "token");
      expect(other.status).toBe("complete"); // …is a second account beside alice's
      expect(other.accountID).not.toBe(accountID);
      session2 = track(await Peer.login(server, "alice", password("alice")));
      const again = await login({ homeserver: server.url, accessToken: session2.accessToken }, { loginID }, "token");
      expect(again).toMatchObject({ status: "complete", accountID });
      await api.accountStatus(accountID, "connected", undefined, 30_000);
      expect((await api.messages(dmChat)).some((m) => m.text === "sent while you were away")).toBe(true);
      // The bridged networks' accounts stay with the login, and stand as it does.
      expect(await accountsOfLogin()).toEqual([accountID, ...bridgedAccounts].sort());
      for (const id of bridgedAccounts) await api.accountStatus(id, "connected", undefined, 30_000);
    });

    it("logs the session out on the server when the account is removed", async () => {
      const whoami = () =>
        fetch(`${server.url}/_matrix/client/v3/account/whoami`, {
          headers: { authorization: `Bearer ${session2.accessToken}` },
        });
      expect((await whoami()).status).toBe(200);
      await api.ok("POST", `/v1/bridges/${MATRIX_BRIDGE}/logins/${enc(loginID)}/remove`, {});
      // The token the account used is dead now: the device is gone from the server.
      expect((await whoami()).status).toBe(401);
      expect(await accountsOfLogin()).toEqual([]); // the bridged networks' accounts went with it
    });
  });
}
