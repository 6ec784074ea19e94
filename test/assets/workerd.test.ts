/**
 * The asset suite on the Worker (workerd through Miniflare, R2 in memory), plus what only the Worker has: srcURLs
 * are localmxc://inboxd/<id> (there is no file system to point at), so no file:// URL names anything.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorkerd, type WorkerdServer } from "../harness/workerd.ts";
import { text } from "./fixtures.ts";
import { randomToken } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { serveAsset, uploadBytes } from "./kit.ts";
import { assetSuite } from "./suite.ts";

assetSuite<WorkerdServer>({
  name: "workerd",
  start: (options) => startWorkerd(options),
  srcURL: (_server, id) => `localmxc://inboxd/${id}`,
});

describe("workerd only: file:// URLs", () => {
  let server: WorkerdServer;
  let api: Api;
  beforeAll(async () => {
    const token = randomToken("rw");
    server = await startWorkerd({
      seed: { chats: 4, messages: 20, accounts: 1, seed: 2 },
      tokens: [{ token, scopes: ["read", "write"] }],
    });
    api = new Api(server.url, token);
  });
  afterAll(() => server?.stop());

  it("every file:// URL is refused with 403, including ones shaped like a daemon's asset path", async () => {
    const up = await uploadBytes(api, text("worker bytes"), "w.txt");
    expect(up.srcURL).toBe(`localmxc://inboxd/${up.uploadID}`);
    for (const url of [
      "file:///etc/passwd",
      "file://localhost/etc/hostname",
      `file:///tmp/inboxd/assets/${up.uploadID}/w.txt`,
      `file:///${up.uploadID}`,
      `file://${up.uploadID}/w.txt`,
      "file:///",
    ]) {
      const served = await serveAsset(api, url);
      expect(served.status, url).toBe(403);
      expect(new TextDecoder().decode(served.bytes)).not.toContain("worker bytes");
      expect((await api.raw("POST", "/v1/assets/download", { json: { url } })).status, url).toBe(403);
    }
  });
});
