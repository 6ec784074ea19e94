import { describe, expect, it } from "vitest";
import { describeEndpoint } from "./connection.ts";

describe("describeEndpoint (the account's connecting status)", () => {
  it("names the JID's domain, and the address the login gave when it is another", () => {
    expect(describeEndpoint({ domain: "example.org", service: "xmpp://example.org:5222" })).toBe("example.org");
    expect(describeEndpoint({ domain: "Example.org", service: "xmpps://example.org:5223" })).toBe("Example.org");
    expect(describeEndpoint({ domain: "localhost", service: "xmpp://127.0.0.1:15222" })).toBe("localhost at 127.0.0.1:15222");
    expect(describeEndpoint({ domain: "example.org", service: "wss://chat.example.org/xmpp-websocket" })).toBe("example.org at chat.example.org");
  });
});
