/**
 * Sending uploads as attachments: message type and attachment fields per kind, overrides, Echo's reply (the sandbox
 * reads every byte and rejects incomplete attachments), and the refusals (unknown or reused uploadID, edits).
 */
import { describe, expect, it } from "vitest";
import type { AssetEnv } from "./env.ts";
import { gif, jpeg, mp3, mp4, png, sha256, text, wav } from "./fixtures.ts";
import type { Attachment, Message } from "../../src/schema/wire.ts";
import { ECHO_ID, messagePath, waitFor } from "../kit/common.ts";
import { serveAsset, uploadBytes, type Upload } from "./kit.ts";

export function attachmentCases(env: AssetEnv) {
  describe("sending uploads as attachments", () => {
    interface Case {
      label: string;
      bytes: () => Uint8Array<ArrayBuffer>;
      fileName: string;
      attachment?: Record<string, unknown>;
      text?: string;
      messageType: string;
      expected: (up: Upload) => Partial<Attachment>;
    }
    const cases: Case[] = [
      {
        label: "a PNG → IMAGE, type img with its size",
        bytes: () => png(64, 48),
        fileName: "pic.png",
        messageType: "IMAGE",
        expected: (up) => ({
          type: "img",
          mimeType: "image/png",
          fileName: "pic.png",
          fileSize: up.fileSize,
          size: { width: 64, height: 48 },
        }),
      },
      {
        label: "a WAV with type voiceNote (4.2.x) → VOICE, isVoiceNote, duration",
        bytes: () => wav(1.5),
        fileName: "memo.wav",
        attachment: { type: "voiceNote" },
        messageType: "VOICE",
        expected: (up) => ({
          type: "audio",
          mimeType: "audio/wav",
          fileName: "memo.wav",
          fileSize: up.fileSize,
          duration: 1.5,
          isVoiceNote: true,
        }),
      },
      {
        label: "a WAV with type voice-note (5.0.0) → VOICE, isVoiceNote",
        bytes: () => wav(0.5),
        fileName: "memo5.wav",
        attachment: { type: "voice-note" },
        messageType: "VOICE",
        expected: (up) => ({
          type: "audio",
          mimeType: "audio/wav",
          fileName: "memo5.wav",
          fileSize: up.fileSize,
          duration: 0.5,
          isVoiceNote: true,
        }),
      },
      {
        label: "an MP3 without a type → AUDIO",
        bytes: () => mp3(100),
        fileName: "clip.mp3",
        messageType: "AUDIO",
        expected: (up) => ({
          type: "audio",
          mimeType: "audio/mpeg",
          fileName: "clip.mp3",
          fileSize: up.fileSize,
          duration: up.duration,
        }),
      },
      {
        label: "an MP4 → VIDEO, with duration and size given as overrides",
        bytes: () => mp4(8192),
        fileName: "movie.mp4",
        attachment: { duration: 12.5, size: { width: 1920, height: 1080 } },
        messageType: "VIDEO",
        expected: (up) => ({
          type: "video",
          mimeType: "video/mp4",
          fileName: "movie.mp4",
          fileSize: up.fileSize,
          duration: 12.5,
          size: { width: 1920, height: 1080 },
        }),
      },
      {
        label: "a text file → FILE, type unknown",
        bytes: () => text("minutes of the meeting\n"),
        fileName: "minutes.txt",
        messageType: "FILE",
        expected: (up) => ({ type: "unknown", mimeType: "text/plain", fileName: "minutes.txt", fileSize: up.fileSize }),
      },
      {
        label: "a GIF with type gif → IMAGE, isGif",
        bytes: () => gif(40, 30),
        fileName: "funny.gif",
        attachment: { type: "gif" },
        messageType: "IMAGE",
        expected: (up) => ({
          type: "img",
          mimeType: "image/gif",
          fileName: "funny.gif",
          fileSize: up.fileSize,
          size: { width: 40, height: 30 },
          isGif: true,
        }),
      },
      {
        label: "a PNG with type sticker → STICKER, isSticker",
        bytes: () => png(128, 128),
        fileName: "sticker.png",
        attachment: { type: "sticker" },
        messageType: "STICKER",
        expected: (up) => ({
          type: "img",
          mimeType: "image/png",
          fileName: "sticker.png",
          fileSize: up.fileSize,
          size: { width: 128, height: 128 },
          isSticker: true,
        }),
      },
      {
        label: "a PNG with type file (5.0.0) → FILE, type unknown",
        bytes: () => png(5, 5),
        fileName: "as-file.png",
        attachment: { type: "file" },
        messageType: "FILE",
        expected: (up) => ({
          type: "unknown",
          mimeType: "image/png",
          fileName: "as-file.png",
          fileSize: up.fileSize,
          size: { width: 5, height: 5 },
        }),
      },
      {
        label: "overrides: fileName, mimeType, size and duration replace what was detected",
        bytes: () => png(64, 48),
        fileName: "orig.png",
        attachment: { fileName: "renamed.webp", mimeType: "image/webp", size: { width: 10, height: 20 }, duration: 3 },
        messageType: "IMAGE",
        expected: (up) => ({
          type: "img",
          mimeType: "image/webp",
          fileName: "renamed.webp",
          fileSize: up.fileSize,
          size: { width: 10, height: 20 },
          duration: 3,
        }),
      },
      {
        label: "with a caption: text and attachment",
        bytes: () => jpeg(320, 240),
        fileName: "captioned.jpg",
        text: "look at this",
        messageType: "IMAGE",
        expected: (up) => ({
          type: "img",
          mimeType: "image/jpeg",
          fileName: "captioned.jpg",
          fileSize: up.fileSize,
          size: { width: 320, height: 240 },
        }),
      },
    ];

    for (const c of cases)
      it(c.label, async () => {
        const bytes = c.bytes();
        const up = await uploadBytes(env.api, bytes, c.fileName);
        const sent = await env.api.postMessage(env.echo.id, {
          ...(c.text ? { text: c.text } : {}),
          attachment: { uploadID: up.uploadID, ...c.attachment },
        });
        expect(sent.status, sent.text).toBe(200);
        expect(sent.body).toEqual({ chatID: env.echo.id, pendingMessageID: expect.any(String) });
        const id = sent.body.pendingMessageID;
        const m = await env.api.settled(env.echo.id, id);
        const expected: Attachment = {
          id: `mxc://inboxd/${up.uploadID}`,
          srcURL: up.srcURL,
          ...c.expected(up),
        } as Attachment;
        expect(m).toMatchObject({
          id,
          chatID: env.echo.id,
          type: c.messageType,
          isSender: true,
          sendStatus: { status: "SUCCESS" },
        });
        if (c.text) expect(m.text).toBe(c.text);
        else expect(m.text).toBeUndefined();
        expect(m.attachments).toEqual([expected]);
        // the message list shows the same
        const listed = (await env.api.recent(env.echo.id)).find((x) => x.id === id);
        expect(listed?.attachments).toEqual([expected]);
        // the network got every byte: Echo answers (the sandbox rejects incomplete attachments)
        const echoText = c.text ? `Echo: ${c.text}` : `Echo: [${expected.fileName}]`;
        const reply = await waitFor(
          `Echo's reply to ${id}`,
          async () =>
            (await env.api.recent(env.echo.id)).find((x) => x.senderID === ECHO_ID && x.linkedMessageID === id),
          10_000,
        );
        expect(reply.text).toBe(echoText);
        // the attachment's id and srcURL serve the uploaded bytes
        for (const url of [expected.id!, expected.srcURL!]) {
          const r = await serveAsset(env.api, url);
          expect(r.status, url).toBe(200);
          expect(sha256(r.bytes), url).toBe(sha256(bytes));
        }
      });

    it("a sent image is found by message search with mediaTypes=image", async () => {
      const up = await uploadBytes(env.api, png(9, 9), "searchable.png");
      const sent = await env.api.postMessage(env.quiet.id, { attachment: { uploadID: up.uploadID } });
      const id = sent.body.pendingMessageID;
      await env.api.settled(env.quiet.id, id);
      const found = await env.api.ok<{ items: Message[] }>(
        "GET",
        `/v1/messages/search?mediaTypes=image&chatIDs=${encodeURIComponent(env.quiet.id)}&limit=50`,
      );
      expect(found.items.map((m) => m.id)).toContain(id);
    });

    it("422 for an unknown uploadID", async () => {
      const r = await env.api.postMessage(env.quiet.id, { attachment: { uploadID: "doesnotexist0000" } });
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({
        code: "UNPROCESSABLE_ENTITY",
        details: { issues: [{ path: ["body", "attachment", "uploadID"] }] },
      });
    });

    it("422 when the same uploadID is sent a second time", async () => {
      const up = await uploadBytes(env.api, text("once"), "once.txt");
      expect((await env.api.postMessage(env.quiet.id, { attachment: { uploadID: up.uploadID } })).status).toBe(200);
      const again = await env.api.postMessage(env.quiet.id, { attachment: { uploadID: up.uploadID } });
      expect(again.status).toBe(422);
      expect(again.body).toMatchObject({ code: "UNPROCESSABLE_ENTITY" });
    });

    it("the same uploadID sent twice at once: exactly one send succeeds", async () => {
      const up = await uploadBytes(env.api, text("race"), "race.txt");
      const results = await Promise.all(
        [1, 2, 3].map(() => env.api.postMessage(env.quiet.id, { attachment: { uploadID: up.uploadID } })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 422, 422]);
    });

    it("an uploadID of a downloaded network file is not an upload: 422", async () => {
      const page = await env.api.ok<{ items: Message[] }>("GET", "/v1/messages/search?mediaTypes=file&limit=20");
      const media = page.items
        .flatMap((m) => m.attachments ?? [])
        .find((a) => a.id?.startsWith("mxc://sandbox.invalid/") && (a.fileSize ?? 0) < 2_000_000)!;
      await env.api.ok("POST", "/v1/assets/download", { url: media.id });
      const served = await serveAsset(env.api, media.id!, { range: "bytes=0-0" });
      expect(served.status).toBe(206);
      // find the local id: download again gives the srcURL; its id is the local asset
      const { srcURL } = await env.api.ok<{ srcURL: string }>("POST", "/v1/assets/download", { url: media.id });
      const localID = /inboxd\/([a-z0-9]+)$/.exec(srcURL)?.[1] ?? /assets\/([a-z0-9]+)\//.exec(srcURL)?.[1];
      expect(localID).toBeDefined();
      expect((await env.api.postMessage(env.quiet.id, { attachment: { uploadID: localID } })).status).toBe(422);
    });

    it("400 for an invalid attachment: empty uploadID, unknown type, negative duration, bad mimeType", async () => {
      const up = await uploadBytes(env.api, text("v"), "v.txt");
      for (const attachment of [
        { uploadID: "" },
        { uploadID: up.uploadID, type: "hologram" },
        { uploadID: up.uploadID, duration: -1 },
        { uploadID: up.uploadID, mimeType: "nope" },
        {},
      ]) {
        const r = await env.api.postMessage(env.quiet.id, { attachment });
        expect(r.status, JSON.stringify(attachment)).toBe(400);
      }
      // the refusals did not use the upload up
      expect((await env.api.postMessage(env.quiet.id, { attachment: { uploadID: up.uploadID } })).status).toBe(200);
    });

    it("PUT edit of a message with an attachment → 422; the message is unchanged", async () => {
      const up = await uploadBytes(env.api, png(3, 3), "noedit.png");
      const id = (await env.api.postMessage(env.quiet.id, { text: "caption", attachment: { uploadID: up.uploadID } }))
        .body.pendingMessageID;
      await env.api.settled(env.quiet.id, id);
      const r = await env.api.raw("PUT", messagePath(env.quiet.id, id), { json: { text: "edited" } });
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({ code: "UNPROCESSABLE_ENTITY" });
      expect((await env.api.message(env.quiet.id, id)).text).toBe("caption");
    });

    it("a read-only token cannot send", async () => {
      const up = await uploadBytes(env.api, text("ro"), "ro.txt");
      expect((await env.ro.postMessage(env.quiet.id, { attachment: { uploadID: up.uploadID } })).status).toBe(403);
      expect((await env.api.postMessage(env.quiet.id, { attachment: { uploadID: up.uploadID } })).status).toBe(200);
    });
  });
}
