import { describe, expect, it } from "vitest";
import { assignRooms, bridgedNetworkOf, emptyBridges, MAX_NETWORKS, readBridgesState } from "./bridged.ts";

const self = "@alice:example.org";
const bot = "@whatsappbot:example.org";
const member = (user: string, membership = "join") => ({
  type: "m.room.member",
  state_key: user,
  sender: user,
  content: { membership },
});
const bridge = (type = "m.bridge", protocol: unknown = { id: "WhatsApp", displayname: "WhatsApp" }) => ({
  type,
  state_key: "chan",
  sender: bot,
  content: { bridgebot: bot, protocol },
});
const room = (state: unknown[], timeline: unknown[] = []) => ({
  state: { events: state },
  timeline: { events: timeline },
});

describe("bridged networks", () => {
  it("read a protocol from m.bridge and uk.half-shot.bridge, and refuse a malformed one", () => {
    expect(bridgedNetworkOf(bridge() as never)).toEqual({ id: "whatsapp", name: "WhatsApp", bots: [bot] });
    expect(bridgedNetworkOf(bridge("uk.half-shot.bridge", { id: "signal" }) as never)).toMatchObject({
      id: "signal",
      name: "signal",
    });
    for (const bad of [{ id: "" }, { id: "a/b" }, { id: 7 }, "whatsapp", null])
      expect(bridgedNetworkOf(bridge("m.bridge", bad) as never)).toBeUndefined();
    expect(bridgedNetworkOf({ ...bridge(), state_key: undefined } as never)).toBeUndefined();
    // Only the bridge's bot says so: state sent by anyone else (or naming no bot) is not bridge state.
    expect(bridgedNetworkOf({ ...bridge(), sender: "@mallory:example.org" } as never)).toBeUndefined();
    const { bridgebot: _, ...botless } = bridge().content;
    expect(bridgedNetworkOf({ ...bridge(), content: botless } as never)).toBeUndefined();
  });

  it("place a first sync's bridged rooms and the bot's room with their network, the rest with Matrix", () => {
    const bridges = emptyBridges();
    const touched = assignRooms(
      bridges,
      {
        // The bot's room comes first: the bot is known from the other rooms' bridge state all the same.
        "!bot:x": room([member(self), member(bot)]),
        "!portal:x": room([member(self), member("@whatsapp_123:example.org"), bridge()]),
        "!plain:x": room([member(self), member("@bob:example.org")]),
        "!botgroup:x": room([member(self), member(bot), member("@bob:example.org")]),
      },
      { selfID: self, firstSync: true, known: () => undefined },
    );
    expect(touched).toEqual(new Set(["whatsapp"]));
    expect(bridges.rooms).toEqual({ "!bot:x": "whatsapp", "!portal:x": "whatsapp" });
    expect(bridges.management).toEqual(["!bot:x"]);
  });

  it("place a later room only when it was just joined, and keep a room where it was", () => {
    const bridges = emptyBridges();
    const options = {
      selfID: self,
      firstSync: false,
      known: (id: string) => (id === "!invited:x" ? "invite" : undefined),
    };
    assignRooms(
      bridges,
      {
        "!joined:x": room([bridge()], [member(self)]),
        "!invited:x": room([bridge()], [member(self)]),
        "!resync:x": room([member(self), bridge()]), // a restart's full state: not new, stays with Matrix
        // A profile change is a join after a join: not a room joined now.
        "!profile:x": room([bridge()], [{ ...member(self), unsigned: { prev_content: { membership: "join" } } }]),
      },
      options,
    );
    expect(bridges.rooms).toEqual({ "!joined:x": "whatsapp", "!invited:x": "whatsapp" });
    bridges.rooms["!joined:x"] = "whatsapp";
    assignRooms(bridges, { "!joined:x": room([bridge("m.bridge", { id: "signal" })], [member(self)]) }, options);
    expect(bridges.rooms["!joined:x"]).toBe("whatsapp");
  });

  it("give at most MAX_NETWORKS networks an account of their own", () => {
    const bridges = emptyBridges();
    const joined = Object.fromEntries(
      Array.from({ length: MAX_NETWORKS + 5 }, (_, i) => [`!r${i}:x`, room([bridge("m.bridge", { id: `net${i}` })])]),
    );
    assignRooms(bridges, joined, { selfID: self, firstSync: true, known: () => undefined });
    expect(new Set(Object.values(bridges.rooms)).size).toBe(MAX_NETWORKS);
    expect(Object.keys(bridges.rooms)).toHaveLength(MAX_NETWORKS);
  });

  it("leave a refused network's rooms with Matrix, and keep an older account's rooms where they are", () => {
    const bridges = { ...emptyBridges(), refused: ["whatsapp"] };
    assignRooms(bridges, { "!portal:x": room([bridge()]) }, { selfID: self, firstSync: true, known: () => undefined });
    expect(bridges.rooms).toEqual({});
    expect(readBridgesState(null)).toBeNull();
    expect(readBridgesState(undefined)).toBeUndefined();
    expect(
      readBridgesState({ rooms: { "!a:x": "whatsapp", "!b:x": 3 }, networks: { whatsapp: { name: "WhatsApp" } } }),
    ).toEqual({
      rooms: { "!a:x": "whatsapp" },
      networks: { whatsapp: { id: "whatsapp", name: "WhatsApp", bots: [] } },
      management: [],
      refused: [],
    });
  });
});
