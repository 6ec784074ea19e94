import { describe, expect, it } from "vitest";
import { DEPRECATED_SINCE, successorLink, v0Response } from "./deprecation.ts";
import { endpointAt, isV0Path } from "./endpoints.ts";

const answer = (headers: Record<string, string> = {}) => new Response("{}", { headers });

describe("successor links", () => {
  it("name the /v1 resource with the request's own values, encoded once", () => {
    expect(successorLink("get-chat", { chatID: "!abc:beeper.com" })).toBe(
      '</v1/chats/!abc%3Abeeper.com>; rel="successor-version"; title="GET /v1/chats/{chatID}"',
    );
    expect(successorLink("search-users", { accountID: "a/b", query: "x" })).toBe(
      '</v1/accounts/a%2Fb/contacts>; rel="successor-version"; title="GET /v1/accounts/{accountID}/contacts"',
    );
    expect(successorLink("get-accounts")).toBe('</v1/accounts>; rel="successor-version"; title="GET /v1/accounts"');
  });

  it("keep a parameter the request did not give as its name, percent-encoded, and carry the method in the title", () => {
    expect(successorLink("clear-chat-reminder", {})).toBe(
      '</v1/chats/%7BchatID%7D/reminders>; rel="successor-version"; title="DELETE /v1/chats/{chatID}/reminders"',
    );
    expect(successorLink("archive-chat", { chatID: 42 })).toContain("</v1/chats/%7BchatID%7D/archive>");
  });

  it("never throw on a value no URI can carry (they are made on the way out of every answer)", () => {
    expect(successorLink("get-chat", { chatID: "a\uD800b" })).toContain("</v1/chats/a%EF%BF%BDb>");
  });
});

describe("v0Response", () => {
  it("marks every answer deprecated (RFC 9745 date) and links the successor from the URL when the answer has no link", () => {
    const res = v0Response(answer(), new URL("http://127.0.0.1/v0/get-chat?chatID=7&maxParticipantCount=3"));
    expect(DEPRECATED_SINCE).toMatch(/^@\d+$/);
    expect(res.headers.get("deprecation")).toBe(DEPRECATED_SINCE);
    expect(res.headers.get("link")).toBe(successorLink("get-chat", { chatID: "7" }));
  });

  it("keeps the link an answer already carries (a POST's, made from its body)", () => {
    const link = successorLink("send-message", { chatID: "c1" });
    expect(v0Response(answer({ link }), new URL("http://127.0.0.1/v0/send-message")).headers.get("link")).toBe(link);
  });

  it("points an unknown /v0 path at the /v1 generation's document", () => {
    expect(v0Response(answer(), new URL("http://127.0.0.1/v0/nothing-here")).headers.get("link")).toBe(
      '</v1/spec>; rel="successor-version"',
    );
  });
});

describe("/v0 paths", () => {
  it("are the REST generation's, not the MCP transports'", () => {
    for (const path of ["/v0", "/v0/", "/v0/get-chat", "/v0/unknown", "/v0/mcpx"])
      expect(isV0Path(path), path).toBe(true);
    for (const path of ["/v0/mcp", "/v0/sse", "/v0/messages", "/v0/messages/x", "/v1/chats", "/v01/x"])
      expect(isV0Path(path), path).toBe(false);
  });

  it("name an endpoint only by their exact name", () => {
    expect(endpointAt("/v0/search-chats")).toBe("search-chats");
    for (const path of ["/v0/toString", "/v0/__proto__", "/v0/search-chats/x", "/v0/"])
      expect(endpointAt(path), path).toBeUndefined();
  });
});
