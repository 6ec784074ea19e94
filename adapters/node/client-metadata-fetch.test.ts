import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchClientMetadataPinned, publicOnlyLookup } from "./client-metadata-fetch.ts";

describe("the daemon's fetch of a client metadata URL", () => {
  let server: http.Server;
  let port = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) =>
      req.url === "/moved"
        ? res.writeHead(302, { location: "http://169.254.169.254/" }).end()
        : res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}'),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("refuses a name that resolves to a loopback or private address, at connect time", async () => {
    const resolved = await new Promise<Error | null>((resolve) =>
      publicOnlyLookup("localhost", {}, (error) => resolve(error)),
    );
    expect(resolved?.message).toMatch(/localhost resolves to (127\.0\.0\.1|::1), which is not fetched/);
  });

  it("reaches a host named as loopback, and hands a redirect back instead of following it", async () => {
    const signal = AbortSignal.timeout(5000);
    const ok = await fetchClientMetadataPinned(new URL(`http://127.0.0.1:${port}/client.json`), { signal });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ ok: true });
    const moved = await fetchClientMetadataPinned(new URL(`http://127.0.0.1:${port}/moved`), { signal });
    expect(moved.status).toBe(302);
    expect(moved.headers.get("location")).toBe("http://169.254.169.254/");
  });
});
