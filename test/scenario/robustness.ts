/**
 * Behaviour under load a real client produces: parallel requests, and rejected writes on a kept-alive connection.
 */
import { Agent, request as httpRequest } from "node:http";
import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import type { Message, Page } from "../../src/schema/wire.ts";
import { chatPath, messagePath } from "../kit/common.ts";
import { allChats, duplicates, echoChat, echoReply, ids, newGroup, ok, sendSettled, walk, type Env } from "./kit.ts";

export function robustnessScenarios(env: Env) {
  describe("parallel requests", () => {
    it("parallel sends to one chat each get their own message, all listed once, in a consistent order", async () => {
      const chat = await newGroup(env);
      const sent = await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          ok(env, `${chatPath(chat.id)}/messages`, { method: "POST", json: { text: `parallel ${i}` } }),
        ),
      );
      const pending = sent.map((s) => s.pendingMessageID as string);
      expect(duplicates(pending)).toEqual([]);
      const listed = await walk<Message>(env, `${chatPath(chat.id)}/messages`);
      expect(ids(listed.items).sort()).toEqual([...pending].sort());
      expect(duplicates(listed.items.map((m) => m.sortKey))).toEqual([]);
      expect(listed.items.map((m) => m.text).sort()).toEqual(
        Array.from({ length: 25 }, (_, i) => `parallel ${i}`).sort(),
      );
      for (let i = 1; i < listed.items.length; i++)
        expect(Date.parse(listed.items[i - 1].timestamp)).toBeGreaterThanOrEqual(Date.parse(listed.items[i].timestamp));
      const found = await walk<Message>(env, "/v1/messages/search", { query: "parallel", chatIDs: chat.id });
      expect(ids(found.items).sort()).toEqual([...pending].sort());
    });

    it("parallel reactions on one message all land", async () => {
      const chat = await newGroup(env);
      const m = await sendSettled(env, chat.id, "pile on");
      const keys = ["👍", "❤️", "😂", "🎉", "😮", "🙏", "🔥", "👀"];
      await Promise.all(
        keys.map((reactionKey) =>
          ok(env, `${messagePath(chat.id, m.id)}/reactions`, { method: "POST", json: { reactionKey } }),
        ),
      );
      const got = ((await ok<Message>(env, messagePath(chat.id, m.id))).reactions ?? []).map((r) => r.reactionKey);
      expect(got.sort()).toEqual([...keys].sort());
    });

    it("parallel sends across chats and Echo keep every list consistent", async () => {
      const echo = await echoChat(env, env.accounts[0].accountID);
      const groups = await Promise.all([newGroup(env), newGroup(env), newGroup(env)]);
      const before = (await allChats(env)).length;
      const results = await Promise.all([
        ...groups.flatMap((g) =>
          [1, 2, 3].map((i) =>
            ok(env, `${chatPath(g.id)}/messages`, { method: "POST", json: { text: `fan out ${i}` } }),
          ),
        ),
        ok(env, `${chatPath(echo.id)}/messages`, { method: "POST", json: { text: "fan out echo" } }),
      ]);
      await echoReply(env, echo.id, results.at(-1)!.pendingMessageID);
      for (const g of groups) expect((await ok<Page<Message>>(env, `${chatPath(g.id)}/messages`)).items.length).toBe(3);
      const after = await allChats(env);
      expect(after.length).toBe(before);
      expect(duplicates(ids(after))).toEqual([]);
      expect(after[0].id).toBe(echo.id);
    });
  });

  describe("connections", () => {
    it("a rejected write (401/403, body unread) does not break the kept-alive connection for the next request", async () => {
      const chat = await newGroup(env);
      // Every request goes out on one kept-alive socket: had the server closed it after a refusal, the agent would
      // open another (a new number, not reused), and had it left the unread body on it, the next answer would not
      // parse. (fetch would hide both: it opens another connection without saying so.)
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const numbers = new WeakMap<Socket, number>();
      let opened = 0;
      const send = (method: string, path: string, token: string | null, json?: unknown) =>
        new Promise<{ status: number; socket: number; reused: boolean }>((resolve, reject) => {
          const url = new URL(env.url + path);
          const body = json === undefined ? undefined : JSON.stringify(json);
          const headers: Record<string, string> = {
            accept: "application/json",
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(body ? { "content-type": "application/json" } : {}),
          };
          const req = httpRequest(
            { host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers, agent },
            (res) => {
              let text = "";
              res.setEncoding("utf8");
              res.on("data", (c) => (text += c));
              res.on("end", () => {
                try {
                  const type = res.headers["content-type"] ?? null;
                  env.spec?.check(
                    method,
                    url.toString(),
                    res.statusCode!,
                    type,
                    /json/i.test(type ?? "") ? JSON.parse(text) : undefined,
                  );
                } catch (error) {
                  reject(error);
                  return;
                }
                resolve({ status: res.statusCode!, socket, reused: req.reusedSocket });
              });
              res.on("error", reject);
            },
          );
          let socket = 0;
          req.once("socket", (s: Socket) => (socket = numbers.get(s) ?? numbers.set(s, ++opened).get(s)!));
          req.on("error", reject);
          req.end(body);
        });
      try {
        const first = await send("GET", "/v1/accounts", env.rw);
        expect(first.status).toBe(200);
        const failures: string[] = [];
        for (let i = 0; i < 150; i++) {
          for (const token of [null, env.ro]) {
            let step = "the rejected POST";
            try {
              const rejected = await send("POST", `${chatPath(chat.id)}/messages`, token, {
                text: `rejected ${"x".repeat(1000)}`,
              });
              expect(rejected).toEqual({ status: token ? 403 : 401, socket: first.socket, reused: true });
              step = "the GET after it";
              const next = await send("GET", "/v1/accounts", env.rw);
              expect(next).toEqual({ status: 200, socket: first.socket, reused: true });
            } catch (error) {
              const code = (error as { code?: string }).code ?? "";
              failures.push(`round ${i}, ${token ? "403" : "401"} case, ${step}: ${(error as Error).message} ${code}`);
            }
          }
        }
        expect(failures).toEqual([]);
      } finally {
        agent.destroy();
      }
    });
  });
}
