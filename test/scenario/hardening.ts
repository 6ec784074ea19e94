/**
 * Hostile and malformed input (issue: hardening): every limit of src/http/limits.ts refused with a clear error and
 * nothing stored, no 5xx from input, bounded error bodies, Origin: null refused, fractional numbers accepted.
 * Connection-level behaviour (early refusals, keep-alive, slow bodies) is the daemon's: test/connections.test.ts.
 */
import http from "node:http";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../src/schema/limits.ts";
import { expectError } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, enc, messagePath } from "../kit/common.ts";
import type { Answer } from "../kit/http.ts";
import { newGroup, ok, raw, type Env } from "./kit.ts";

const bytes = (n: number, unit = "a") => unit.repeat(n);

/** A request that declares `length` bytes of JSON body and sends none of them. */
function headersOnly(env: Env, method: string, path: string, length: number) {
  const target = new URL(env.url + path);
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method,
      agent: false,
      headers: { authorization: `Bearer ${env.rw}`, "content-type": "application/json", "content-length": length },
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        const headers = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
        resolve({ status: res.statusCode ?? 0, headers, text, body: JSON.parse(text) });
        req.destroy();
      });
    });
    req.on("error", reject);
    req.flushHeaders();
  });
}

export function hardeningScenarios(env: Env) {
  describe("hardening: limits", () => {
    it("message text: exactly 64 KiB is stored whole; one byte more is a 400 naming body.text, and nothing is stored", async () => {
      const chat = await newGroup(env);
      const longest = `${bytes(LIMITS.textBytes - 4)}😀`; // 4 bytes: the limit counts UTF-8 bytes
      const sent = await ok(env, `${chatPath(chat.id)}/messages`, { method: "POST", json: { text: longest } });
      const stored = await ok<Message>(env, messagePath(chat.id, sent.pendingMessageID));
      expect(stored.text).toBe(longest);
      const refused = await raw(env, `${chatPath(chat.id)}/messages`, {
        method: "POST",
        json: { text: `${longest}b` },
      });
      expectError(refused, 400, ["body", "text"]);
      const listed = await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`);
      expect(listed.items.map((m) => m.id)).toEqual([sent.pendingMessageID]);
      // An edit beyond the limit is refused too, and the message keeps its text.
      const edit = await raw(env, messagePath(chat.id, sent.pendingMessageID), {
        method: "PUT",
        json: { text: bytes(LIMITS.textBytes + 1) },
      });
      expectError(edit, 400, ["body", "text"]);
    });

    it("a chat's preview is a bounded excerpt in lists and on the chat, never the whole text", async () => {
      const chat = await newGroup(env);
      const text = bytes(LIMITS.textBytes);
      await ok(env, `${chatPath(chat.id)}/messages`, { method: "POST", json: { text } });
      const one = await ok<Chat & { preview?: Message }>(env, chatPath(chat.id));
      expect(one.preview!.text!.length).toBeLessThanOrEqual(LIMITS.previewChars + 1);
      expect(text.startsWith(one.preview!.text!.slice(0, -1))).toBe(true);
      const list = await raw(env, "/v1/chats");
      expect(list.text.length).toBeLessThan(200_000);
      const listed = (list.body.items as (Chat & { preview?: Message })[]).find((c) => c.id === chat.id)!;
      expect(listed.preview!.text!.length).toBeLessThanOrEqual(LIMITS.previewChars + 1);
    });

    it("titles, drafts, descriptions, webhook URLs, IDs and search text each have their limit", async () => {
      const chat = await newGroup(env);
      expectError(
        await raw(env, chatPath(chat.id), { method: "PATCH", json: { title: bytes(LIMITS.titleBytes + 1) } }),
        400,
        ["body", "title"],
      );
      expectError(
        await raw(env, chatPath(chat.id), { method: "PATCH", json: { draft: { text: bytes(LIMITS.textBytes + 1) } } }),
        400,
        ["body", "draft", "text"],
      );
      expectError(
        await raw(env, chatPath(chat.id), {
          method: "PATCH",
          json: { description: bytes(LIMITS.descriptionBytes + 1) },
        }),
        400,
        ["body", "description"],
      );
      expect((await ok<Chat>(env, chatPath(chat.id))).title).toBe(chat.title);
      expectError(
        await raw(env, "/v1/webhooks", {
          method: "POST",
          json: { url: `https://example.invalid/${bytes(LIMITS.urlBytes)}` },
        }),
        400,
        ["body", "url"],
      );
      expectError(await raw(env, `/v1/chats/${bytes(LIMITS.idBytes + 1)}`), 400, ["path", "chatID"]);
      expectError(await raw(env, `/v1/messages/search?query=${bytes(LIMITS.queryTextBytes + 1)}`), 400, [
        "query",
        "query",
      ]);
      expectError(await raw(env, `/v1/messages/search?query=${bytes(LIMITS.queryStringBytes + 1)}`), 414);
      // Any other string in a body, and arrays.
      expectError(
        await raw(env, "/v1/chats", {
          method: "POST",
          json: { accountID: env.accounts[0].accountID, user: { fullName: bytes(LIMITS.stringBytes + 1) } },
        }),
        400,
        ["body", "user", "fullName"],
      );
      const many = Array.from({ length: LIMITS.arrayItems + 1 }, (_, i) => `p${i}`);
      expectError(
        await raw(env, "/v1/chats", {
          method: "POST",
          json: { accountID: env.accounts[0].accountID, participantIDs: many },
        }),
        400,
        ["body", "participantIDs"],
      );
    });

    it("a JSON body declared over 1 MiB is a 413 answered before any of it is sent", async () => {
      const chat = await newGroup(env);
      // Only the headers go out: the answer has to come from the declared length alone. (Sending the body too
      // would race the server's close against the unread bytes, which the kernel answers with a reset.)
      const answer = await headersOnly(env, "PATCH", chatPath(chat.id), LIMITS.jsonBodyBytes + 1);
      expectError(answer, 413);
      expect((await ok<Chat>(env, chatPath(chat.id))).title).toBe(chat.title);
    });

    it("a streamed JSON body (no declared length) is a 413 once it passes 1 MiB", async () => {
      const chat = await newGroup(env);
      // Exactly one byte over, then the stream stays open: the server has read all that was sent when it answers.
      const over = new TextEncoder().encode(`{"title":"t","pad":"${bytes(LIMITS.jsonBodyBytes)}`);
      let sent = false;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent) return new Promise(() => {});
          sent = true;
          controller.enqueue(over);
        },
      });
      const res = await raw(env, chatPath(chat.id), {
        method: "PATCH",
        body,
        headers: { "content-type": "application/json" },
        noRetry: true,
      });
      expectError(res, 413);
      expect((await ok<Chat>(env, chatPath(chat.id))).title).toBe(chat.title);
    });

    it("a JSON body that starts with a UTF-8 byte order mark is read as the JSON after it, declared or streamed", async () => {
      const chat = await newGroup(env);
      const json = (title: string) => new TextEncoder().encode(`\ufeff{"title":"${title}"}`);
      const headers = { "content-type": "application/json" };
      // A declared length (the daemon reads such a body whole before the app sees it) …
      await ok(env, chatPath(chat.id), { method: "PATCH", body: json("declared"), headers });
      expect((await ok<Chat>(env, chatPath(chat.id))).title).toBe("declared");
      // … and a stream without one.
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(json("streamed"));
          controller.close();
        },
      });
      await ok(env, chatPath(chat.id), { method: "PATCH", body, headers, noRetry: true });
      expect((await ok<Chat>(env, chatPath(chat.id))).title).toBe("streamed");
    });
  });

  describe("hardening: no 5xx from input", () => {
    it("webhook IDs that are no storage key answer 404 on GET and DELETE", async () => {
      for (const id of ["..%2Fx", "..", "%2E%2E", "a%3Fb", "a%3Ab", "wh_zz", enc("wh_1/../x")]) {
        expectError(await raw(env, `/v1/webhooks/${id}`, { method: "DELETE" }), 404);
        expectError(await raw(env, `/v1/webhooks/${id}`), 404);
      }
    });

    it("a lone surrogate in any body string is a 400 naming the field, and nothing is stored", async () => {
      const chat = await newGroup(env);
      const loneSurrogate = (json: string) =>
        raw(env, "/v1/assets/upload/base64", {
          method: "POST",
          body: json,
          headers: { "content-type": "application/json" },
        });
      expectError(await loneSurrogate('{"content":"aGk=","fileName":"\\ud800.txt"}'), 400, ["body", "fileName"]);
      const send = await raw(env, `${chatPath(chat.id)}/messages`, {
        method: "POST",
        body: '{"text":"a\\udc00b"}',
        headers: { "content-type": "application/json" },
      });
      expectError(send, 400, ["body", "text"]);
      expect((await ok<Page<Message>>(env, `${chatPath(chat.id)}/messages`)).items).toEqual([]);
      // In a path or query, a percent-encoded surrogate is malformed UTF-8: 400 as well.
      expectError(await raw(env, `/v1/chats/%ED%A0%80`), 400, ["path", "chatID"]);
      expectError(await raw(env, `/v1/messages/search?query=%ED%A0%80`), 400);
    });

    it("reminders take fractional milliseconds (Python's time.time() * 1000), cut to the millisecond", async () => {
      const chat = await newGroup(env);
      const at = Date.now() + 3_600_000 + 0.625;
      await ok(env, `${chatPath(chat.id)}/reminders`, { method: "POST", json: { reminder: { remindAtMs: at } } }, 204);
      const after = await ok<Chat & { reminder?: { remindAtMs: number } }>(env, chatPath(chat.id));
      expect(after.reminder?.remindAtMs).toBe(Math.floor(at));
    });
  });

  describe("hardening: error bodies", () => {
    it("quote at most ~100 characters of the offending value, once", async () => {
      const chat = await newGroup(env);
      const huge = bytes(100_000, "z");
      const bad = await raw(env, `${chatPath(chat.id)}/archive`, { method: "POST", json: { archived: huge } });
      expectError(bad, 400, ["body", "archived"]);
      expect(bad.text.length).toBeLessThan(1_000);
      const longID = bytes(400, "m");
      const missing = await raw(env, messagePath(chat.id, longID));
      expectError(missing, 404);
      expect(missing.text.length).toBeLessThan(500);
      const tooLongID = await raw(env, messagePath(chat.id, bytes(LIMITS.idBytes * 8, "m")));
      expectError(tooLongID, 400, ["path", "messageID"]);
      expect(tooLongID.text.length).toBeLessThan(600);
    });
  });

  describe("hardening: browsers", () => {
    it("refuses Origin: null (sandboxed iframes, file:// pages) like a foreign origin", async () => {
      expectError(await raw(env, "/v1/accounts", { headers: { origin: "null" } }), 403);
      expect((await raw(env, "/v1/accounts")).status).toBe(200);
    });
  });

  describe("hardening: HEAD", () => {
    it("is answered wherever GET is, with GET's status and headers and no body, and needs GET's token", async () => {
      for (const [path, token] of [
        ["/", null],
        ["/v1/info", null],
        ["/v1/accounts", env.ro],
        ["/v1/chats", env.rw],
        ["/v1/spec", env.ro],
      ] as const) {
        const get = await raw(env, path, { token });
        const head = await raw(env, path, { method: "HEAD", token });
        expect([head.status, head.text], `HEAD ${path}`).toEqual([get.status, ""]);
        expect(get.status, `GET ${path}`).toBe(200);
        expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
      }
      const refused = await raw(env, "/v1/accounts", { method: "HEAD", token: null });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer /);
      expect((await raw(env, "/v1/no-such-route", { method: "HEAD" })).status).toBe(404);
    });

    it("a known path asked with a method it does not take is a 405 naming the ones it does (Allow), not a 404", async () => {
      const put = await raw(env, "/v1/chats", { method: "PUT", json: {} });
      expectError(put, 405);
      expect(put.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
      expect(put.body.message).toContain("PUT is not answered at /v1/chats");
      const chat = await newGroup(env);
      const del = await raw(env, `${chatPath(chat.id)}/messages`, { method: "DELETE" });
      expectError(del, 405);
      expect(del.headers.get("allow")).toContain("POST");
      expect((await raw(env, "/v1/nothing-here", { method: "PUT", json: {} })).status).toBe(404);
    });
  });

  describe("hardening: query booleans", () => {
    /** A query parameter documented as a boolean: `enum: ["true", "false"]` (or that, nullable, on /v0). */
    const isBoolean = (schema: { enum?: unknown[]; type?: string; anyOf?: unknown[] } = {}): boolean =>
      schema.type === "boolean" ||
      JSON.stringify(schema.enum) === '["true","false"]' ||
      (schema.anyOf ?? []).some((s) => isBoolean(s as typeof schema));

    it("every boolean query parameter of every operation takes true or false only: anything else is a 400 naming it, and nothing is done", async () => {
      const chat = await newGroup(env);
      const sent = await ok(env, `${chatPath(chat.id)}/messages`, { method: "POST", json: { text: "not deleted" } });
      const ids: Record<string, string> = { chatID: chat.id, messageID: sent.pendingMessageID };
      const spec = await ok<{
        paths: Record<string, Record<string, { parameters?: { in: string; name: string; schema?: object }[] }>>;
      }>(env, "/v1/spec");
      const swept: string[] = [];
      for (const [path, operations] of Object.entries(spec.paths))
        for (const [method, operation] of Object.entries(operations))
          for (const { in: where, name, schema } of operation.parameters ?? []) {
            if (where !== "query" || !isBoolean(schema)) continue;
            const url = path.replace(/\{(\w+)\}/g, (_, param: string) => enc(ids[param] ?? "x"));
            for (const value of ["maybe", "True", "1", "yes", "true,false"]) {
              const res = await raw(env, `${url}?${name}=${enc(value)}`, { method: method.toUpperCase() });
              if (path.startsWith("/v0/")) {
                expect(res.status, `${method} ${path}?${name}=${value}: ${res.text}`).toBe(400);
                expect(res.body.details, res.text).toHaveProperty([`query.${name}`]);
              } else expectError(res, 400, ["query", name]);
            }
            swept.push(`${method.toUpperCase()} ${path} ${name}`);
          }
      expect(swept).toEqual(
        expect.arrayContaining([
          "DELETE /v1/chats/{chatID}/messages/{messageID} forEveryone",
          "GET /v1/chats/search unreadOnly",
          "GET /v1/chats/search includeMuted",
          "GET /v1/messages/search excludeLowPriority",
          "GET /v1/messages/search includeMuted",
          "GET /v0/search-chats unreadOnly",
        ]),
      );
      // The refused DELETEs deleted nothing.
      expect((await ok<Message>(env, messagePath(chat.id, sent.pendingMessageID))).text).toBe("not deleted");
    });
  });
}
