import { describe, expect, it } from "vitest";
import { applyState, MAX_PARTICIPANTS, newRoom, roomChat, roomTitle } from "./rooms.ts";
import { parseEvent, type MatrixEvent } from "./event.ts";
import { translate, UNREADABLE } from "./timeline.ts";

const SELF = "@alice:example.org";
const ROOM = "!room:example.org";

function room() {
  const r = newRoom(ROOM, "join");
  for (const [id, name] of [
    [SELF, "Alice"],
    ["@bob:example.org", "Bob"],
    ["@carol:example.org", "Carol"],
  ])
    applyState(
      r,
      event({ type: "m.room.member", state_key: id, sender: id, content: { membership: "join", displayname: name } }),
      SELF,
    );
  return r;
}

function event(partial: Partial<MatrixEvent> & { type: string }): MatrixEvent {
  return {
    event_id: `$${Math.random().toString(36).slice(2)}`,
    sender: "@bob:example.org",
    origin_server_ts: 1_700_000_000_000,
    content: {},
    ...partial,
  };
}

const one = (e: MatrixEvent) => translate(e, { room: room(), selfID: SELF });

describe("Matrix events in the common model", () => {
  it("refuses malformed events and events that name another room", () => {
    expect(
      parseEvent({ type: "m.room.message", sender: "@bob:x", room_id: "!other:x", event_id: "$1", content: {} }, ROOM),
    ).toBeUndefined();
    expect(parseEvent({ type: 5, sender: "@bob:x" }, ROOM)).toBeUndefined();
    expect(parseEvent("garbage", ROOM)).toBeUndefined();
    expect(
      parseEvent({ type: "m.room.message", sender: "@bob:x", event_id: "$1", content: [1] }, ROOM)?.content,
    ).toEqual({});
  });

  it("turns text, notices and emotes into messages with the sender's name", () => {
    expect(one(event({ type: "m.room.message", content: { msgtype: "m.text", body: "hi" } }))).toMatchObject([
      { type: "message", message: { text: "hi", senderName: "Bob", type: "TEXT" } },
    ]);
    expect(one(event({ type: "m.room.message", content: { msgtype: "m.notice", body: "bot" } }))[0]).toMatchObject({
      message: { type: "NOTICE" },
    });
    expect(one(event({ type: "m.room.message", content: { msgtype: "m.emote", body: "waves" } }))[0]).toMatchObject({
      message: { text: "* Bob waves" },
    });
  });

  it("reads replies, and thread messages as replies to the thread root (or to what they really answer)", () => {
    const reply = one(
      event({
        type: "m.room.message",
        content: {
          msgtype: "m.text",
          body: "> <@a:b> x\n\nyes",
          "m.relates_to": { "m.in_reply_to": { event_id: "$q" } },
        },
      }),
    );
    expect(reply[0]).toMatchObject({ message: { text: "yes", replyTo: "$q" } });
    const thread = one(
      event({
        type: "m.room.message",
        content: {
          msgtype: "m.text",
          body: "in thread",
          "m.relates_to": {
            rel_type: "m.thread",
            event_id: "$root",
            is_falling_back: true,
            "m.in_reply_to": { event_id: "$latest" },
          },
        },
      }),
    );
    expect(thread[0]).toMatchObject({ message: { replyTo: "$root" } });
    const inThreadReply = one(
      event({
        type: "m.room.message",
        content: {
          msgtype: "m.text",
          body: "x",
          "m.relates_to": {
            rel_type: "m.thread",
            event_id: "$root",
            is_falling_back: false,
            "m.in_reply_to": { event_id: "$that" },
          },
        },
      }),
    );
    expect(inThreadReply[0]).toMatchObject({ message: { replyTo: "$that" } });
  });

  it("turns m.replace into an edit by its sender, with m.new_content's text", () => {
    const edit = one(
      event({
        type: "m.room.message",
        content: {
          msgtype: "m.text",
          body: "* new",
          "m.new_content": { msgtype: "m.text", body: "new" },
          "m.relates_to": { rel_type: "m.replace", event_id: "$orig" },
        },
      }),
    );
    expect(edit).toEqual([
      {
        type: "edit",
        networkChatID: ROOM,
        networkMessageID: "$orig",
        text: "new",
        timestamp: 1_700_000_000_000,
        senderID: "@bob:example.org",
      },
    ]);
  });

  it("turns reactions into reactions with their own ID, and redactions into deletions by their sender", () => {
    const reaction = one(
      event({
        type: "m.reaction",
        event_id: "$r",
        content: { "m.relates_to": { rel_type: "m.annotation", event_id: "$m", key: "👍" } },
      }),
    );
    expect(reaction).toEqual([
      {
        type: "reaction",
        networkChatID: ROOM,
        networkMessageID: "$m",
        senderID: "@bob:example.org",
        reactionKey: "👍",
        networkReactionID: "$r",
      },
    ]);
    expect(one(event({ type: "m.room.redaction", redacts: "$m" }))).toEqual([
      { type: "delete", networkChatID: ROOM, networkMessageID: "$m", senderID: "@bob:example.org" },
    ]);
    expect(one(event({ type: "m.room.redaction", content: { redacts: "$v11" } }))[0]).toMatchObject({
      networkMessageID: "$v11",
    });
  });

  it("turns media into attachments with their mxc URL, size and dimensions, and a caption into text", () => {
    const image = one(
      event({
        type: "m.room.message",
        content: {
          msgtype: "m.image",
          body: "look at this",
          filename: "cat.png",
          url: "mxc://example.org/abc",
          info: { mimetype: "image/png", size: 1234, w: 10, h: 20 },
        },
      }),
    );
    expect(image[0]).toMatchObject({
      message: {
        type: "IMAGE",
        text: "look at this",
        attachments: [
          {
            type: "img",
            id: "mxc://example.org/abc",
            fileName: "cat.png",
            mimeType: "image/png",
            fileSize: 1234,
            size: { width: 10, height: 20 },
          },
        ],
      },
    });
    const voice = one(
      event({
        type: "m.room.message",
        content: {
          msgtype: "m.audio",
          body: "voice.ogg",
          url: "mxc://example.org/v",
          info: { duration: 3500 },
          "org.matrix.msc3245.voice": {},
        },
      }),
    );
    expect(voice[0]).toMatchObject({
      message: { type: "VOICE", attachments: [{ type: "audio", duration: 3.5, isVoiceNote: true }] },
    });
    const sticker = one(event({ type: "m.sticker", content: { body: "smile", url: "mxc://example.org/s", info: {} } }));
    expect(sticker[0]).toMatchObject({ message: { type: "STICKER", attachments: [{ isSticker: true }] } });
    const badURL = one(
      event({ type: "m.room.message", content: { msgtype: "m.file", body: "f", url: "https://evil.example/x" } }),
    );
    expect(badURL[0]).toMatchObject({ message: { type: "FILE", attachments: [] } });
  });

  it("shows an event it could not decrypt as a notice saying why, and a still-encrypted edit or reaction as nothing", () => {
    const encrypted = (unsigned?: Record<string, unknown>, content: Record<string, unknown> = {}) =>
      event({
        type: "m.room.encrypted",
        content: { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "x", session_id: "S", ...content },
        ...(unsigned ? { unsigned } : {}),
      });
    expect(one(encrypted())[0]).toMatchObject({
      message: { type: "NOTICE", text: expect.stringMatching(/cannot decrypt it .*password login/) },
    });
    expect(one(encrypted({ [UNREADABLE]: "waiting" }))[0]).toMatchObject({
      message: { type: "NOTICE", text: expect.stringMatching(/Waiting for this message's key/) },
    });
    expect(one(encrypted({ [UNREADABLE]: "failed" }))[0]).toMatchObject({
      message: { type: "NOTICE", text: expect.stringMatching(/cannot be decrypted on this device/) },
    });
    for (const rel_type of ["m.replace", "m.annotation"])
      expect(
        one(encrypted({ [UNREADABLE]: "waiting" }, { "m.relates_to": { rel_type, event_id: "$m", key: "👍" } })),
      ).toEqual([]);
  });

  it("shows membership and room changes as notices, and skips what Element does not show", () => {
    const join = one(
      event({
        type: "m.room.member",
        state_key: "@dave:example.org",
        sender: "@dave:example.org",
        content: { membership: "join", displayname: "Dave" },
      }),
    );
    expect(join[0]).toMatchObject({ message: { type: "NOTICE", text: "Dave joined" } });
    const name = one(event({ type: "m.room.name", state_key: "", content: { name: "Trip" } }));
    expect(name[0]).toMatchObject({ message: { text: "Bob changed the room name to Trip" } });
    expect(one(event({ type: "m.room.power_levels", state_key: "", content: {} }))).toEqual([]);
    expect(one(event({ type: "m.room.message", content: {}, unsigned: { redacted_because: {} } }))).toEqual([]);
  });

  it("caps an oversized text instead of holding all of it", () => {
    const huge = one(event({ type: "m.room.message", content: { msgtype: "m.text", body: "x".repeat(1_000_000) } }));
    expect((huge[0] as { message: { text: string } }).message.text.length).toBe(64 * 1024);
  });
});

describe("room names by the spec's rules", () => {
  it("uses the name, then the alias, then the other members, then Empty Room", () => {
    const r = room();
    expect(roomTitle(r, SELF)).toBe("Bob and Carol");
    applyState(
      r,
      event({ type: "m.room.canonical_alias", state_key: "", content: { alias: "#club:example.org" } }),
      SELF,
    );
    expect(roomTitle(r, SELF)).toBe("#club:example.org");
    applyState(r, event({ type: "m.room.name", state_key: "", content: { name: "Club" } }), SELF);
    expect(roomTitle(r, SELF)).toBe("Club");
    const alone = newRoom("!x:y", "join");
    expect(roomTitle(alone, SELF)).toBe("Empty Room");
  });

  it("counts the members beyond the heroes, and says who was there when everyone left", () => {
    const r = room();
    r.heroes = ["@bob:example.org"];
    r.joinedCount = 5;
    expect(roomTitle(r, SELF)).toBe("Bob and 3 others");
    r.joinedCount = 1;
    r.invitedCount = 0;
    expect(roomTitle(r, SELF)).toBe("Empty Room (was Bob)");
  });

  it("tells apart members who share a display name", () => {
    const r = room();
    applyState(
      r,
      event({
        type: "m.room.member",
        state_key: "@bob2:example.org",
        sender: "@bob2:example.org",
        content: { membership: "join", displayname: "Bob" },
      }),
      SELF,
    );
    expect(roomTitle(r, SELF)).toBe("Bob (@bob2:example.org), Bob (@bob:example.org) and Carol");
  });
});

describe("a room as a chat", () => {
  it("lists at most MAX_PARTICIPANTS members and counts the rest", () => {
    const r = newRoom(ROOM, "join");
    for (let i = 0; i < 250; i++)
      applyState(
        r,
        event({
          type: "m.room.member",
          state_key: `@u${i}:example.org`,
          sender: `@u${i}:example.org`,
          content: { membership: "join" },
        }),
        SELF,
      );
    applyState(
      r,
      event({ type: "m.room.member", state_key: SELF, sender: SELF, content: { membership: "join" } }),
      SELF,
    );
    const chat = roomChat(r, SELF, { id: SELF, isSelf: true }, false);
    expect(chat.participants).toHaveLength(MAX_PARTICIPANTS);
    expect(chat.participants[0]).toMatchObject({ id: SELF, isSelf: true });
    expect(chat.participantCount).toBe(251);
    expect(chat.type).toBe("group");
  });

  it("shows a direct chat with the other person's picture when the room has none", () => {
    const r = room();
    r.members.delete("@carol:example.org");
    applyState(
      r,
      event({
        type: "m.room.member",
        state_key: "@bob:example.org",
        content: { membership: "join", displayname: "Bob", avatar_url: "mxc://example.org/bob" },
      }),
      SELF,
    );
    expect(roomChat(r, SELF, { id: SELF, isSelf: true }, true)).toMatchObject({
      type: "single",
      title: "Bob",
      imgURL: "mxc://example.org/bob",
    });
  });
});

describe("names in notices", () => {
  it("names a room's creator by the name they join with, though the creation comes first", () => {
    const r = newRoom(ROOM, "join");
    r.names.set("@bob:example.org", "Bob"); // what the sync's pre-scan of the timeline records
    expect(
      translate(event({ type: "m.room.create", state_key: "", content: {} }), { room: r, selfID: SELF })[0],
    ).toMatchObject({ message: { text: "Bob created the room", senderName: "Bob" } });
  });
});
