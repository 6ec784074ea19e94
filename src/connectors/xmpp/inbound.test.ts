import xml from "@xmpp/xml";
import { describe, expect, it } from "vitest";
import type { Room } from "./muc.ts";
import { translate, type InboundContext } from "./inbound.ts";
import { NS, parseMessage } from "./stanzas.ts";

// What a remote party may put in a stanza, and what it must not achieve with it.
const context = (): InboundContext => ({
  selfBare: "alice@x",
  mediaKey: "k",
  rooms: new Map<string, Room>(),
  sentHere: new Set(),
});
const forged = (wrapper: (inner: ReturnType<typeof xml>) => ReturnType<typeof xml>) =>
  xml(
    "message",
    { from: "bob@x/phone", to: "alice@x", type: "chat", id: "outer" },
    wrapper(xml("message", { from: "alice@x/phone", to: "carol@x", id: "f1" }, xml("body", {}, "I quit"))),
  );

describe("XMPP inbound translation", () => {
  it("ignores carbons and archive results hidden inside someone's message, live or read back from the archive", async () => {
    const asCarbon = forged((inner) =>
      xml("sent", { xmlns: NS.carbons }, xml("forwarded", { xmlns: NS.forward }, inner)),
    );
    const asResult = forged((inner) =>
      xml("result", { xmlns: NS.mam, queryid: "q", id: "A" }, xml("forwarded", { xmlns: NS.forward }, inner)),
    );
    for (const stanza of [asCarbon, asResult]) {
      expect((await translate(stanza, context())).events).toEqual([]);
      expect((await translate(stanza, context(), true)).events).toEqual([]);
    }
  });

  it("takes invitations only live, and never the account's own", async () => {
    const invite = xml(
      "message",
      { from: "room@conf.x", to: "alice@x" },
      xml("x", { xmlns: NS.mucUser }, xml("invite", { from: "carol@x/pc" })),
    );
    expect((await translate(invite, context())).invite).toEqual({
      room: "room@conf.x",
      inviter: "carol@x/pc",
      password: undefined,
    });
    expect((await translate(invite, context(), true)).invite).toBeUndefined();
  });

  it("does not take an occupant's claimed JID as the account itself", async () => {
    const rooms = new Map<string, Room>([
      [
        "room@conf.x",
        {
          jid: "room@conf.x",
          nick: "alice",
          title: "room",
          occupants: new Map([["mallory", { nick: "mallory", jid: "alice@x" }]]),
        },
      ],
    ]);
    const { events } = await translate(
      xml("message", { from: "room@conf.x/mallory", type: "groupchat", id: "g1" }, xml("body", {}, "hi")),
      { ...context(), rooms },
    );
    expect(events).toEqual([
      expect.objectContaining({ type: "message", message: expect.objectContaining({ isSender: false }) }),
    ]);
  });

  it("keeps timestamps finite and never in the future, and drops links that are not web URLs", () => {
    const at = (stamp: string) =>
      parseMessage(xml("message", { from: "bob@x" }, xml("body", {}, "x"), xml("delay", { xmlns: NS.delay, stamp })))
        .timestamp;
    expect(at("garbage")).toBeUndefined();
    expect(at("2999-01-01T00:00:00Z")).toBeLessThanOrEqual(Date.now());
    const links = parseMessage(
      xml(
        "message",
        { from: "bob@x" },
        ...["not a url", "http://h/%E0%A4%A", "file:///etc/passwd", "https://ok.example/a.png"].map((u) =>
          xml("x", { xmlns: NS.oob }, xml("url", {}, u)),
        ),
      ),
    ).links;
    expect(links.map((l) => l.url)).toEqual(["https://ok.example/a.png"]);
  });
});
