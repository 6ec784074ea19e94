import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The driver only means something against real Durable Object storage, so each call runs inside workerd: a probe
// object applies `storage[op](...args)` (an unstorage Storage over the driver, or the bare driver) and answers.
const probe = `
import { createStorage } from "unstorage";
import { durableObjectDriver } from "./durable-object-driver.ts";
export class Probe {
  constructor(state) {
    this.driver = durableObjectDriver(state.storage);
    this.storage = createStorage({ driver: this.driver });
  }
  async fetch(request) {
    const { target, op, args } = await request.json();
    return Response.json({ result: (await this[target][op](...args)) ?? null });
  }
}
export default { fetch: (request, env) => env.PROBE.get(env.PROBE.idFromName("probe")).fetch(request) };
`;

let mf: Miniflare;
const send = async (target: "storage" | "driver", op: string, args: unknown[]) => {
  const res = await mf.dispatchFetch("http://probe/", { method: "POST", body: JSON.stringify({ target, op, args }) });
  if (!res.ok) throw new Error(`${op}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { result: unknown }).result;
};
const call = (op: string, ...args: unknown[]) => send("storage", op, args);
// unstorage 1.17.6's storage.clear(base) skips a driver mounted at the root, so clear is exercised on the driver.
const callDriver = (op: string, ...args: unknown[]) => send("driver", op, args);

beforeAll(async () => {
  const bundle = await build({
    stdin: { contents: probe, resolveDir: fileURLToPath(new URL(".", import.meta.url)), loader: "js" },
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
  });
  mf = new Miniflare({
    modules: true,
    script: bundle.outputFiles[0].text,
    compatibilityDate: "2026-04-01",
    durableObjects: { PROBE: { className: "Probe", useSQLite: true } },
  });
  await mf.ready;
}, 60_000);

afterAll(async () => {
  await mf?.dispose();
});

describe("durableObjectDriver", () => {
  const many = Array.from({ length: 1100 }, (_, i) => ({ key: `chat:${i}`, value: { no: i } }));

  it("writes and reads more than one 128-key batch, in order, with null for missing keys", async () => {
    await call("setItems", many);
    const keys = [...many.map((i) => i.key).reverse(), "chat:missing"];
    const items = (await call("getItems", keys)) as { key: string; value: unknown }[];
    expect(items.map((i) => i.key)).toEqual(keys);
    expect(items[0].value).toEqual({ no: 1099 });
    expect(items.at(-1)!.value).toBeNull();
  });

  it("gets, checks and removes single items", async () => {
    await call("setItem", "tok:abc", { name: "admin" });
    expect(await call("getItem", "tok:abc")).toEqual({ name: "admin" });
    expect(await call("hasItem", "tok:abc")).toBe(true);
    await call("removeItem", "tok:abc");
    expect(await call("hasItem", "tok:abc")).toBe(false);
    expect(await call("getItem", "tok:abc")).toBeNull();
  });

  it("lists keys under a base only, across list pages", async () => {
    await call("setItems", [
      { key: "chatty", value: 1 },
      { key: "chat", value: 2 },
      { key: "msg:1:0", value: [] },
    ]);
    const chatKeys = (await call("getKeys", "chat")) as string[];
    expect(chatKeys).toHaveLength(1100);
    expect(chatKeys).not.toContain("chatty");
    expect((await call("getKeys", "msg:1")) as string[]).toEqual(["msg:1:0"]);
    expect(((await call("getKeys", "")) as string[]).length).toBe(1103);
  });

  it("clears a base, then everything", async () => {
    await callDriver("clear", "chat:");
    expect(await call("getKeys", "chat")).toEqual([]);
    expect(await call("getItem", "chatty")).toBe(1);
    await callDriver("clear", "");
    expect(await call("getKeys", "")).toEqual([]);
  });
});
