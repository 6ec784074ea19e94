/**
 * The daemon's ServerResponse (ReasonPhraseResponse) corks a response of known length so its head and body leave in
 * one write; a streamed body must not be held by that. On Node 22 and 24 a corked chunked response stalled for good
 * once it had buffered 16 KB (GET /v1/events stopped mid-replay): these serve both kinds through srvx as the daemon
 * does, with a body far larger than a socket's buffer, and read every byte back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FastResponse, serve, type Server } from "srvx";
import { ReasonPhraseResponse } from "./request-body.ts";

const CHUNK = 4 * 1024;
const CHUNKS = 256; // 1 MB, well past the 16 KB high-water mark

/** A byte stream that has every chunk queued at once, as a replay that outruns the socket does. */
function eagerStream(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < CHUNKS; i++) controller.enqueue(new Uint8Array(CHUNK).fill(i % 256));
      controller.close();
    },
  });
}

let server: Server;
beforeAll(async () => {
  server = serve({
    port: 0,
    hostname: "127.0.0.1",
    silent: true,
    gracefulShutdown: false,
    // Answered after an await, as the daemon's handler answers: the response is written from a microtask, and its
    // first chunks before the next tick.
    fetch: async (request) => {
      await null;
      return new URL(request.url).pathname === "/stream"
        ? new FastResponse(eagerStream(), { headers: { "content-type": "application/octet-stream" } })
        : new FastResponse("x".repeat(CHUNK * CHUNKS), { headers: { "content-type": "text/plain" } });
    },
    node: { ServerResponse: ReasonPhraseResponse },
  });
  await server.ready();
});
afterAll(() => server?.close(true));

describe("ReasonPhraseResponse", () => {
  it("sends a streamed (chunked) body of 1 MB in full, with its reason phrase", async () => {
    const response = await fetch(new URL("/stream", server.url), { signal: AbortSignal.timeout(10_000) });
    expect(response.status).toBe(200);
    expect(response.statusText).toBe("OK");
    expect(response.headers.get("content-length")).toBeNull();
    const body = new Uint8Array(await response.arrayBuffer());
    expect(body.length).toBe(CHUNK * CHUNKS);
    expect(body[CHUNK * 200]).toBe(200);
  });

  it("sends a body of known length in full, with its content-length", async () => {
    const response = await fetch(new URL("/whole", server.url), { signal: AbortSignal.timeout(10_000) });
    expect(response.statusText).toBe("OK");
    expect(response.headers.get("content-length")).toBe(String(CHUNK * CHUNKS));
    expect((await response.text()).length).toBe(CHUNK * CHUNKS);
  });
});
