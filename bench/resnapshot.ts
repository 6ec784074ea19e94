/**
 * Scale mode's re-snapshot phase: how long requests wait while the daemon writes a new chat snapshot.
 *
 * A new snapshot is due once more than 2,048 distinct chats changed since the last one (src/store/chat-snapshot.ts).
 * This sends one message to each of RESNAPSHOT_CHATS chats (4 at a time) while a prober asks GET /v1/accounts, a
 * request that touches no chat, every 2 ms, and goes on probing for 3 s after the last send: the longest probe is the
 * longest the daemon held requests up (at 100k chats a snapshot is 73 MB).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { segment } from "./workload.ts";

export const RESNAPSHOT_CHATS = 2400;
const SENDERS = 4;
const PROBE_EVERY_MS = 2;
const SETTLE_MS = 3000;

export interface ResnapshotResult {
  chats: number;
  sendSeconds: number;
  probes: number;
  p50: number;
  p99: number;
  max: number;
}

export async function measureResnapshot(url: string, token: string, text: string): Promise<ResnapshotResult> {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const json = async (path: string, init?: RequestInit) => {
    const res = await fetch(`${url}${path}`, { headers, ...init });
    if (!res.ok)
      throw new Error(`${init?.method ?? "GET"} ${path} answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
    return res.json();
  };
  const chatIDs: string[] = [];
  for (let cursor: string | undefined; chatIDs.length < RESNAPSHOT_CHATS; ) {
    const page = await json(
      `/v1/chats/search?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}&direction=before` : ""}`,
    );
    chatIDs.push(...page.items.map((chat: { id: string }) => chat.id));
    if (!page.hasMore) break;
    cursor = page.oldestCursor;
  }
  if (chatIDs.length <= 2048)
    throw new Error(`only ${chatIDs.length} chats: a new snapshot needs more than 2,048 changed`);

  const waits: number[] = [];
  let probing = true;
  const prober = (async () => {
    while (probing) {
      const started = performance.now();
      await (await fetch(`${url}/v1/accounts`, { headers })).arrayBuffer();
      waits.push(performance.now() - started);
      await sleep(PROBE_EVERY_MS);
    }
  })();
  const started = performance.now();
  let next = 0;
  const body = JSON.stringify({ text });
  await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      while (next < chatIDs.length)
        await json(`/v1/chats/${segment(chatIDs[next++])}/messages`, { method: "POST", body });
    }),
  );
  const sendSeconds = (performance.now() - started) / 1000;
  await sleep(SETTLE_MS);
  probing = false;
  await prober;
  waits.sort((a, b) => a - b);
  const at = (p: number) => waits[Math.min(waits.length - 1, Math.floor(p * waits.length))];
  return {
    chats: chatIDs.length,
    sendSeconds,
    probes: waits.length,
    p50: at(0.5),
    p99: at(0.99),
    max: waits[waits.length - 1],
  };
}
