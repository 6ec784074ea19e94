/** Network media of seeded messages: found by search, downloaded on demand (once), served by either URL. */
import { describe, expect, it } from "vitest";
import type { AssetEnv } from "./env.ts";
import { jpegSize, sha256 } from "./fixtures.ts";
import type { Attachment, Message } from "../../src/schema/wire.ts";
import { sdk, serveAsset } from "./kit.ts";

export function mediaCases(env: AssetEnv) {
  describe("download and serve of network media", () => {
    /** The smallest attachment of the given kind among seeded messages found by search. */
    async function seeded(
      mediaType: "image" | "video" | "file",
      kind: string,
      skip = 0,
      largest = false,
    ): Promise<Attachment> {
      const page = await env.api.ok<{ items: Message[] }>(
        "GET",
        `/v1/messages/search?mediaTypes=${mediaType}&limit=100`,
      );
      const all = page.items
        .flatMap((m) => m.attachments ?? [])
        .filter((a) => a.id?.startsWith(`mxc://sandbox.invalid/seed-${kind}-`));
      all.sort((a, b) => (largest ? b.fileSize! - a.fileSize! : a.fileSize! - b.fileSize!));
      if (all.length <= skip) throw new Error(`no seeded ${kind} media`);
      return all[skip];
    }

    it("search with mediaTypes=image finds seeded images (every hit has an img attachment)", async () => {
      const page = await env.api.ok<{ items: Message[] }>("GET", "/v1/messages/search?mediaTypes=image&limit=50");
      expect(page.items.length).toBeGreaterThan(10);
      for (const m of page.items)
        expect(
          m.attachments?.some((a) => a.type === "img"),
          m.id,
        ).toBe(true);
    });

    it("download an image: srcURL of this runtime; a second download returns the stored one, not fetched again", async () => {
      const a = await seeded("image", "img");
      const first = await sdk(env.server.url, env.rwToken).assets.download({ url: a.id! });
      expect(Object.keys(first)).toEqual(["srcURL"]);
      const local = /(?:inboxd\/|assets\/)([a-z0-9]+)/.exec(first.srcURL!)?.[1];
      expect(first.srcURL).toBe(env.runtime.srcURL(env.server, local!, `sandbox-${a.id!.split("-").pop()}.jpg`));
      const filesBefore = env.runtime.chunkFiles?.(env.server);
      const second = await sdk(env.server.url, env.rwToken).assets.download({ url: a.id! });
      // Each fetch from the network is stored as a new asset under a new random ID, so the same srcURL means the
      // stored asset was found; where the runtime's chunk files can be seen, none were written either.
      expect(second.srcURL).toBe(first.srcURL);
      if (filesBefore) expect(env.runtime.chunkFiles!(env.server)).toEqual(filesBefore);
      // serving the network URL and the srcURL: the declared size, image/jpeg, a JPEG of 1280×720
      const byMxc = await serveAsset(env.api, a.id!);
      const bySrc = await serveAsset(env.api, first.srcURL!);
      for (const r of [byMxc, bySrc]) {
        expect(r.status).toBe(200);
        expect(r.h("content-type")).toBe("image/jpeg");
        env.expectLength(r, a.fileSize!);
        expect(jpegSize(r.bytes)).toEqual({ width: 1280, height: 720 });
      }
      expect(sha256(byMxc.bytes)).toBe(sha256(bySrc.bytes));
    });

    it("serve downloads on demand: a never-downloaded image is served at once, and a later download finds it", async () => {
      const a = await seeded("image", "img", 1);
      const r = await serveAsset(env.api, a.id!, { range: "bytes=0-3" });
      expect(r.status).toBe(206);
      expect(r.h("content-range")).toBe(`bytes 0-3/${a.fileSize}`);
      expect([...r.bytes]).toEqual([0xff, 0xd8, 0xff, 0xe0]);
      const d = await env.api.ok<{ srcURL: string }>("POST", "/v1/assets/download", { url: a.id });
      expect((await serveAsset(env.api, d.srcURL)).bytes.length).toBe(a.fileSize);
    });

    it("concurrent downloads of the same new URL agree on one srcURL (the file is fetched and stored once)", async () => {
      const a = await seeded("image", "img", 0, true); // the largest: several chunks, so the downloads overlap
      const answers = await Promise.all(
        [1, 2, 3, 4].map(() => env.api.ok<{ srcURL: string }>("POST", "/v1/assets/download", { url: a.id })),
      );
      expect(new Set(answers.map((x) => x.srcURL)).size).toBe(1);
    }, 60_000);

    it("video, audio and documents: their types and sizes", async () => {
      for (const [mediaType, kind, mime] of [
        ["video", "video", "video/mp4"],
        ["file", "audio", "audio/ogg"],
        ["file", "file", "application/pdf"],
      ] as const) {
        const a = await seeded(mediaType, kind);
        const d = await env.api.ok<{ srcURL: string }>("POST", "/v1/assets/download", { url: a.id });
        const r = await serveAsset(env.api, d.srcURL);
        expect(r.status, kind).toBe(200);
        expect(r.h("content-type"), kind).toBe(mime);
        expect(r.bytes.length, kind).toBe(a.fileSize);
      }
    }, 60_000);

    it("404 for media the network does not have, or an unknown local asset", async () => {
      for (const url of [
        "mxc://sandbox.invalid/no-such-media",
        "mxc://elsewhere.example/abc",
        "mxc://inboxd/nosuchasset",
        "localmxc://inboxd/nosuchasset",
      ]) {
        const d = await env.api.raw("POST", "/v1/assets/download", { json: { url } });
        expect(d.status, url).toBe(404);
        expect(d.body).toMatchObject({ code: "NOT_FOUND" });
        expect((await serveAsset(env.api, url)).status, url).toBe(404);
      }
    });

    it("400 for a URL that is not mxc://, localmxc:// or file://, or a missing url", async () => {
      for (const url of ["https://example.com/a.png", "javascript:alert(1)", "mxc://", "relative/path"]) {
        expect((await env.api.raw("POST", "/v1/assets/download", { json: { url } })).status, url).toBe(400);
        expect((await serveAsset(env.api, url)).status, url).toBe(400);
      }
      expect((await env.api.raw("POST", "/v1/assets/download", { json: {} })).status).toBe(400);
      expect((await env.api.raw("GET", "/v1/assets/serve")).status).toBe(400);
    });
  });
}
