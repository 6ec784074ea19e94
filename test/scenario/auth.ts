/**
 * Authentication, scopes, /v1/info, the Host check, unknown routes, and the headers every answer carries.
 */
import BeeperDesktop from "@beeper/desktop-api";
import { describe, expect, it } from "vitest";
import { expectError, expectSdkError, UNAUTHORIZED_MESSAGE } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, enc, messagePath } from "../kit/common.ts";
import { allChats, newGroup, ok, raw, rawWithHost, sdkOptions, sendSettled, type Env } from "./kit.ts";

interface Call {
  method: string;
  path: string;
  json?: unknown;
}

/** One call per /v1 operation (assets, /v1/search and /v1/focus excluded: not part of this suite). */
function everyOperation(accountID: string, chatID: string, messageID: string, userID: string): Call[] {
  const chat = chatPath(chatID);
  const msg = messagePath(chatID, messageID);
  return [
    { method: "GET", path: "/v1/accounts" },
    { method: "GET", path: `/v1/accounts/${enc(accountID)}` },
    { method: "GET", path: `/v1/accounts/${enc(accountID)}/contacts?query=a` },
    { method: "GET", path: `/v1/accounts/${enc(accountID)}/contacts/list` },
    { method: "GET", path: "/v1/chats" },
    { method: "GET", path: "/v1/chats/search?query=a" },
    { method: "GET", path: chat },
    { method: "GET", path: `${chat}/messages` },
    { method: "GET", path: msg },
    { method: "GET", path: "/v1/messages/search?query=the" },
    { method: "POST", path: "/v1/chats", json: { accountID, type: "single", participantIDs: [userID] } },
    { method: "POST", path: "/v1/chats/start", json: { accountID, user: { id: userID } } },
    { method: "PATCH", path: chat, json: { isPinned: true, title: "changed by a token that may not" } },
    { method: "POST", path: `${chat}/archive`, json: {} },
    { method: "POST", path: `${chat}/reminders`, json: { reminder: { remindAtMs: Date.now() + 3_600_000 } } },
    { method: "DELETE", path: `${chat}/reminders` },
    { method: "POST", path: `${chat}/read`, json: {} },
    { method: "POST", path: `${chat}/unread`, json: {} },
    { method: "POST", path: `${chat}/notify-anyway` },
    { method: "POST", path: `${chat}/messages`, json: { text: "sent by a token that may not" } },
    { method: "PUT", path: msg, json: { text: "edited by a token that may not" } },
    { method: "DELETE", path: msg },
    { method: "POST", path: `${msg}/reactions`, json: { reactionKey: "👍" } },
    { method: "DELETE", path: `${msg}/reactions?reactionKey=${enc("👍")}` },
    { method: "DELETE", path: `${msg}/reactions/${enc("👍")}` },
  ];
}

