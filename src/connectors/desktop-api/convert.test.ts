import { describe, expect, it } from "vitest";
import { chatOf, MediaURLs, messageOf } from "./convert.ts";

describe("desktop-api conversions", () => {
  const media = new MediaURLs("local-desktop-api_login_Ab-c_9");

  it("wraps an upstream's media URLs as this login's, and unwraps only those", () => {
    for (const url of ["mxc://inboxd/abc123", "localmxc://inboxd/x", "mxc://beeper.com/a%2Fb?c=d"]) {
      const wrapped = media.wrap(url);
      expect(wrapped).toMatch(/^mxc:\/\/desktop-api\.local-desktop-api-login-Ab-c-9\/[A-Za-z0-9_-]+$/);
      expect(media.unwrap(wrapped)).toBe(url);
    }
    expect(media.unwrap("mxc://inboxd/abc123")).toBeUndefined();
    expect(new MediaURLs("another").unwrap(media.wrap("mxc://inboxd/abc123"))).toBeUndefined();
  });

  it("maps a chat: flags only where the upstream said, the member count where it holds more than it listed", () => {
    const chat = chatOf(
      {
        id: "!c",
        accountID: "a",
        title: "Group",
        type: "group",
        participants: { items: [{ id: "u1" }], hasMore: true, total: 40 },
        isPinned: true,
        unreadCount: 3,
      },
      media,
    );
    expect(chat).toEqual({
      networkChatID: "!c",
      type: "group",
      title: "Group",
      participants: [{ id: "u1" }],
      participantCount: 40,
      isPinned: true,
      unreadCount: 3,
    });
    expect(chatOf({ id: "!d", accountID: "a" }, media)).toEqual({
      networkChatID: "!d",
      type: "single",
      title: "!d",
      participants: [],
    });
  });

  it("maps a message: its type, edit time, reply, attachments (wrapped) and, for history, reactions", () => {
    const m = messageOf(
      {
        id: "m1",
        chatID: "!c",
        accountID: "a",
        senderID: "u1",
        timestamp: "2026-01-02T03:04:05.000Z",
        type: "IMAGE",
        text: "look",
        editedTimestamp: "2026-01-02T03:05:00.000Z",
        linkedMessageID: "m0",
        attachments: [{ type: "img", id: "mxc://inboxd/pic", fileName: "p.png", size: { width: 2, height: 3 } }],
        reactions: [{ id: "r", participantID: "u2", reactionKey: "👍" }],
      },
      media,
      true,
    );
    expect(m).toMatchObject({
      networkMessageID: "m1",
      type: "IMAGE",
      timestamp: Date.parse("2026-01-02T03:04:05.000Z"),
      editedTimestamp: Date.parse("2026-01-02T03:05:00.000Z"),
      replyTo: "m0",
      reactions: [{ senderID: "u2", reactionKey: "👍" }],
    });
    expect(m.attachments).toEqual([
      { type: "img", id: media.wrap("mxc://inboxd/pic"), fileName: "p.png", size: { width: 2, height: 3 } },
    ]);
    expect(
      messageOf(
        {
          id: "m2",
          chatID: "!c",
          accountID: "a",
          senderID: "u1",
          timestamp: "2026-01-02T03:04:05.000Z",
          type: "REACTION",
        },
        media,
      ).type,
    ).toBe("TEXT");
  });
});
