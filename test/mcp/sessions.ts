/**
 * /v0/sse sessions live in memory (the daemon's, or the Durable Object's): a client that goes away must not leave
 * its session behind. More sessions than the cap are opened and dropped in turn; each must be accepted.
 */
import { expect, it } from "vitest";
import { MAX_SSE_SESSIONS, SSE_KEEP_ALIVE_MS } from "../../src/mcp/sse.ts";
import { randomToken, type Start, waitFor } from "../kit/common.ts";
import { endpoint } from "./kit.ts";

/**
 * When a dropped client's session is freed: the daemon learns of the disconnect at once; a Durable Object only when
 * a write to the stream fails, the second keep-alive after the disconnect.
 */
export type FreedAt = "immediately" | "keep-alive";

export function sessionTests(start: Start, freedAt: FreedAt) {
  it(`frees a /v0/sse session when its client goes away (${MAX_SSE_SESSIONS + 20} sessions opened and dropped in turn; freed ${freedAt})`, async () => {
    const token = randomToken("rw");
    const server = await start({ seed: { chats: 3, messages: 10 }, tokens: [{ token, scopes: ["read", "write"] }] });
    try {
      const open = async () => {
        const aborted = new AbortController();
        const res = await fetch(endpoint(server.url, "sse"), {
          headers: { authorization: `Bearer ${token}` },
          signal: aborted.signal,
        });
        if (res.status === 200) await res.body!.getReader().read();
        aborted.abort();
        return res.status;
      };
      let refused = 0;
      for (let i = 0; i < MAX_SSE_SESSIONS + 20; i++) {
        if ((await open()) === 200) continue;
        expect(freedAt, `session ${i + 1} refused`).toBe("keep-alive");
        refused++;
        await waitFor(
          `session ${i + 1} to be accepted once older ones are freed`,
          async () => (await open()) === 200,
          3 * SSE_KEEP_ALIVE_MS,
          250,
        );
      }
      expect(refused).toBeLessThanOrEqual(20);
    } finally {
      await server.stop();
    }
  }, 60_000);
}
