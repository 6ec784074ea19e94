/**
 * Chats, read side and creation: list, retrieve (participants, local IDs), create, start.
 */
import BeeperDesktop from "@beeper/desktop-api";
import { describe, expect, it } from "vitest";
import { expectError, expectSdkError, expectSorted } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath } from "../kit/common.ts";
import { allChats, contactsOf, duplicates, ids, ms, ok, qs, raw, type Env } from "./kit.ts";

export function chatScenarios(env: Env) {
  describe("chats: list and retrieve", () => {
    it("lists every chat once, most recent activity first, in pages of 25 (SDK 5 chats.list auto-pagination)", async () => {
      const viaSdk: Chat[] = [];
      for await (const chat of env.sdk.chats.list()) viaSdk.push(chat as Chat);
      expect(viaSdk.length).toBeGreaterThanOrEqual(40);
      expect(duplicates(ids(viaSdk))).toEqual([]);
      expectSorted(viaSdk, (c) => ms(c.lastActivity), "desc");

      const first = await ok<Page<Chat>>(env, "/v1/chats");
      expect(first.items.length).toBe(25);
      expect(first.hasMore).toBe(true);
      expect(typeof first.oldestCursor).toBe("string");
      expect(typeof first.newestCursor).toBe("string");
      expect(ids(first.items)).toEqual(ids(viaSdk).slice(0, 25));

      // The same set as a filterless search that fits in one page.
      const search = await ok<Page<Chat>>(env, "/v1/chats/search?limit=200");
      expect(search.hasMore).toBe(false);
      expect(ids(search.items)).toEqual(ids(viaSdk));
    });

    it("lists chat fields as the wire contract has them", async () => {
      const chats = await allChats(env);
      const accounts = new Set(env.accounts.map((a) => a.accountID));
      for (const c of chats) {
        expect(typeof c.id).toBe("string");
        expect(accounts.has(c.accountID)).toBe(true);
        expect(typeof c.title).toBe("string");
        expect(["single", "group"]).toContain(c.type);
        expect(typeof c.unreadCount).toBe("number");
        expect(typeof c.network).toBe("string");
        expect(c.participants.total).toBeGreaterThanOrEqual(c.participants.items.length);
        expect(c.participants.hasMore).toBe(c.participants.items.length < c.participants.total);
        expect(Number.isNaN(ms(c.lastActivity))).toBe(false);
        if (c.type === "single") expect(c.participants.total).toBe(2);
        if (c.preview) expect(c.preview.chatID).toBe(c.id);
        // The account's own user is among the participants, marked isSelf.
        const self = env.accounts.find((a) => a.accountID === c.accountID)!.user.id;
        expect(c.participants.items.find((p) => p.id === self)?.isSelf, c.id).toBe(true);
        expect(c.participants.items.filter((p) => p.isSelf).length).toBe(1);
        if (c.lastReadMessageSortKey !== undefined) expect(typeof c.lastReadMessageSortKey).toBe("string");
      }
      expect(chats.some((c) => c.type === "group")).toBe(true);
    });

    it("filters the list by account (repeated accountIDs keys)", async () => {
      const all = await allChats(env);
      const [a, b] = env.accounts.map((x) => x.accountID);
      const onlyA: Chat[] = [];
      for await (const chat of env.sdk.chats.list({ accountIDs: [a] })) onlyA.push(chat as Chat);
      expect(ids(onlyA)).toEqual(ids(all.filter((c) => c.accountID === a)));
      expect(onlyA.length).toBeGreaterThan(0);
      const both: Chat[] = [];
      for await (const chat of env.sdk.chats.list({ accountIDs: [a, b] })) both.push(chat as Chat);
      expect(ids(both)).toEqual(ids(all));
      const none = await ok<Page<Chat>>(env, `/v1/chats${qs({ accountIDs: "local-nothing_ba_missing" })}`);
      expect(none.items).toEqual([]);
      expect(none.hasMore).toBe(false);
    });

    it("retrieves a chat with the fields of its list entry (SDK 5 chats.retrieve)", async () => {
      const all = await allChats(env);
      for (const listed of [all[0], all.find((c) => c.type === "group")!, all.at(-1)!]) {
        const chat = await env.sdk.chats.retrieve(listed.id);
        expect(chat.id).toBe(listed.id);
        expect(chat.accountID).toBe(listed.accountID);
        expect(chat.title).toBe(listed.title);
        expect(chat.type).toBe(listed.type);
        expect(chat.unreadCount).toBe(listed.unreadCount);
        expect(chat.lastActivity).toBe(listed.lastActivity);
        expect(chat.participants.total).toBe(listed.participants.total);
      }
    });

    it("limits participants with maxParticipantCount (-1 all, 0..500; default all)", async () => {
      const all = await allChats(env);
      const group = all
        .filter((c) => c.type === "group")
        .sort((x, y) => y.participants.total - x.participants.total)[0];
      expect(group.participants.total).toBeGreaterThan(3);
      const total = group.participants.total;

      const byDefault = await env.sdk.chats.retrieve(group.id);
      expect(byDefault.participants.items.length).toBe(total);
      expect(byDefault.participants.hasMore).toBe(false);
      for (const n of [-1, 500]) {
        const c = await ok<Chat>(env, `${chatPath(group.id)}?maxParticipantCount=${n}`);
        expect(c.participants.items.length).toBe(total);
        expect(c.participants.hasMore).toBe(false);
      }
      const two = await env.sdk.chats.retrieve(group.id, { maxParticipantCount: 2 });
      expect(two.participants.items.length).toBe(2);
      expect(two.participants.hasMore).toBe(true);
      expect(two.participants.total).toBe(total);
      expect(ids(two.participants.items)).toEqual(ids(byDefault.participants.items).slice(0, 2));
      const zero = await ok<Chat>(env, `${chatPath(group.id)}?maxParticipantCount=0`);
      expect(zero.participants.items).toEqual([]);
      expect(zero.participants.hasMore).toBe(true);
      expect(zero.participants.total).toBe(total);
      const exact = await ok<Chat>(env, `${chatPath(group.id)}?maxParticipantCount=${total}`);
      expect(exact.participants.items.length).toBe(total);
      expect(exact.participants.hasMore).toBe(false);

      for (const bad of ["501", "-2", "abc", "1.5", "1e2"])
        expectError(await raw(env, `${chatPath(group.id)}?maxParticipantCount=${bad}`), 400, [
          "query",
          "maxParticipantCount",
        ]);
    });

    it("accepts the local chat ID wherever a chat ID goes", async () => {
      const chat = (await allChats(env)).find((c) => c.localChatID)!;
      expect(chat, "chats carry a localChatID").toBeTruthy();
      const byLocal = await ok<Chat>(env, chatPath(chat.localChatID!));
      expect(byLocal.id).toBe(chat.id);
      const viaLocal = await ok<Page<Message>>(env, `${chatPath(chat.localChatID!)}/messages`);
      const viaID = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
      expect(ids(viaLocal.items)).toEqual(ids(viaID.items));
    });

    it("answers 404 for an unknown chat on every chat route", async () => {
      await expectSdkError(env.sdk.chats.retrieve("!doesnotexist:nowhere"), BeeperDesktop.NotFoundError, 404);
      const missing = chatPath("!doesnotexist:nowhere");
      const calls: [string, string, unknown?][] = [
        ["GET", missing],
        ["PATCH", missing, { isPinned: true }],
        ["POST", `${missing}/archive`, {}],
        ["POST", `${missing}/reminders`, { reminder: { remindAtMs: Date.now() + 60_000 } }],
        ["DELETE", `${missing}/reminders`],
        ["POST", `${missing}/read`, {}],
        ["POST", `${missing}/unread`, {}],
        ["POST", `${missing}/notify-anyway`],
        ["GET", `${missing}/messages`],
        ["POST", `${missing}/messages`, { text: "hello" }],
        ["GET", `${missing}/messages/1.1`],
        ["PUT", `${missing}/messages/1.1`, { text: "x" }],
        ["DELETE", `${missing}/messages/1.1`],
        ["POST", `${missing}/messages/1.1/reactions`, { reactionKey: "👍" }],
        ["DELETE", `${missing}/messages/1.1/reactions?reactionKey=x`],
        ["DELETE", `${missing}/messages/1.1/reactions/x`],
        ["GET", chatPath("999999")], // a local chat ID that does not exist
      ];
      for (const [method, path, json] of calls) expectError(await raw(env, path, { method, json }), 404);
    });
  });

  describe("chats: create and start", () => {
    it("creates a group chat and answers with the Chat plus chatID (SDK 5 chats.create)", async () => {
      const account = env.accounts[0];
      const self = account.user.id;
      const contacts = await contactsOf(env, account.accountID);
      const picked = [contacts.at(-1)!.id, contacts.at(-2)!.id];
      const before = Date.now();
      const created = await env.sdk.chats.create({
        accountID: account.accountID,
        type: "group",
        participantIDs: picked,
        title: "Scenario planning",
      });
      expect(created.chatID).toBe(created.id);
      expect(created.type).toBe("group");
      expect(created.title).toBe("Scenario planning");
      expect(created.accountID).toBe(account.accountID);
      expect("status" in created, "status is returned only in start mode").toBe(false);
      const members = ids(created.participants.items);
      for (const id of [...picked, self]) expect(members).toContain(id);
      expect(created.participants.total).toBe(3);

      const fetched = await env.sdk.chats.retrieve(created.chatID);
      expect(fetched.title).toBe("Scenario planning");
      expect(ids(fetched.participants.items).sort()).toEqual(members.sort());
      const listed = await allChats(env);
      expect(ids(listed)).toContain(created.chatID);
      expect(ms(listed.find((c) => c.id === created.chatID)!.lastActivity)).toBeGreaterThanOrEqual(before - 1000);
    });

    it("creates a chat with a first message when messageText is given", async () => {
      const account = env.accounts[1];
      const contacts = await contactsOf(env, account.accountID);
      const created = await env.sdk.chats.create({
        accountID: account.accountID,
        type: "group",
        participantIDs: [contacts[0].id, contacts[1].id, contacts[2].id],
        messageText: "first words in a new group",
      });
      const messages = await ok<Page<Message>>(env, `${chatPath(created.chatID)}/messages`);
      expect(messages.items.map((m) => m.text)).toContain("first words in a new group");
      expect(messages.items.every((m) => m.isSender)).toBe(true);
    });

    it("creates a single chat with exactly one participant and refuses two with 422", async () => {
      const account = env.accounts[0];
      const contacts = await contactsOf(env, account.accountID);
      const single = await env.sdk.chats.create({
        accountID: account.accountID,
        type: "single",
        participantIDs: [contacts[5].id],
      });
      expect(single.type).toBe("single");
      expect(ids(single.participants.items)).toContain(contacts[5].id);
      expect(single.participants.total).toBe(2);
      await expectSdkError(
        env.sdk.chats.create({
          accountID: account.accountID,
          type: "single",
          participantIDs: [contacts[6].id, contacts[7].id],
        }),
        BeeperDesktop.UnprocessableEntityError,
        422,
      );
      const res = await raw(env, "/v1/chats", {
        method: "POST",
        json: { accountID: account.accountID, type: "single", participantIDs: [contacts[6].id, contacts[7].id] },
      });
      expectError(res, 422);
      // Creating the same direct chat again gives the same chat, not a second one.
      const again = await env.sdk.chats.create({
        accountID: account.accountID,
        type: "single",
        participantIDs: [contacts[5].id],
      });
      expect(again.chatID).toBe(single.chatID);
      const dms = (await allChats(env)).filter(
        (c) =>
          c.type === "single" &&
          c.accountID === account.accountID &&
          ids(c.participants.items).includes(contacts[5].id),
      );
      expect(ids(dms)).toEqual([single.chatID]);
    });

    it("refuses invalid create requests with the offending body field named", async () => {
      const account = env.accounts[0];
      const contacts = await contactsOf(env, account.accountID);
      const chatsBefore = (await allChats(env)).length;
      const cases: [unknown, (string | number)[]][] = [
        [{ type: "group", participantIDs: [contacts[0].id] }, ["body", "accountID"]],
        [{ accountID: account.accountID, participantIDs: [contacts[0].id, contacts[1].id] }, ["body", "type"]],
        [{ accountID: account.accountID, type: "group" }, ["body", "participantIDs"]],
        [{ accountID: account.accountID, type: "group", participantIDs: [] }, ["body", "participantIDs"]],
        [{ accountID: account.accountID, type: "triple", participantIDs: [contacts[0].id] }, ["body", "type"]],
        [{ accountID: account.accountID, type: "group", participantIDs: "nope" }, ["body", "participantIDs"]],
        [
          { accountID: account.accountID, mode: "join", type: "group", participantIDs: [contacts[0].id] },
          ["body", "mode"],
        ],
      ];
      for (const [json, path] of cases) expectError(await raw(env, "/v1/chats", { method: "POST", json }), 400, path);
      expectError(
        await raw(env, "/v1/chats", {
          method: "POST",
          body: "{not json",
          headers: { "content-type": "application/json" },
        }),
        400,
      );
      expectError(
        await raw(env, "/v1/chats", {
          method: "POST",
          json: { accountID: "local-nothing_ba_missing", type: "group", participantIDs: [contacts[0].id] },
        }),
        404,
      );
      const unknownUser = await raw(env, "/v1/chats", {
        method: "POST",
        json: { accountID: account.accountID, type: "single", participantIDs: ["@nobody:sandbox.invalid"] },
      });
      expect(unknownUser.status).toBeGreaterThanOrEqual(400);
      expect(unknownUser.status).toBeLessThan(500);
      expect((await allChats(env)).length).toBe(chatsBefore);
    });

    it("starts a direct chat: existing for a contact with one, created then existing for a new one (SDK 5 chats.start)", async () => {
      const account = env.accounts[0];
      const chats = (await allChats(env)).filter((c) => c.accountID === account.accountID);
      const dm = chats.find((c) => c.type === "single" && c.title !== "Echo")!;
      const other = dm.participants.items.find((p) => !p.isSelf)!;
      const existing = await env.sdk.chats.start({ accountID: account.accountID, user: { id: other.id } });
      expect(existing.status).toBe("existing");
      expect(existing.chatID).toBe(dm.id);
      expect(existing.id).toBe(dm.id);
      expect(existing.type).toBe("single");

      const withDM = new Set(chats.filter((c) => c.type === "single").flatMap((c) => ids(c.participants.items)));
      const fresh = (await contactsOf(env, account.accountID)).filter(
        (u) => !withDM.has(u.id) && u.username && u.phoneNumber && u.email,
      );
      expect(fresh.length).toBeGreaterThan(1);
      const target = fresh.at(-1)!;
      const created = await env.sdk.chats.start({
        accountID: account.accountID,
        user: { username: target.username, fullName: "ranking hint only" },
      });
      expect(created.status).toBe("created");
      expect(created.type).toBe("single");
      expect(ids(created.participants.items)).toContain(target.id);
      const again = await env.sdk.chats.start({
        accountID: account.accountID,
        user: { phoneNumber: target.phoneNumber },
      });
      expect(again.status).toBe("existing");
      expect(again.chatID).toBe(created.chatID);
      // E.164 is preferred, not required: a formatted number names the same person; so does @username.
      const formatted = target.phoneNumber!.replace(/^(\+\d)(\d{3})(\d{3})(\d+)$/, "$1 ($2) $3-$4");
      expect(formatted).not.toBe(target.phoneNumber);
      expect(
        (await env.sdk.chats.start({ accountID: account.accountID, user: { phoneNumber: formatted } })).chatID,
      ).toBe(created.chatID);
      expect(
        (await env.sdk.chats.start({ accountID: account.accountID, user: { username: `@${target.username}` } })).chatID,
      ).toBe(created.chatID);
      // The spec's form: POST /v1/chats with mode=start.
      const viaMode = await ok(env, "/v1/chats", {
        method: "POST",
        json: { accountID: account.accountID, mode: "start", user: { email: target.email } },
      });
      expect(viaMode.status).toBe("existing");
      expect(viaMode.chatID).toBe(created.chatID);
      expect(viaMode.id).toBe(created.chatID);

      const target2 = fresh.at(-2)!;
      const viaMode2 = await ok(env, "/v1/chats", {
        method: "POST",
        json: { accountID: account.accountID, mode: "start", user: { id: target2.id } },
      });
      expect(viaMode2.status).toBe("created");
      expect(ids(viaMode2.participants.items)).toContain(target2.id);
      const listed = ids(await allChats(env));
      expect(listed).toContain(created.chatID);
      expect(listed).toContain(viaMode2.chatID);
      expect(duplicates(listed)).toEqual([]);
    });

    it("refuses start requests without a user, for unknown users and unknown accounts", async () => {
      const account = env.accounts[1];
      expectError(await raw(env, "/v1/chats/start", { method: "POST", json: { accountID: account.accountID } }), 400, [
        "body",
        "user",
      ]);
      expectError(
        await raw(env, "/v1/chats", { method: "POST", json: { accountID: account.accountID, mode: "start" } }),
        400,
        ["body", "user"],
      );
      expectError(
        await raw(env, "/v1/chats/start", { method: "POST", json: { accountID: account.accountID, user: {} } }),
        400,
        ["body", "user"],
      );
      const nobody = await raw(env, "/v1/chats/start", {
        method: "POST",
        json: { accountID: account.accountID, user: { username: "zz-no-such-person" } },
      });
      expect([404, 422]).toContain(nobody.status);
      expectError(nobody, nobody.status);
      await expectSdkError(
        env.sdk.chats.start({ accountID: "local-nothing_ba_missing", user: { id: "@x:sandbox.invalid" } }),
        BeeperDesktop.NotFoundError,
        404,
      );
    });
  });
}