export function authScenarios(env: Env) {
  describe("authentication and scopes", () => {
    /** A chat of our own with one settled message, so refused writes can be shown to have changed nothing. */
    async function fixture() {
      const chat = await newGroup(env);
      const message = await sendSettled(env, chat.id, "auth fixture message");
      const contacts = chat.participants.items.filter((p) => !p.isSelf);
      return { chat, message, calls: everyOperation(chat.accountID, chat.id, message.id, contacts[0].id) };
    }

    async function expectUntouched(chatBefore: Chat, message: Message) {
      const chat = await ok<Chat>(env, chatPath(chatBefore.id));
      expect(chat.title).toBe(chatBefore.title);
      expect(chat.isPinned).toBe(chatBefore.isPinned);
      expect(chat.isArchived).toBe(chatBefore.isArchived);
      expect(chat.reminder ?? null).toBeNull();
      const page = await ok<Page<Message>>(env, `${chatPath(chatBefore.id)}/messages`);
      expect(page.items.map((m) => m.id)).toEqual([message.id]);
      expect(page.items[0].text).toBe(message.text);
      expect(page.items[0].reactions ?? []).toEqual([]);
    }

    it("answers 401 with the documented message to every operation when the token is missing", async () => {
      const { chat, message, calls } = await fixture();
      for (const call of calls) {
        const res = await raw(env, call.path, { method: call.method, json: call.json, token: null });
        expectError(res, 401);
        expect(res.body.message, `${call.method} ${call.path}`).toBe(UNAUTHORIZED_MESSAGE);
      }
      await expectUntouched(chat, message);
    });

    it("answers 401 to every operation when the token is unknown or malformed", async () => {
      const { chat, message, calls } = await fixture();
      for (const call of calls) {
        const res = await raw(env, call.path, { method: call.method, json: call.json, token: `${env.rw}x` });
        expectError(res, 401);
        expect(res.body.message).toBe(UNAUTHORIZED_MESSAGE);
      }
      for (const header of [
        `Basic ${env.rw}`,
        "Bearer",
        "Bearer ",
        `${env.rw}`,
        `Bearer ${env.rw} extra`,
        `Bearer ${env.rw.slice(0, -1)}`,
      ]) {
        const res = await raw(env, "/v1/accounts", { token: null, headers: { authorization: header } });
        expectError(res, 401);
      }
      // The auth scheme is case-insensitive (RFC 7235).
      expect(
        (await raw(env, "/v1/accounts", { token: null, headers: { authorization: `bearer ${env.rw}` } })).status,
      ).toBe(200);
      await expectUntouched(chat, message);
    });

    it("lets a read-only token read everything and refuses every write with 403, changing nothing", async () => {
      const { chat, message, calls } = await fixture();
      for (const call of calls) {
        const res = await raw(env, call.path, { method: call.method, json: call.json, token: env.ro });
        if (call.method === "GET") {
          expect(res.status, `${call.method} ${call.path}: ${res.text}`).toBe(200);
        } else {
          expectError(res, 403);
          expect(res.body.message, `${call.method} ${call.path}`).toMatch(
            /^access token does not have the required scope: this needs write, and the token has read /,
          );
        }
      }
      await expectUntouched(chat, message);
    });

    it("maps 401 and 403 to the SDK's error classes", async () => {
      const stranger = new BeeperDesktop({ baseURL: env.url, accessToken: "not-a-token", ...sdkOptions });
      await expectSdkError(stranger.accounts.list(), BeeperDesktop.AuthenticationError, 401);
      await expectSdkError(stranger.chats.list(), BeeperDesktop.AuthenticationError, 401);
      const chat = (await allChats(env))[0];
      expect((await env.sdkRO.chats.retrieve(chat.id)).id).toBe(chat.id);
      await expectSdkError(
        env.sdkRO.messages.send(chat.id, { text: "nope" }),
        BeeperDesktop.PermissionDeniedError,
        403,
      );
      await expectSdkError(env.sdkRO.chats.archive(chat.id), BeeperDesktop.PermissionDeniedError, 403);
      expect((await ok<Chat>(env, chatPath(chat.id))).isArchived).toBe(chat.isArchived);
    });
  });

  describe("GET /v1/info", () => {
    it("answers without a token with the public minimum only", async () => {
      const res = await raw(env, "/v1/info", { token: null });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.headers.get("x-beeper-desktop-version")).toBeTruthy();
      expect(Object.keys(res.body).sort()).toEqual(["app", "server"]);
      expect(typeof res.body.app.name).toBe("string");
      expect(typeof res.body.app.version).toBe("string");
      expect(Object.keys(res.body.server)).toEqual(["status"]);
      expect(typeof res.body.server.status).toBe("string");
    });

    it("answers with a token with the full body of wire-compat §8", async () => {
      for (const token of [env.rw, env.ro]) {
        const res = await raw(env, "/v1/info", { token });
        expect(res.status).toBe(200);
        const info = res.body;
        for (const key of ["name", "version", "bundle_id"]) expect(typeof info.app[key]).toBe("string");
        expect(typeof info.platform.os).toBe("string");
        expect(typeof info.platform.arch).toBe("string");
        const url = new URL(env.url);
        expect(info.server.base_url).toBe(env.url);
        expect(info.server.port).toBe(Number(url.port));
        expect(info.server.hostname).toBe(url.hostname);
        expect(typeof info.server.status).toBe("string");
        expect(typeof info.server.remote_access).toBe("boolean");
        expect(typeof info.server.mcp_enabled).toBe("boolean");
        // Only endpoints that answer are advertised: the OAuth ones too, each the same as in the RFC 8414 metadata.
        const metadata = await (await fetch(`${env.url}/.well-known/oauth-authorization-server`)).json();
        for (const [name, url] of Object.entries(info.endpoints.oauth as Record<string, string>))
          expect(url, name).toBe(metadata[name]);
        expect(Object.keys(info.endpoints.oauth)).toHaveLength(6);
        expect(info.endpoints.ws_events).toBe(`${env.url.replace(/^http/, "ws")}/v1/ws`);
        const { oauth: _oauth, ...others } = info.endpoints as Record<string, string>;
        for (const [name, url] of Object.entries(others)) {
          expect(url, name).toMatch(new RegExp(`^${env.url.replace(/^http/, "(http|ws)")}/`));
          // GET answers anything but 404 (the MCP endpoints may ask for another method, /v1/ws for an upgrade);
          // an event stream (/v0/sse) is left as soon as its status is known.
          const answer = await fetch(url.replace(/^ws/, "http"), {
            headers: { authorization: `Bearer ${token}`, accept: "application/json, text/event-stream" },
          });
          await answer.body?.cancel();
          expect(answer.status, `${name}: ${url}`).not.toBe(404);
        }
        // The version header carries the app version.
        expect(res.headers.get("x-beeper-desktop-version")).toBe(info.app.version);
      }
    });

    it("refuses an invalid token instead of silently downgrading to the public body", async () => {
      expectError(await raw(env, "/v1/info", { token: "nope" }), 401);
    });

    it("is what SDK 5.0.0 info.retrieve() reads (it sends no token)", async () => {
      const info = await env.sdk.info.retrieve();
      const publicInfo = await ok(env, "/v1/info", { token: null });
      expect(info.app.name).toBe(publicInfo.app.name);
      expect(info.app.version).toBe(publicInfo.app.version);
      expect(info.server.status).toBe(publicInfo.server.status);
    });
  });

  describe("routing, headers and the Host check", () => {
    it("answers unknown routes with a 404 JSON error", async () => {
      for (const path of ["/v1/nope", "/v1/chats/x/nope/deeper", "/nope", "/v1/accounts/x/contacts/list/more"]) {
        expectError(await raw(env, path), 404);
      }
      const wrongMethod = await raw(env, "/v1/accounts", { method: "DELETE" });
      expect([404, 405]).toContain(wrongMethod.status);
      expectError(wrongMethod, wrongMethod.status);
    });

    it("puts application/json on every non-204 answer and the version header on every answer", async () => {
      const chat = await newGroup(env);
      const message = await sendSettled(env, chat.id, "header probe");
      const answers = [
        await raw(env, "/v1/accounts"),
        await raw(env, "/v1/chats"),
        await raw(env, chatPath(chat.id)),
        await raw(env, messagePath(chat.id, message.id)),
        await raw(env, "/v1/messages/search?query=probe"),
        await raw(env, "/v1/chats/search?limit=0"), // 400
        await raw(env, "/v1/accounts", { token: null }), // 401
        await raw(env, `${chatPath(chat.id)}/archive`, { method: "POST", json: {}, token: env.ro }), // 403
        await raw(env, chatPath("!missing:nowhere")), // 404
        await raw(env, chatPath(chat.id), { method: "PATCH", json: { imgURL: "https://example.com/a.png" } }), // 422
      ];
      const version = answers[0].headers.get("x-beeper-desktop-version");
      expect(version).toBeTruthy();
      for (const res of answers) {
        expect(res.headers.get("content-type") ?? "", `${res.status} ${res.text}`).toMatch(/^application\/json/);
        expect(res.headers.get("x-beeper-desktop-version")).toBe(version);
        expect(() => JSON.parse(res.text)).not.toThrow();
      }
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 400, 401, 403, 404, 422]);

      const noContent = [
        await raw(env, `${chatPath(chat.id)}/archive`, {
          method: "POST",
          json: { archived: false },
          headers: { accept: "*/*" },
        }),
        await raw(env, `${chatPath(chat.id)}/reminders`, {
          method: "POST",
          json: { reminder: { remindAtMs: Date.now() + 60_000 } },
        }),
        await raw(env, `${chatPath(chat.id)}/reminders`, { method: "DELETE" }),
        await raw(env, messagePath(chat.id, message.id), { method: "DELETE" }),
      ];
      for (const res of noContent) {
        expect(res.status).toBe(204);
        expect(res.text).toBe("");
        expect(res.headers.get("x-beeper-desktop-version")).toBe(version);
      }
    });

    it("sends no CORS permission and refuses requests a browser marks cross-site", async () => {
      // A preflight from another site gets no Access-Control-Allow-* header, so a browser will not send the request.
      const preflight = await raw(env, "/v1/accounts", {
        method: "OPTIONS",
        token: null,
        headers: {
          origin: "https://evil.example",
          "access-control-request-method": "GET",
          "access-control-request-headers": "authorization",
        },
      });
      expect(preflight.status).toBeGreaterThanOrEqual(400);
      for (const [name] of preflight.headers) expect(name).not.toMatch(/^access-control-/);
      const read = await raw(env, "/v1/accounts", { headers: { origin: "https://evil.example" } });
      for (const [name] of read.headers) expect(name).not.toMatch(/^access-control-/);
      if (env.options.checksHost) {
        // Even holding a token, a page on another site is refused by the daemon.
        expect(read.status).toBe(403);
        const write = await raw(env, "/v1/accounts", { headers: { "sec-fetch-site": "cross-site" } });
        expect(write.status).toBe(403);
        expect(write.body.code).toBe("CROSS_SITE_REQUEST");
      }
    });

    it("checks the Host header as the runtime promises", async () => {
      const port = new URL(env.url).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, "localhost"]) {
        const res = await rawWithHost(env, "/v1/accounts", host);
        expect(res.status, `${host}: ${res.text}`).toBe(200);
      }
      const evil = await rawWithHost(env, "/v1/accounts", `evil.example:${port}`);
      const evilInfo = await rawWithHost(env, "/v1/info", "rebind.attacker.test", null);
      const lookalikes = [
        await rawWithHost(env, "/v1/accounts", `127.0.0.1.nip.io:${port}`),
        await rawWithHost(env, "/v1/accounts", `localhost.evil.example:${port}`),
        await rawWithHost(env, "/v1/accounts", `0.0.0.0:${port}`),
      ];
      if (env.options.checksHost) {
        for (const res of [evil, evilInfo, ...lookalikes]) {
          expect(res.status, res.text).toBe(403);
          expect(String(res.headers.get("content-type"))).toMatch(/^application\/json/);
          expect(res.headers.get("x-beeper-desktop-version")).toBeTruthy();
          const body = JSON.parse(res.text);
          expect(typeof body.code).toBe("string");
          expect(typeof body.message).toBe("string");
        }
        // The refusal names the option that allows the name.
        expect(JSON.parse(evil.text).message).toMatch(
          /^Host evil\.example is not allowed: .*--allow-host evil\.example$/,
        );
      } else {
        expect(evil.status, evil.text).toBe(200);
        expect(evilInfo.status, evilInfo.text).toBe(200);
      }
    });
  });
}
