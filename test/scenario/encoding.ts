/**
 * What arrives on the wire (wire-compat §3): repeated keys are arrays, `+` is a space (form-style), `key=` means unset,
 * path segments are decoded exactly once.
 */
import { describe, expect, it } from "vitest";
import { expectError } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, enc, messagePath } from "../kit/common.ts";
import { allChats, chatWithHistory, contactsOf, ids, newGroup, ok, raw, sendSettled, type Env } from "./kit.ts";

export function encodingScenarios(env: Env) {
  describe("query and path encoding", () => {
    it("reads repeated keys as arrays and a single key as a one-element array", async () => {
      const all = await allChats(env);
      const [a, b] = env.accounts.map((x) => x.accountID);
      const one = await ok<Page<Chat>>(env, `/v1/chats/search?limit=200&accountIDs=${enc(a)}`);
      expect(ids(one.items)).toEqual(ids(all.filter((c) => c.accountID === a)));
      const two = await ok<Page<Chat>>(env, `/v1/chats/search?limit=200&accountIDs=${enc(a)}&accountIDs=${enc(b)}`);
      expect(ids(two.items)).toEqual(ids(all));
      const [g1, g2] = all.filter((c) => c.type === "group");
      const m1 = await ok(env, `/v1/messages/search?chatIDs=${enc(g1.id)}`);
      expect(new Set(m1.items.map((m: Message) => m.chatID))).toEqual(new Set([g1.id]));
      const m2 = await ok(env, `/v1/messages/search?chatIDs=${enc(g1.id)}&chatIDs=${enc(g2.id)}&limit=20`);
      const both = new Set(m2.items.map((m: Message) => m.chatID));
      for (const id of both) expect([g1.id, g2.id]).toContain(id);
    });

    it("reads `+` in a query value as a space (form-style, as the Python SDK sends it) and `%2B` as a plus", async () => {
      // Contacts whose names have a space, searched the way httpx encodes "Alan Costa": Alan+Costa.
      const accountID = env.accounts[0].accountID;
      const contacts = await contactsOf(env, accountID);
      const named = contacts.find((c) => c.fullName?.includes(" "))!;
      const [first, last] = named.fullName!.split(" ");
      for (const path of [`/v1/accounts/${enc(accountID)}/contacts`, `/v1/accounts/${enc(accountID)}/contacts/list`]) {
        const plus = await ok<{ items: { id: string }[] }>(env, `${path}?query=${first}+${last}`);
        const encoded = await ok<{ items: { id: string }[] }>(env, `${path}?query=${enc(`${first} ${last}`)}`);
        expect(ids(plus.items), path).toContain(named.id);
        expect(ids(plus.items), path).toEqual(ids(encoded.items));
      }

      // A date's offset sent with a raw `+` still means the offset (the space it becomes is read back as `+`).
      const chat = await chatWithHistory(env, "group");
      const page = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
      const t = Date.parse(page.items[10].timestamp);
      const utc = new Date(t).toISOString();
      const plus = new Date(t + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
      const base = `/v1/messages/search?chatIDs=${enc(chat.id)}&dateBefore=`;
      const byUTC = await ok(env, base + utc);
      const byRawPlus = await raw(env, base + plus);
      expect(byRawPlus.status, byRawPlus.text).toBe(200);
      expect(ids(byRawPlus.body.items)).toEqual(ids(byUTC.items));
      expect(ids((await ok(env, base + enc(plus))).items)).toEqual(ids(byUTC.items));

      // A reaction key with a real plus: the SDKs send it as %2B.
      const own = await newGroup(env);
      const m = await sendSettled(env, own.id, "plus test");
      await ok(env, `${messagePath(own.id, m.id)}/reactions`, { method: "POST", json: { reactionKey: ":+1:" } });
      const removed = await raw(env, `${messagePath(own.id, m.id)}/reactions?reactionKey=${enc(":+1:")}`, {
        method: "DELETE",
      });
      expect(removed.status).toBe(200);
      expect(removed.body.reactionKey).toBe(":+1:");
      expect((await ok<Message>(env, messagePath(own.id, m.id))).reactions ?? []).toEqual([]);
    });

    it("treats `key=` (empty) as unset", async () => {
      const plainSearch = await ok(env, "/v1/chats/search");
      const emptySearch = await ok(
        env,
        "/v1/chats/search?query=&inbox=&type=&limit=&includeMuted=&unreadOnly=&scope=&lastActivityAfter=&lastActivityBefore=&accountIDs=&cursor=&direction=",
      );
      expect(emptySearch).toEqual(plainSearch);
      const plainChats = await ok(env, "/v1/chats");
      expect(await ok(env, "/v1/chats?cursor=&direction=&accountIDs=")).toEqual(plainChats);
      const plainMessages = await ok(env, "/v1/messages/search");
      expect(
        await ok(
          env,
          "/v1/messages/search?query=&sender=&chatType=&chatIDs=&accountIDs=&mediaTypes=&dateAfter=&dateBefore=&limit=&cursor=&direction=&includeMuted=&excludeLowPriority=",
        ),
      ).toEqual(plainMessages);
      const group = (await allChats(env)).find((c) => c.type === "group")!;
      const full = await ok<Chat>(env, `${chatPath(group.id)}?maxParticipantCount=`);
      expect(full.participants.items.length).toBe(full.participants.total);
      const contacts = `/v1/accounts/${enc(env.accounts[0].accountID)}/contacts/list`;
      expect(await ok(env, `${contacts}?limit=&query=&cursor=`)).toEqual(await ok(env, contacts));
      // …but an empty required value is still missing.
      expectError(await raw(env, `/v1/accounts/${enc(env.accounts[0].accountID)}/contacts?query=`), 400, [
        "query",
        "query",
      ]);
    });

    it("takes chat IDs with raw `!` and `:` or percent-encoded, and decodes each segment exactly once", async () => {
      const chat = (await allChats(env))[0];
      expect(chat.id).toMatch(/^!.*:/);
      const rawPath = await raw<Chat>(env, `/v1/chats/${chat.id}`);
      expect(rawPath.status).toBe(200);
      expect(rawPath.body.id).toBe(chat.id);
      const encoded = await ok<Chat>(env, `/v1/chats/${chat.id.replace("!", "%21").replace(/:/g, "%3A")}`);
      expect(encoded.id).toBe(chat.id);
      // Encoded twice is a different (unknown) ID.
      expectError(await raw(env, `/v1/chats/${enc(enc(chat.id))}`), 404);
      const page = await ok<Page<Message>>(env, `/v1/chats/${chat.id}/messages`);
      const viaRaw = await ok<Message>(env, `/v1/chats/${chat.id}/messages/${page.items[0].id}`);
      expect(viaRaw.id).toBe(page.items[0].id);
    });

    it("answers malformed percent-encoding with a 4xx JSON error, never a 5xx", async () => {
      for (const path of [
        "/v1/chats/%E0%A4%A",
        "/v1/chats/%ZZ",
        "/v1/chats/search?query=%E0%A4%A",
        "/v1/messages/search?query=%",
        "/v1/chats?accountIDs=%FF",
      ]) {
        const res = await raw(env, path);
        expect(res.status, `${path}: ${res.text}`).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expectError(res, res.status);
      }
    });
  });
}
