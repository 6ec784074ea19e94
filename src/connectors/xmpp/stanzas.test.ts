import xml from "@xmpp/xml";
import { describe, expect, it } from "vitest";
import { NS, parseMessage, unwrap } from "./stanzas.ts";

// Parsing of what other clients send, including forms no test peer produces: fallbacks, older retractions,
// forged carbons.
describe("XMPP message stanzas", () => {
  it("drops the quoted part of a reply that XEP-0428 marks as fallback (offsets in code points)", () => {
    const quote = "> 👋 hi\n";
    const stanza = xml(
      "message",
      { from: "bob@x/phone", to: "alice@x", type: "chat", id: "r1" },
      xml("body", {}, `${quote}hello back`),
      xml("reply", { xmlns: NS.reply, to: "alice@x/laptop", id: "m0" }),
      xml(
        "fallback",
        { xmlns: NS.fallback, for: NS.reply },
        xml("body", { start: "0", end: String([...quote].length) }),
      ),
    );
    expect(parseMessage(stanza)).toMatchObject({ id: "r1", body: "hello back", replyTo: "m0" });
  });

  it("reads a retraction in the current form and in the older fastening form, without its fallback text", () => {
    const current = xml(
      "message",
      { from: "bob@x" },
      xml("retract", { xmlns: NS.retract, id: "m1" }),
      xml("fallback", { xmlns: NS.fallback, for: NS.retract }),
      xml("body", {}, "This person attempted to retract…"),
    );
    expect(parseMessage(current)).toMatchObject({ retracts: "m1", body: undefined });
    const older = xml(
      "message",
      { from: "bob@x" },
      xml("apply-to", { xmlns: NS.fasten, id: "m2" }, xml("retract", { xmlns: NS.retractOld })),
    );
    expect(parseMessage(older).retracts).toBe("m2");
  });

  it("prefers the origin-id, and reads reactions as a whole set", () => {
    const stanza = xml(
      "message",
      { from: "bob@x", id: "stanza" },
      xml("origin-id", { xmlns: NS.sid, id: "origin" }),
      xml("reactions", { xmlns: NS.reactions, id: "m3" }, xml("reaction", {}, "👍"), xml("reaction", {}, "🎉")),
    );
    expect(parseMessage(stanza)).toMatchObject({ id: "origin", reactions: { id: "m3", keys: ["👍", "🎉"] } });
    expect(
      parseMessage(xml("message", { from: "bob@x" }, xml("reactions", { xmlns: NS.reactions, id: "m3" }))).reactions,
    ).toEqual({ id: "m3", keys: [] });
  });

  it("accepts carbons only from the account's own JID", () => {
    const carbon = (from: string) =>
      xml(
        "message",
        { from, to: "alice@x/laptop" },
        xml(
          "sent",
          { xmlns: NS.carbons },
          xml(
            "forwarded",
            { xmlns: NS.forward },
            xml("message", { from: "alice@x/phone", to: "bob@x", id: "c1" }, xml("body", {}, "hi")),
          ),
        ),
      );
    expect(unwrap(carbon("alice@x"), "alice@x")?.via).toBe("carbon-sent");
    expect(unwrap(carbon("mallory@evil"), "alice@x")).toBeUndefined();
  });

  it("gives an archived message the archive's timestamp", () => {
    const result = xml(
      "message",
      { to: "alice@x/laptop" },
      xml(
        "result",
        { xmlns: NS.mam, queryid: "q", id: "A1" },
        xml(
          "forwarded",
          { xmlns: NS.forward },
          xml("delay", { xmlns: NS.delay, stamp: "2026-01-02T03:04:05Z" }),
          xml("message", { from: "bob@x/phone", id: "m4" }, xml("body", {}, "old")),
        ),
      ),
    );
    const found = unwrap(result, "alice@x")!;
    expect(found).toMatchObject({ via: "archive", archiveID: "A1", queryID: "q" });
    expect(parseMessage(found.inner)).toMatchObject({
      id: "m4",
      body: "old",
      timestamp: Date.parse("2026-01-02T03:04:05Z"),
    });
  });
});
