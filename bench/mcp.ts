/**
 * The MCP part of the benchmark: tools/call search_messages requests for the load generator (POST /v0/mcp, stateless,
 * as an MCP client sends them), and the daemon's memory per open /v0/sse session.
 */
import http from "node:http";
import { sleep } from "../test/kit/common.ts";
import { median, memory, type Daemon } from "./daemon.ts";
import { connectInspector } from "./inspector.ts";
import type { RequestSpec } from "./load.ts";

const MCP_HEADERS = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" };

/** tools/call search_messages for each word ({n} becomes the JSON-RPC id). */
export function mcpSearchRequests(words: string[]): RequestSpec[] {
  return words.map((word) => ({
    method: "POST",
    path: "/v0/mcp",
    headers: MCP_HEADERS,
    body: `{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{"name":"search_messages","arguments":{"query":${JSON.stringify(word)}}}}`,
  }));
}

/**
 * The same call as a 2026-07-28 client sends it: no initialize before it, the protocol version, client info and
 * capabilities in `_meta`, and the method and tool named again in the Mcp-Method / Mcp-Name headers.
 */
export function mcpModernSearchRequests(words: string[]): RequestSpec[] {
  return words.map((word) => ({
    method: "POST",
    path: "/v0/mcp",
    headers: {
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "search_messages",
    },
    body: `{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{"name":"search_messages","arguments":{"query":${JSON.stringify(word)}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
  }));
}

/** One open /v0/sse session, initialized as a client does it (initialize, then notifications/initialized). */
export async function openSession(url: string, token: string): Promise<() => void> {
  const target = new URL(`${url}/v0/sse`);
  const { req, res } = await new Promise<{ req: http.ClientRequest; res: http.IncomingMessage }>((resolve, reject) => {
    const req = http.get(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        agent: false,
        headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
      },
      (res) =>
        res.statusCode === 200 ? resolve({ req, res }) : reject(new Error(`GET /v0/sse answered ${res.statusCode}`)),
    );
    req.on("error", reject);
  });
  res.setEncoding("utf8");
  // One listener for the stream's life: data that comes while nobody waits must not be lost.
  let received = "";
  let listening = true;
  const waiters = new Set<() => void>();
  res.on("data", (chunk: string) => {
    if (!listening) return;
    received += chunk;
    for (const check of waiters) check();
  });
  const waitFor = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve) => {
      const check = () => {
        const match = pattern.exec(received);
        if (!match) return;
        waiters.delete(check);
        resolve(match);
      };
      waiters.add(check);
      check();
    });
  const endpoint = (await waitFor(/event: endpoint\ndata: (\S+)/))[1];
  const post = async (message: object) => {
    const r = await fetch(url + endpoint, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(message),
    });
    if (r.status !== 202) throw new Error(`POST ${endpoint} answered ${r.status}`);
  };
  await post({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2024-11-05", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
  });
  await waitFor(/"id":1\}/);
  await post({ jsonrpc: "2.0", method: "notifications/initialized" });
  listening = false;
  return () => req.destroy();
}

export interface SessionMemoryResult {
  sessions: number;
  rounds: number;
  /** Per session, KB: RSS and V8 heap after forced GCs, the median of the rounds, and each round. */
  perSessionKB: { rss: number; heap: number };
  roundsKB: { rss: number; heap: number }[];
}

/**
 * The daemon (started with --inspect) read with no session and with N open, initialized, idle sessions: after a
 * settle delay and two forced full GCs, RSS and heap in use. A first round is unmeasured (code compiled on first use).
 */
export async function measureSseSessionMemory(
  daemon: Daemon,
  token: string,
  sessions: number,
  rounds: number,
  settleMs: number,
  log: (line: string) => void,
): Promise<SessionMemoryResult> {
  if (daemon.inspectPort === undefined) throw new Error("the daemon needs to be started with { inspect: true }");
  const inspector = await connectInspector(daemon.inspectPort);
  const read = async () => {
    await sleep(settleMs);
    await inspector.collectGarbage();
    await inspector.collectGarbage();
    await sleep(300);
    return { rssMB: memory(daemon.pid).rssMB, heapMB: (await inspector.heapUsage()).usedSize / 2 ** 20 };
  };
  const openAll = async () => {
    const closers: (() => void)[] = [];
    for (let i = 0; i < sessions; i++) closers.push(await openSession(daemon.url, token));
    return () => closers.forEach((close) => close());
  };
  try {
    (await openAll())();
    let before = await read();
    const roundsKB: SessionMemoryResult["roundsKB"] = [];
    for (let round = 1; round <= rounds; round++) {
      const closeAll = await openAll();
      const open = await read();
      closeAll();
      const after = await read();
      roundsKB.push({
        rss: ((open.rssMB - before.rssMB) * 1024) / sessions,
        heap: ((open.heapMB - before.heapMB) * 1024) / sessions,
      });
      log(
        `  round ${round}: RSS ${before.rssMB.toFixed(1)} → ${open.rssMB.toFixed(1)} → ${after.rssMB.toFixed(1)} MB, heap ${before.heapMB.toFixed(1)} → ${open.heapMB.toFixed(1)} MB (${roundsKB.at(-1)!.rss.toFixed(1)} KB RSS, ${roundsKB.at(-1)!.heap.toFixed(1)} KB heap per session)`,
      );
      before = after;
    }
    return {
      sessions,
      rounds,
      perSessionKB: { rss: median(roundsKB.map((r) => r.rss)), heap: median(roundsKB.map((r) => r.heap)) },
      roundsKB,
    };
  } finally {
    inspector.close();
  }
}

/** One call before the measurement: a tool error answers 200 too, so the load generator would not see it. */
export async function checkMcpSearch(url: string, token: string, word: string, modern = false): Promise<void> {
  const [spec] = (modern ? mcpModernSearchRequests : mcpSearchRequests)([word]);
  const res = await fetch(url + spec.path, {
    method: "POST",
    headers: { ...spec.headers, authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: spec.body!.replace("{n}", "1"),
  });
  const text = await res.text();
  if (
    res.status !== 200 ||
    !text.includes('"structuredContent":{"items":[{') ||
    text.includes('"isError":true') ||
    (modern && !text.includes('"resultType":"complete"'))
  )
    throw new Error(`MCP search_messages for "${word}" answered ${res.status}: ${text.slice(0, 300)}`);
}
