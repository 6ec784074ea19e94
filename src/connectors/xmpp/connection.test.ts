import { describe, expect, it } from "vitest";
import { Client } from "@xmpp/client-core";
import { describeEndpoint, dropDataAfterStreamClose } from "./connection.ts";

describe("describeEndpoint (the account's connecting status)", () => {
  it("names the JID's domain, and the address the login gave when it is another", () => {
    expect(describeEndpoint({ domain: "example.org", service: "xmpp://example.org:5222" })).toBe("example.org");
    expect(describeEndpoint({ domain: "Example.org", service: "xmpps://example.org:5223" })).toBe("Example.org");
    expect(describeEndpoint({ domain: "localhost", service: "xmpp://127.0.0.1:15222" })).toBe(
      "localhost at 127.0.0.1:15222",
    );
    expect(describeEndpoint({ domain: "example.org", service: "wss://chat.example.org/xmpp-websocket" })).toBe(
      "example.org at chat.example.org",
    );
  });
});

describe("dropDataAfterStreamClose", () => {
  it("drops bytes that come after the stream closed (no parser) instead of throwing, and passes on the others", () => {
    const entity = new Client({ service: "xmpp://127.0.0.1:5222", domain: "localhost" } as never);
    const connection = entity as unknown as { parser: unknown; _onData(data: Uint8Array): void };
    connection.parser = null;
    expect(() => connection._onData(Buffer.from("<presence/>"))).toThrow(TypeError); // the library as it is
    dropDataAfterStreamClose(entity);
    expect(() => connection._onData(Buffer.from("<presence/>"))).not.toThrow();
    const written: string[] = [];
    connection.parser = { write: (text: string) => written.push(text) };
    connection._onData(Buffer.from("<presence/>"));
    expect(written).toEqual(["<presence/>"]);
  });
});
