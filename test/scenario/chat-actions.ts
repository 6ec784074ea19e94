/**
 * Chat actions: PATCH, archive, reminders, read/unread, notify-anyway.
 */
import BeeperDesktop from "@beeper/desktop-api";
import { describe, expect, it } from "vitest";
import { expectError, expectSdkError } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, enc } from "../kit/common.ts";
import { allChats, echoChat, echoReply, ids, newGroup, ok, qs, raw, sendSettled, walk, type Env } from "./kit.ts";

export function chatActionScenarios(env: Env) {
  describe("chats: update (PATCH)", () => {
    it("updates every supported field and answers with the Chat (SDK 5 chats.update)", async () => {
      const chat = await newGroup(env);
      const updated = await env.sdk.chats.update(chat.id, {
        title: "Renamed by the scenario",
        description: "what this group is for",
        isMuted: true,
        isPinned: true,
        isLowPriority: true,
      });
      expect(updated.id).toBe(chat.id);
      expect(updated.title).toBe("Renamed by the scenario");
      expect(updated.description).toBe("what this group is for");
      expect(updated.isMuted).toBe(true);
      expect(updated.isPinned).toBe(true);
      expect(updated.isLowPriority).toBe(true);
      expect(updated.isArchived).toBe(false);

      const fetched = await env.sdk.chats.retrieve(chat.id);
      for (const key of ["title", "description", "isMuted", "isPinned", "isLowPriority", "isArchived"] as const)
        expect(fetched[key]).toEqual(updated[key]);

      // The change is visible to search filters.
      const lowPriority = await walk<Chat>(env, "/v1/chats/search", { inbox: "low-priority", limit: 200 });
      expect(ids(lowPriority.items)).toContain(chat.id);
      const unmuted = await walk<Chat>(env, "/v1/chats/search", { includeMuted: false, limit: 200 });
      expect(ids(unmuted.items)).not.toContain(chat.id);
      const byTitle = await ok<Page<Chat>>(env, `/v1/chats/search${qs({ query: "renamed scenario", limit: 200 })}`);
      expect(ids(byTitle.items)).toContain(chat.id);

      const archived = await env.sdk.chats.update(chat.id, {
        isArchived: true,
        isLowPriority: false,
        isMuted: false,
        isPinned: false,
      });
      expect(archived.isArchived).toBe(true);
      expect(archived.isLowPriority).toBe(false);
      expect(archived.isMuted).toBe(false);
      expect(archived.isPinned).toBe(false);
      expect(archived.title).toBe("Renamed by the scenario");

      const noDescription = await env.sdk.chats.update(chat.id, { description: null });
      expect(noDescription.description ?? null).toBeNull();
      expect((await env.sdk.chats.retrieve(chat.id)).description ?? null).toBeNull();

      const unchanged = await env.sdk.chats.update(chat.id, {});
      expect(unchanged.title).toBe("Renamed by the scenario");
      expect(unchanged.isArchived).toBe(true);

      // title: null drops the custom title: the group is named after its other members again.
      const reset = await env.sdk.chats.update(chat.id, { title: null });
      const firstNames = chat.participants.items.filter((p) => !p.isSelf).map((p) => p.fullName!.split(" ")[0]);
      expect(reset.title).not.toBe("Renamed by the scenario");
      for (const name of reset.title.split(", ")) expect(firstNames).toContain(name);
    });

    it("sets a draft only when none is set, and clears it with draft=null", async () => {
      const chat = await newGroup(env);
      const set = await env.sdk.chats.update(chat.id, { draft: { text: "half-written thought" } });
      expect(set.draft?.text).toBe("half-written thought");
      expect((await env.sdk.chats.retrieve(chat.id)).draft?.text).toBe("half-written thought");
      const again = await raw(env, chatPath(chat.id), { method: "PATCH", json: { draft: { text: "another" } } });
      expect([400, 409, 422]).toContain(again.status);
      expectError(again, again.status);
      expect((await env.sdk.chats.retrieve(chat.id)).draft?.text).toBe("half-written thought");
      const cleared = await env.sdk.chats.update(chat.id, { draft: null });
      expect(cleared.draft ?? null).toBeNull();
      const reset = await env.sdk.chats.update(chat.id, { draft: { text: "another" } });
      expect(reset.draft?.text).toBe("another");
    });

    it("refuses ill-typed fields with their body path, and unknown chats with 404", async () => {
      const chat = await newGroup(env);
      const cases: [unknown, (string | number)[]][] = [
        [{ isMuted: "yes" }, ["body", "isMuted"]],
        [{ isPinned: 1 }, ["body", "isPinned"]],
        [{ isArchived: "true" }, ["body", "isArchived"]],
        [{ isLowPriority: null }, ["body", "isLowPriority"]],
        [{ title: 42 }, ["body", "title"]],
        [{ description: ["x"] }, ["body", "description"]],
        [{ draft: { text: 5 } }, ["body", "draft", "text"]],
      ];
      for (const [json, path] of cases)
        expectError(await raw(env, chatPath(chat.id), { method: "PATCH", json }), 400, path);
      const after = await env.sdk.chats.retrieve(chat.id);
      expect(after.isMuted).toBe(false);
      expect(after.title).toBe(chat.title);
      await expectSdkError(
        env.sdk.chats.update("!doesnotexist:nowhere", { isMuted: true }),
        BeeperDesktop.NotFoundError,
        404,
      );
    });
  });

  describe("chats: archive", () => {
    it("archives with no arguments and unarchives with archived=false (SDK 5 chats.archive → 204)", async () => {
      const chat = await newGroup(env);
      const result = await env.sdk.chats.archive(chat.id);
      expect(result ?? null).toBeNull();
      expect((await env.sdk.chats.retrieve(chat.id)).isArchived).toBe(true);
      expect(ids((await walk<Chat>(env, "/v1/chats/search", { inbox: "archive", limit: 200 })).items)).toContain(
        chat.id,
      );
      expect(ids((await walk<Chat>(env, "/v1/chats/search", { inbox: "primary", limit: 200 })).items)).not.toContain(
        chat.id,
      );

      await env.sdk.chats.archive(chat.id, { archived: false });
      expect((await env.sdk.chats.retrieve(chat.id)).isArchived).toBe(false);
      expect(ids((await walk<Chat>(env, "/v1/chats/search", { inbox: "primary", limit: 200 })).items)).toContain(
        chat.id,
      );

      // archived=true explicitly, and a request with no body at all (the spec's body is optional).
      const explicit = await raw(env, `${chatPath(chat.id)}/archive`, { method: "POST", json: { archived: true } });
      expect(explicit.status).toBe(204);
      expect((await env.sdk.chats.retrieve(chat.id)).isArchived).toBe(true);
      await env.sdk.chats.archive(chat.id, { archived: false });
      const bodiless = await raw(env, `${chatPath(chat.id)}/archive`, { method: "POST" });
      expect(bodiless.status).toBe(204);
      expect(bodiless.text).toBe("");
      expect((await env.sdk.chats.retrieve(chat.id)).isArchived).toBe(true);
    });

    it("refuses a non-boolean archived and unknown chats", async () => {
      const chat = await newGroup(env);
      expectError(await raw(env, `${chatPath(chat.id)}/archive`, { method: "POST", json: { archived: "yes" } }), 400, [
        "body",
        "archived",
      ]);
      expect((await env.sdk.chats.retrieve(chat.id)).isArchived).toBe(false);
      await expectSdkError(env.sdk.chats.archive("!doesnotexist:nowhere"), BeeperDesktop.NotFoundError, 404);
    });
  });

  describe("chats: reminders", () => {
    it("sets a reminder from remindAt (SDK 5) or remindAtMs (spec), shows it on the Chat, and clears it", async () => {
      const chat = await newGroup(env);
      const at = new Date(Date.now() + 86_400_000).toISOString();
      const result = await env.sdk.chats.reminders.create(chat.id, {
        reminder: { remindAt: at, dismissOnIncomingMessage: true },
      });
      expect(result ?? null).toBeNull();
      const withReminder = await env.sdk.chats.retrieve(chat.id);
      expect(Date.parse(withReminder.reminder!.remindAt!)).toBe(Date.parse(at));
      expect(withReminder.reminder!.dismissOnIncomingMessage).toBe(true);

      await env.sdk.chats.reminders.delete(chat.id);
      expect((await env.sdk.chats.retrieve(chat.id)).reminder ?? null).toBeNull();

      const atMs = Date.now() + 2 * 86_400_000;
      const res = await raw(env, `${chatPath(chat.id)}/reminders`, {
        method: "POST",
        json: { reminder: { remindAtMs: atMs } },
      });
      expect(res.status).toBe(204);
      expect(res.text).toBe("");
      const again = await ok<Chat>(env, chatPath(chat.id));
      expect(Date.parse(again.reminder!.remindAt!)).toBe(atMs);
      expect(again.reminder!.dismissOnIncomingMessage ?? false).toBe(false);

      // Setting again replaces the instant; the offset form of remindAt names the same instant.
      await env.sdk.chats.reminders.create(chat.id, { reminder: { remindAt: "2031-05-06T09:30:00+02:00" } });
      expect(Date.parse((await env.sdk.chats.retrieve(chat.id)).reminder!.remindAt!)).toBe(
        Date.parse("2031-05-06T07:30:00Z"),
      );
      const cleared = await raw(env, `${chatPath(chat.id)}/reminders`, { method: "DELETE" });
      expect(cleared.status).toBe(204);
      expect((await ok<Chat>(env, chatPath(chat.id))).reminder ?? null).toBeNull();
    });

    it("cancels a reminder with dismissOnIncomingMessage when someone writes (Echo), and keeps one without", async () => {
      const echo = await echoChat(env, env.accounts[1].accountID);
      for (const dismiss of [true, false]) {
        await env.sdk.chats.reminders.create(echo.id, {
          reminder: { remindAt: new Date(Date.now() + 3_600_000).toISOString(), dismissOnIncomingMessage: dismiss },
        });
        const sent = await env.sdk.messages.send(echo.id, { text: `reminder probe ${dismiss}` });
        await echoReply(env, echo.id, sent.pendingMessageID);
        const reminder = (await env.sdk.chats.retrieve(echo.id)).reminder ?? null;
        if (dismiss) expect(reminder, "an incoming message dismisses the reminder").toBeNull();
        else expect(reminder?.remindAt).toBeTruthy();
        await env.sdk.chats.reminders.delete(echo.id);
      }
    });

    it("refuses reminders without an instant or with a bad one, and unknown chats", async () => {
      const chat = await newGroup(env);
      const path = `${chatPath(chat.id)}/reminders`;
      expectError(await raw(env, path, { method: "POST", json: {} }), 400, ["body", "reminder"]);
      expectError(await raw(env, path, { method: "POST", json: { reminder: {} } }), 400, ["body", "reminder"]);
      expectError(await raw(env, path, { method: "POST", json: { reminder: { remindAt: "next tuesday" } } }), 400, [
        "body",
        "reminder",
        "remindAt",
      ]);
      expectError(await raw(env, path, { method: "POST", json: { reminder: { remindAtMs: "soon" } } }), 400, [
        "body",
        "reminder",
        "remindAtMs",
      ]);
      expectError(
        await raw(env, path, { method: "POST", json: { reminder: { remindAtMs: 1, dismissOnIncomingMessage: "y" } } }),
        400,
        ["body", "reminder", "dismissOnIncomingMessage"],
      );
      expect((await env.sdk.chats.retrieve(chat.id)).reminder ?? null).toBeNull();
      await expectSdkError(
        env.sdk.chats.reminders.create("!doesnotexist:nowhere", { reminder: { remindAt: new Date().toISOString() } }),
        BeeperDesktop.NotFoundError,
        404,
      );
      await expectSdkError(env.sdk.chats.reminders.delete("!doesnotexist:nowhere"), BeeperDesktop.NotFoundError, 404);
    });
  });

  describe("chats: bodies that are not what the operation takes", () => {
    it("refuses a remindAtMs outside the representable date range, and the chat stays readable", async () => {
      const chat = await newGroup(env);
      try {
        for (const remindAtMs of [8.64e15 + 1, Number.MAX_SAFE_INTEGER]) {
          const res = await raw(env, `${chatPath(chat.id)}/reminders`, {
            method: "POST",
            json: { reminder: { remindAtMs } },
          });
          // Soft checks: a failure here should also show what the accepted value does to reads.
          expect.soft(res.status, `POST reminders remindAtMs=${remindAtMs}: ${res.text}`).toBe(400);
          if (res.status === 400) expectError(res, 400, ["body", "reminder", "remindAtMs"]);
          for (const path of [
            chatPath(chat.id),
            "/v1/chats",
            "/v1/chats/search?limit=200",
            `/v1/messages/search?chatIDs=${enc(chat.id)}`,
          ]) {
            const read = await raw(env, path);
            expect.soft(read.status, `GET ${path} after remindAtMs=${remindAtMs}: ${read.text}`).toBe(200);
          }
        }
      } finally {
        // Whatever happened, leave no reminder behind (an unpresentable one would break every chat list).
        await raw(env, `${chatPath(chat.id)}/reminders`, { method: "DELETE" });
      }
    });

    it("refuses a JSON array where the body is an object, changing nothing", async () => {
      const chat = await newGroup(env);
      for (const suffix of ["", "/archive", "/read", "/unread", "/reminders"]) {
        const method = suffix === "" ? "PATCH" : "POST";
        const res = await raw(env, `${chatPath(chat.id)}${suffix}`, {
          method,
          body: "[]",
          headers: { "content-type": "application/json" },
        });
        expectError(res, 400, ["body"]);
      }
      for (const path of ["/v1/chats", "/v1/chats/start", `${chatPath(chat.id)}/messages`])
        expectError(
          await raw(env, path, { method: "POST", body: "[]", headers: { "content-type": "application/json" } }),
          400,
          ["body"],
        );
      const after = await env.sdk.chats.retrieve(chat.id);
      expect(after.isArchived).toBe(false);
      expect(after.isMarkedUnread).toBe(false);
    });
  });

  describe("chats: read and unread", () => {
    /** A seeded chat with a full first page that has messages from others in its newest 15. */
    async function busyChat(): Promise<{ chat: Chat; page: Message[] }> {
      for (const chat of await allChats(env)) {
        const page = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
        if (page.items.length === 20 && page.items.slice(0, 15).filter((m) => !m.isSender).length >= 4)
          return { chat, page: page.items };
      }
      throw new Error("no chat with enough incoming messages");
    }
    const incoming = (ms: Message[]) => ms.filter((m) => !m.isSender).length;

    it("marks unread from a message and read through a message, recounting unreadCount (SDK 5 markUnread/markRead)", async () => {
      const { chat, page } = await busyChat();
      const unread = await env.sdk.chats.markUnread(chat.id, { messageID: page[15].id });
      expect(unread.id).toBe(chat.id);
      expect(unread.unreadCount).toBe(incoming(page.slice(0, 16)));
      const afterUnread = (await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items;
      for (const [i, m] of afterUnread.entries())
        expect(m.isUnread ?? false, `message ${i}`).toBe(!m.isSender && i <= 15);

      const read = await env.sdk.chats.markRead(chat.id, { messageID: page[5].id });
      expect(read.unreadCount).toBe(incoming(page.slice(0, 5)));
      expect(read.lastReadMessageSortKey).toBe(page[5].sortKey);
      expect((await env.sdk.chats.retrieve(chat.id)).unreadCount).toBe(incoming(page.slice(0, 5)));
      const afterRead = (await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items;
      for (const [i, m] of afterRead.entries()) expect(m.isUnread ?? false, `message ${i}`).toBe(!m.isSender && i < 5);

      const all = await env.sdk.chats.markRead(chat.id);
      expect(all.unreadCount).toBe(0);
      expect(all.lastReadMessageSortKey).toBe(page[0].sortKey);
      expect((await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items.every((m) => !m.isUnread)).toBe(
        true,
      );
      const unreadOnly = await walk<Chat>(env, "/v1/chats/search", { unreadOnly: true, limit: 200 });
      expect(ids(unreadOnly.items)).not.toContain(chat.id);
    });

    it("flags a chat unread without a message ID and clears the flag on read", async () => {
      const chat = await newGroup(env);
      const flagged = await env.sdk.chats.markUnread(chat.id);
      expect(flagged.isMarkedUnread).toBe(true);
      expect((await env.sdk.chats.retrieve(chat.id)).isMarkedUnread).toBe(true);
      expect(ids((await walk<Chat>(env, "/v1/chats/search", { unreadOnly: true, limit: 200 })).items)).toContain(
        chat.id,
      );
      const read = await env.sdk.chats.markRead(chat.id);
      expect(read.isMarkedUnread).toBe(false);
      expect(read.unreadCount).toBe(0);
    });

    it("refuses unknown messages and chats", async () => {
      const chat = await newGroup(env);
      await expectSdkError(
        env.sdk.chats.markRead(chat.id, { messageID: "999999.1" }),
        BeeperDesktop.NotFoundError,
        404,
      );
      await expectSdkError(
        env.sdk.chats.markUnread(chat.id, { messageID: "no-such-message" }),
        BeeperDesktop.NotFoundError,
        404,
      );
      await expectSdkError(env.sdk.chats.markRead("!doesnotexist:nowhere"), BeeperDesktop.NotFoundError, 404);
      await expectSdkError(env.sdk.chats.markUnread("!doesnotexist:nowhere"), BeeperDesktop.NotFoundError, 404);
      expectError(await raw(env, `${chatPath(chat.id)}/read`, { method: "POST", json: { messageID: 5 } }), 400, [
        "body",
        "messageID",
      ]);
    });
  });

  describe("chats: notify-anyway", () => {
    it("is recorded by the sandbox network, which Echo's !settings reports (SDK 5 notifyAnyway → the chat), 404 for unknown chats", async () => {
      const echo = await echoChat(env, env.accounts[0].accountID);
      const notified = async () => {
        const probe = await sendSettled(env, echo.id, "!settings");
        const reply = await echoReply(env, echo.id, probe.id);
        return (
          (JSON.parse(/^Echo: settings (\{.*\})$/s.exec(reply.text ?? "")![1]) as { notifiedAnyway?: number })
            .notifiedAnyway ?? 0
        );
      };
      const before = await notified();
      const chat = await env.sdk.chats.notifyAnyway(echo.id);
      expect(chat.id).toBe(echo.id);
      // As the SDK sends it: no body, no content type.
      expect((await raw<Chat>(env, `${chatPath(echo.id)}/notify-anyway`, { method: "POST" })).status).toBe(200);
      expect(await notified()).toBe(before + 2);
      expect(
        (await ok<{ capabilities: Record<string, unknown> }>(env, `/v1/accounts/${enc(env.accounts[0].accountID)}`))
          .capabilities,
      ).toMatchObject({ notifyAnyway: true });
      await expectSdkError(env.sdk.chats.notifyAnyway("!doesnotexist:nowhere"), BeeperDesktop.NotFoundError, 404);
    });
  });
}
