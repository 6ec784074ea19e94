/**
 * Labels, and the newer chat/message/account fields (issue 10): /v1/labels and chats' `labelIDs` (raw HTTP: the
 * pinned SDKs have no labels), PATCH /v1/chats/{id} `imgURL`, `messageExpirySeconds` (both given to the network,
 * issue 17), `draft.attachments`, `isMuted` + `mutedUntil`, DELETE …/messages/{id}?forEveryone=, and the account and
 * user fields newer clients read. (A network without a picture or timer: src/services/chats.test.ts.)
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { gif, jpeg, png, text } from "../assets/fixtures.ts";
import type { Upload } from "../assets/kit.ts";
import { expectError } from "./assert.ts";
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, messagePath, waitFor } from "../kit/common.ts";
import {
  allChats,
  contactsOf,
  echoChat,
  echoReply,
  newGroup,
  ok,
  qs,
  raw,
  sendSettled,
  walk,
  type Env,
} from "./kit.ts";

interface Label {
  id: string;
  name: string;
}
interface DraftAttachment {
  id: string;
  type: "file" | "gif" | "recorded_audio";
  uploadID: string;
  srcURL: string;
  mimeType?: string;
  fileName?: string;
  filePath?: string;
  fileSize?: number;
  size?: { width: number; height: number };
}
type LabelledChat = Omit<Chat, "draft"> & {
  labelIDs: string[];
  imgURL?: string;
  messageExpirySeconds?: number;
  mutedUntil?: string;
  draft?: { text: string; attachments?: Record<string, DraftAttachment> } | null;
};

const unique = () => randomBytes(4).toString("hex");
const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });

export function chatLabelScenarios(env: Env) {
  const createLabel = (name: string) => ok<Label>(env, "/v1/labels", { method: "POST", json: { name } });
  const labels = () => ok<Label[]>(env, "/v1/labels");
  const chat = (id: string) => ok<LabelledChat>(env, chatPath(id));
  const patch = (id: string, json: unknown) => raw<LabelledChat>(env, chatPath(id), { method: "PATCH", json });
  /** PATCHes `{[field]: null}`: the field is gone from the answer and from the chat. */
  const expectCleared = async (id: string, field: "imgURL" | "messageExpirySeconds") => {
    const res = await patch(id, { [field]: null });
    expect(res.status).toBe(200);
    expect(res.body[field]).toBeUndefined();
    expect((await chat(id))[field]).toBeUndefined();
  };
  const labelled = async (labelID: string) =>
    (await walk<LabelledChat>(env, "/v1/chats/search", { labelID, limit: 200 })).items;
  const upload = (bytes: Uint8Array, fileName: string, mimeType: string) =>
    ok<Upload>(env, "/v1/assets/upload/base64", {
      method: "POST",
      json: { content: Buffer.from(bytes).toString("base64"), fileName, mimeType },
    });
  /** The newest eventID (GET /v1/events without `after` reads from now): read a change's events after it. */
  const latestEvent = async () => (await ok<{ latestEventID: number }>(env, "/v1/events")).latestEventID;
  /** The chat as the last chat.upserted event after `after` carries it. */
  const upserted = async (chatID: string, after: number) => {
    const page = await ok<{ items: { type: string; entries?: LabelledChat[] }[] }>(
      env,
      `/v1/events${qs({ after, chatIDs: chatID, limit: 1000 })}`,
    );
    return page.items.filter((e) => e.type === "chat.upserted").at(-1)?.entries?.[0];
  };
  /** What Echo answers a command (`!history`, `!settings`) with in its chat: the JSON after the command's name. */
  async function echoReport<T>(chatID: string, command: "history" | "settings"): Promise<T> {
    const probe = await sendSettled(env, chatID, `!${command}`);
    const reply = await echoReply(env, chatID, probe.id);
    const report = new RegExp(`^Echo: ${command} ([\\[{].*)$`, "s").exec(reply.text ?? "");
    expect(report, reply.text).toBeTruthy();
    return JSON.parse(report![1]) as T;
  }
  /** What the sandbox network has of a chat's settings, as Echo reports them for its own chat. */
  const networkSettings = (chatID: string) =>
    echoReport<{ picture?: { fileName?: string; mimeType?: string; bytes: number }; messageExpirySeconds?: number }>(
      chatID,
      "settings",
    );

  describe("labels", () => {
    it("creates labels (names trimmed) and lists them sorted by name, numbers in numeric order", async () => {
      const tag = unique();
      const made = [];
      for (const name of [`Zeta ${tag}`, `  alpha ${tag}  `, `Label 10 ${tag}`, `Label 2 ${tag}`])
        made.push(await createLabel(name));
      expect(made.map((l) => l.name)).toEqual([`Zeta ${tag}`, `alpha ${tag}`, `Label 10 ${tag}`, `Label 2 ${tag}`]);
      expect(new Set(made.map((l) => l.id)).size).toBe(4);
      const listed = await labels();
      const mine = listed.filter((l) => l.name.endsWith(tag));
      expect(mine.map((l) => l.name)).toEqual([`alpha ${tag}`, `Label 2 ${tag}`, `Label 10 ${tag}`, `Zeta ${tag}`]);
      for (const l of made) expect(listed).toContainEqual(l);
      for (let i = 1; i < listed.length; i++)
        expect(
          collator.compare(listed[i - 1].name, listed[i].name),
          `${listed[i - 1].name} before ${listed[i].name}`,
        ).toBeLessThanOrEqual(0);
    });

    it("refuses empty, blank, multi-line, over-long and non-string names with 400 naming body.name", async () => {
      const before = (await labels()).length;
      for (const json of [
        {},
        { name: "" },
        { name: "   " },
        { name: 5 },
        { name: "two\nlines" },
        { name: "tab\there" },
        { name: "x".repeat(1025) },
      ])
        expectError(await raw(env, "/v1/labels", { method: "POST", json }), 400, ["body", "name"]);
      expect((await labels()).length).toBe(before);
    });

    it("refuses a name already taken, in any case, with 409 naming the existing label; the list keeps one", async () => {
      const name = `Work ${unique()}`;
      const first = await createLabel(name);
      const again = await raw(env, "/v1/labels", { method: "POST", json: { name: ` ${name.toUpperCase()} ` } });
      expectError(again, 409);
      expect(again.headers.get("x-should-retry")).toBe("false");
      expect((again.body as { details?: { labelID?: string } }).details?.labelID).toBe(first.id);
      expect((await labels()).filter((l) => l.name.toLowerCase() === name.toLowerCase())).toEqual([first]);
    });

    it("loses no creation when many requests race: distinct names all land, one name lands once", async () => {
      const tag = unique();
      const distinct = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          raw<Label>(env, "/v1/labels", { method: "POST", json: { name: `race ${i} ${tag}` } }),
        ),
      );
      expect(distinct.map((r) => r.status)).toEqual(Array(12).fill(200));
      const same = await Promise.all(
        Array.from({ length: 8 }, () => raw(env, "/v1/labels", { method: "POST", json: { name: `same ${tag}` } })),
      );
      const won = same.filter((r) => r.status === 200);
      expect(won.length).toBe(1);
      for (const lost of same.filter((r) => r.status !== 200)) {
        expectError(lost, 409);
        expect(lost.body.details.labelID).toBe(won[0].body.id);
      }
      const listed = (await labels()).filter((l) => l.name.endsWith(tag));
      expect(listed.length).toBe(13);
      for (const r of distinct) expect(listed).toContainEqual(r.body);
    });

    it("deletes a label (204, then 404) and takes it off every chat that had it", async () => {
      const [a, b] = [await createLabel(`doomed ${unique()}`), await createLabel(`kept ${unique()}`)];
      const [g1, g2] = [await newGroup(env), await newGroup(env)];
      expect((await patch(g1.id, { labelIDs: [a.id, b.id] })).status).toBe(200);
      expect((await patch(g2.id, { labelIDs: [a.id] })).status).toBe(200);
      const gone = await raw(env, `/v1/labels/${a.id}`, { method: "DELETE" });
      expect(gone.status).toBe(204);
      expect(gone.text).toBe("");
      expect((await chat(g1.id)).labelIDs).toEqual([b.id]);
      expect((await chat(g2.id)).labelIDs).toEqual([]);
      expect((await labels()).map((l) => l.id)).not.toContain(a.id);
      expectError(await raw(env, `/v1/labels/${a.id}`, { method: "DELETE" }), 404);
      expectError(await raw(env, `/v1/chats/search${qs({ labelID: a.id })}`), 422, ["query", "labelID"]);
      expectError(await patch(g2.id, { labelIDs: [a.id] }), 422, ["body", "labelIDs", 0]);
    });

    it("needs a token for every label operation, and the write scope to create or delete", async () => {
      const label = await createLabel(`scoped ${unique()}`);
      expectError(await raw(env, "/v1/labels", { token: null }), 401);
      expectError(await raw(env, "/v1/labels", { method: "POST", json: { name: `x ${unique()}` }, token: null }), 401);
      expect((await raw(env, "/v1/labels", { token: env.ro })).status).toBe(200);
      expectError(
        await raw(env, "/v1/labels", { method: "POST", json: { name: `ro ${unique()}` }, token: env.ro }),
        403,
      );
      expectError(await raw(env, `/v1/labels/${label.id}`, { method: "DELETE", token: env.ro }), 403);
      expect((await labels()).map((l) => l.id)).toContain(label.id);
    });
  });

  describe("chats: labelIDs", () => {
    it("sets, shows, filters by and clears a chat's labels; other fields leave them alone", async () => {
      const [work, home, empty] = [
        await createLabel(`work ${unique()}`),
        await createLabel(`home ${unique()}`),
        await createLabel(`none ${unique()}`),
      ];
      const group = await newGroup(env);
      const other = await newGroup(env);
      const set = await patch(group.id, { labelIDs: [work.id, home.id, work.id] });
      expect(set.status).toBe(200);
      expect(set.body.labelIDs).toEqual([work.id, home.id]);
      expect((await chat(group.id)).labelIDs).toEqual([work.id, home.id]);
      expect((await patch(other.id, { labelIDs: [home.id] })).body.labelIDs).toEqual([home.id]);
      // Every chat in the lists carries labelIDs; this one with its labels.
      const listed = (await allChats(env)) as LabelledChat[];
      for (const c of listed) expect(Array.isArray(c.labelIDs), c.id).toBe(true);
      expect(listed.find((c) => c.id === group.id)?.labelIDs).toEqual([work.id, home.id]);

      expect((await labelled(work.id)).map((c) => c.id)).toEqual([group.id]);
      expect((await labelled(home.id)).map((c) => c.id).sort()).toEqual([group.id, other.id].sort());
      expect(await labelled(empty.id)).toEqual([]);
      // The filter combines with the others.
      expect(
        (
          await walk<Chat>(env, "/v1/chats/search", {
            labelID: home.id,
            query: group.title,
            scope: "titles",
            limit: 200,
          })
        ).items.map((c) => c.id),
      ).toEqual([group.id]);

      expect((await patch(group.id, { isPinned: true })).body.labelIDs).toEqual([work.id, home.id]);
      expect(
        (await env.sdk.chats.update(group.id, { title: `relabelled ${unique()}` })) as unknown as LabelledChat,
      ).toMatchObject({ labelIDs: [work.id, home.id] });
      expect((await patch(group.id, { labelIDs: [] })).body.labelIDs).toEqual([]);
      expect(await labelled(work.id)).toEqual([]);
    });

    it("refuses unknown label IDs with 422 naming the item, and ill-typed labelIDs with 400, changing nothing", async () => {
      const label = await createLabel(`valid ${unique()}`);
      const group = await newGroup(env);
      await patch(group.id, { labelIDs: [label.id] });
      const unknown = await patch(group.id, { labelIDs: [label.id, "lbl_nosuchlabel"], isPinned: true });
      expectError(unknown, 422, ["body", "labelIDs", 1]);
      expect((unknown.body as unknown as { message: string }).message).toContain("lbl_nosuchlabel");
      for (const json of [{ labelIDs: label.id }, { labelIDs: [5] }, { labelIDs: [""] }, { labelIDs: null }])
        expectError(await patch(group.id, json), 400, ["body", "labelIDs"]);
      const after = await chat(group.id);
      expect(after.labelIDs).toEqual([label.id]);
      expect(after.isPinned).toBe(false);
      expectError(await raw(env, `/v1/chats/search${qs({ labelID: "lbl_nosuchlabel" })}`), 422, ["query", "labelID"]);
    });

    it("never leaves a deleted label on a chat, however the PATCHes and the DELETE interleave", async () => {
      const label = await createLabel(`contested ${unique()}`);
      const groups = await Promise.all(Array.from({ length: 6 }, () => newGroup(env)));
      const [patches, deletion] = await Promise.all([
        Promise.all(groups.map((g) => patch(g.id, { labelIDs: [label.id] }))),
        raw(env, `/v1/labels/${label.id}`, { method: "DELETE" }),
      ]);
      expect(deletion.status).toBe(204);
      for (const p of patches) expect([200, 422]).toContain(p.status);
      for (const g of groups) expect((await chat(g.id)).labelIDs).toEqual([]);
    });
  });

  describe("chats: messageExpirySeconds", () => {
    it("sets (SDK 5 chats.update), shows (GET and chat.upserted), zeroes and clears the timer", async () => {
      const group = await newGroup(env);
      const after = await latestEvent();
      const set = (await env.sdk.chats.update(group.id, { messageExpirySeconds: 86_400 })) as unknown as LabelledChat;
      expect(set.messageExpirySeconds).toBe(86_400);
      expect((await chat(group.id)).messageExpirySeconds).toBe(86_400);
      expect((await upserted(group.id, after))?.messageExpirySeconds).toBe(86_400);
      expect((await patch(group.id, { messageExpirySeconds: 0 })).body.messageExpirySeconds).toBe(0);
      await expectCleared(group.id, "messageExpirySeconds");
    });

    it("gives the timer to the network (0 when cleared): Echo's chat reports what the sandbox has", async () => {
      const echo = await echoChat(env, env.accounts[0].accountID);
      expect((await patch(echo.id, { messageExpirySeconds: 3600 })).status).toBe(200);
      expect((await networkSettings(echo.id)).messageExpirySeconds).toBe(3600);
      await expectCleared(echo.id, "messageExpirySeconds");
      expect((await networkSettings(echo.id)).messageExpirySeconds).toBe(0);
    });

    it("refuses negative, fractional, non-numeric and over-large timers with 400", async () => {
      const group = await newGroup(env);
      for (const messageExpirySeconds of [-1, 1.5, "60", 2 ** 31, true])
        expectError(await patch(group.id, { messageExpirySeconds }), 400, ["body", "messageExpirySeconds"]);
      expect((await chat(group.id)).messageExpirySeconds).toBeUndefined();
    });
  });

  describe("chats: imgURL", () => {
    it("takes an uploaded image by srcURL or uploadID, shows it as imgURL (GET, chat.upserted) that /v1/assets/serve serves, and removes it with null", async () => {
      const group = await newGroup(env);
      const picture = png(3, 2);
      const first = await upload(picture, "avatar.png", "image/png");
      const after = await latestEvent();
      const set = (await env.sdk.chats.update(group.id, { imgURL: first.srcURL })) as unknown as LabelledChat;
      expect(set.imgURL).toBe(first.srcURL);
      expect((await chat(group.id)).imgURL).toBe(first.srcURL);
      expect((await upserted(group.id, after))?.imgURL).toBe(first.srcURL);
      const served = await fetch(`${env.url}/v1/assets/serve${qs({ url: set.imgURL! })}`, {
        headers: { authorization: `Bearer ${env.rw}` },
      });
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toMatch(/^image\/png/);
      expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(picture))).toBe(true);

      const second = await upload(png(4, 4), "other.png", "image/png");
      expect((await patch(group.id, { imgURL: second.uploadID })).body.imgURL).toBe(second.srcURL);
      if (second.srcURL.startsWith("file://")) {
        // The daemon also takes the file's path, as the official clients send it.
        const third = await upload(png(5, 5), "path.png", "image/png");
        expect(
          (await patch(group.id, { imgURL: decodeURIComponent(new URL(third.srcURL).pathname) })).body.imgURL,
        ).toBe(third.srcURL);
      }
      await expectCleared(group.id, "imgURL");
    });

    it("gives the picture's bytes to the network, and its removal: Echo's chat reports what the sandbox has", async () => {
      const echo = await echoChat(env, env.accounts[0].accountID);
      const picture = await upload(png(6, 4), "echo.png", "image/png");
      expect((await patch(echo.id, { imgURL: picture.uploadID })).body.imgURL).toBe(picture.srcURL);
      expect((await networkSettings(echo.id)).picture).toEqual({
        fileName: "echo.png",
        mimeType: "image/png",
        bytes: picture.fileSize,
      });
      await expectCleared(echo.id, "imgURL");
      expect((await networkSettings(echo.id)).picture).toBeUndefined();
    });

    it("refuses what is not a local image: 422 naming body.imgURL (400 when empty or not a string)", async () => {
      const group = await newGroup(env);
      const notImage = await upload(text("just words"), "notes.txt", "text/plain");
      for (const imgURL of [
        notImage.uploadID,
        notImage.srcURL,
        "zzzznosuchupload",
        "https://example.com/a.png",
        "data:image/png;base64,iVBORw0KGgo=",
        "/etc/passwd",
        "file:///etc/passwd",
        "mxc://sandbox.invalid/seed-img-10-x",
      ])
        expectError(await patch(group.id, { imgURL }), 422, ["body", "imgURL"]);
      for (const imgURL of ["", 42, { url: "x" }])
        expectError(await patch(group.id, { imgURL }), 400, ["body", "imgURL"]);
      expect((await chat(group.id)).imgURL).toBeUndefined();
    });
  });

  describe("chats: imgURL as a local file path", () => {
    /** The daemon reads local files; a Worker has no file system and says to upload first. */
    const expectWorkerRefusal = (res: Awaited<ReturnType<typeof patch>>) => {
      expectError(res, 422, ["body", "imgURL"]);
      expect((res.body as unknown as { message: string }).message).toMatch(/upload the image first/);
    };

    it("an absolute path or file:// URL of a PNG, JPEG or GIF (told by content, not extension): the daemon's picture, with its bytes on the network; the Worker's 422 says to upload first", async () => {
      const dir = mkdtempSync(join(tmpdir(), "inboxd-picture-"));
      try {
        const echo = await echoChat(env, env.accounts[0].accountID);
        const cases: [string, Uint8Array, string][] = [
          ["photo.png", png(7, 5), "image/png"],
          ["photo.jpg", jpeg(8, 6), "image/jpeg"],
          ["misnamed.txt", gif(3, 3), "image/gif"],
        ];
        for (const [name, bytes, mimeType] of cases) {
          const path = join(dir, name);
          writeFileSync(path, bytes);
          for (const imgURL of [path, pathToFileURL(path).href]) {
            const res = await patch(echo.id, { imgURL });
            if (env.name !== "node") {
              expectWorkerRefusal(res);
              continue;
            }
            expect(res.status, `${imgURL}: ${JSON.stringify(res.body)}`).toBe(200);
            expect(res.body.imgURL, imgURL).toMatch(/^file:\/\//);
            const served = await fetch(`${env.url}/v1/assets/serve${qs({ url: res.body.imgURL! })}`, {
              headers: { authorization: `Bearer ${env.rw}` },
            });
            expect(served.headers.get("content-type"), imgURL).toBe(mimeType);
            expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(bytes)), imgURL).toBe(true);
            expect(await networkSettings(echo.id), imgURL).toMatchObject({
              picture: { fileName: name, mimeType, bytes: bytes.length },
            });
          }
        }
        await expectCleared(echo.id, "imgURL");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("a link, a directory, a FIFO, a missing, relative, oversize or non-image file: a 422 naming the rule it broke, and nothing reaches the network", async () => {
      const dir = mkdtempSync(join(tmpdir(), "inboxd-picture-"));
      try {
        const echo = await echoChat(env, env.accounts[0].accountID);
        const image = join(dir, "real.png");
        writeFileSync(image, png(4, 4));
        symlinkSync(image, join(dir, "link.png"));
        mkdirSync(join(dir, "folder.png"));
        execFileSync("mkfifo", [join(dir, "fifo.png")]);
        writeFileSync(join(dir, "words.png"), "not an image at all");
        // A PNG header followed by padding past the limit: an image by its first bytes, but too large.
        writeFileSync(join(dir, "huge.png"), Buffer.concat([Buffer.from(png(2, 2)), Buffer.alloc(10 * 1024 * 1024)]));
        const refusals: [string, RegExp][] = [
          [join(dir, "link.png"), /is a symbolic link/],
          [join(dir, "folder.png"), /directory|not a regular file/],
          [join(dir, "fifo.png"), /not a regular file/],
          [join(dir, "missing.png"), /does not exist/],
          [join(dir, "words.png"), /not a PNG, JPEG, GIF or WebP image/],
          [join(dir, "huge.png"), /larger than the 10485760-byte limit/],
        ];
        for (const [imgURL, why] of refusals) {
          const res = await patch(echo.id, { imgURL });
          if (env.name !== "node") {
            expectWorkerRefusal(res);
            continue;
          }
          expectError(res, 422, ["body", "imgURL"]);
          expect((res.body as unknown as { message: string }).message, imgURL).toMatch(why);
        }
        const relative = await patch(echo.id, { imgURL: "real.png" });
        expectError(relative, 422, ["body", "imgURL"]);
        expect((relative.body as unknown as { message: string }).message).toMatch(/absolute path/);
        expect((await chat(echo.id)).imgURL).toBeUndefined();
        expect((await networkSettings(echo.id)).picture).toBeUndefined();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe("chats: draft attachments", () => {
    const draftOf = async (id: string) => (await chat(id)).draft;

    it("sets a draft with attachments (SDK 5), shows them (GET, chat.upserted), keeps them sendable, and clears them with null", async () => {
      const group = await newGroup(env);
      const image = await upload(png(3, 2), "sketch.png", "image/png");
      const notes = await upload(text("draft notes"), "notes.txt", "text/plain");
      const after = await latestEvent();
      const set = await env.sdk.chats.update(group.id, {
        draft: {
          text: "see attached",
          attachments: {
            first: { uploadID: image.uploadID },
            second: { uploadID: notes.uploadID, id: "notes", fileName: "renamed.txt", type: "voice-note" },
          },
        },
      });
      const shown = (set as unknown as LabelledChat).draft!;
      const filePath = (u: Upload) =>
        u.srcURL.startsWith("file://") ? { filePath: decodeURIComponent(new URL(u.srcURL).pathname) } : {};
      expect(shown).toEqual({
        text: "see attached",
        attachments: {
          first: {
            id: "first",
            type: "file",
            uploadID: image.uploadID,
            srcURL: image.srcURL,
            mimeType: "image/png",
            fileName: "sketch.png",
            fileSize: image.fileSize,
            size: { width: 3, height: 2 },
            ...filePath(image),
          },
          notes: {
            id: "notes",
            type: "recorded_audio",
            uploadID: notes.uploadID,
            srcURL: notes.srcURL,
            mimeType: "text/plain",
            fileName: "renamed.txt",
            fileSize: notes.fileSize,
            ...filePath(notes),
          },
        },
      });
      expect(await draftOf(group.id)).toEqual(shown);
      expect((await env.sdk.chats.retrieve(group.id)).draft?.attachments?.notes?.type).toBe("recorded_audio");
      expect((await upserted(group.id, after))?.draft).toEqual(shown);

      // The draft keeps its uploads without using them up: one can still be sent.
      const sent = await raw(env, `${chatPath(group.id)}/messages`, {
        method: "POST",
        json: { attachment: { uploadID: image.uploadID } },
      });
      expect(sent.status).toBe(200);
      expect(await draftOf(group.id)).toEqual(shown);

      const cleared = await env.sdk.chats.update(group.id, { draft: null });
      expect(cleared.draft ?? null).toBeNull();
      expect(await draftOf(group.id)).toBeNull();
    });

    it("a draft of attachments alone is a draft: another needs draft=null (or an empty draft) first", async () => {
      const group = await newGroup(env);
      const image = await upload(png(2, 2), "only.png", "image/png");
      expect(
        (await patch(group.id, { draft: { text: "", attachments: { a: { uploadID: image.uploadID } } } })).status,
      ).toBe(200);
      expectError(await patch(group.id, { draft: { text: "more" } }), 422, ["body", "draft"]);
      expect((await draftOf(group.id))?.attachments?.a?.uploadID).toBe(image.uploadID);
      // An empty draft is always taken, and is no draft.
      expect((await patch(group.id, { draft: { text: "", attachments: {} } })).body.draft).toBeNull();
      expect(await draftOf(group.id)).toBeNull();
    });

    it("refuses unknown uploads with 422 naming the attachment, ill-formed attachments with 400, and applies nothing", async () => {
      const group = await newGroup(env);
      const image = await upload(png(2, 2), "fine.png", "image/png");
      const unknown = await patch(group.id, {
        title: "Not applied",
        draft: { text: "x", attachments: { ok: { uploadID: image.uploadID }, bad: { uploadID: "nosuchupload" } } },
      });
      expectError(unknown, 422, ["body", "draft", "attachments", "bad", "uploadID"]);
      for (const attachments of [
        { a: {} },
        { a: { uploadID: 5 } },
        { a: { uploadID: "" } },
        { a: { uploadID: image.uploadID, type: "hologram" } },
        { "": { uploadID: image.uploadID } },
        "x",
      ])
        expectError(await patch(group.id, { draft: { text: "x", attachments } }), 400, [
          "body",
          "draft",
          "attachments",
        ]);
      expectError(
        await patch(group.id, {
          draft: {
            text: "x",
            attachments: { a: { uploadID: image.uploadID, id: "b" }, b: { uploadID: image.uploadID } },
          },
        }),
        400,
        ["body", "draft", "attachments"],
      );
      const after = await chat(group.id);
      expect(after.draft).toBeNull();
      expect(after.title).toBe(group.title);
    });
  });

  describe("chats: isMuted with mutedUntil", () => {
    it("mutes until a time, shows it, and unmutes on its own when it passes", async () => {
      const group = await newGroup(env);
      const until = new Date(Date.now() + 1500).toISOString();
      const muted = await patch(group.id, { isMuted: true, mutedUntil: until });
      expect(muted.status).toBe(200);
      expect(muted.body.isMuted).toBe(true);
      expect(muted.body.mutedUntil).toBe(until);
      expect(
        (await walk<Chat>(env, "/v1/chats/search", { includeMuted: false, limit: 200 })).items.map((c) => c.id),
      ).not.toContain(group.id);
      const unmuted = await waitFor(
        "the timed mute to end",
        async () => {
          const c = await chat(group.id);
          return c.isMuted ? undefined : c;
        },
        10_000,
      );
      expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(until));
      expect(unmuted.mutedUntil).toBeUndefined();
      expect(
        (await walk<Chat>(env, "/v1/chats/search", { includeMuted: false, limit: 200 })).items.map((c) => c.id),
      ).toContain(group.id);
    });

    it("mutedUntil alone mutes; isMuted true alone makes it endless; mutedUntil null keeps the mute without end; isMuted false clears both", async () => {
      const group = await newGroup(env);
      const later = new Date(Date.now() + 3_600_000).toISOString();
      expect((await patch(group.id, { mutedUntil: later })).body).toMatchObject({ isMuted: true, mutedUntil: later });
      const endless = await patch(group.id, { isMuted: true });
      expect(endless.body.isMuted).toBe(true);
      expect(endless.body.mutedUntil).toBeUndefined();
      await patch(group.id, { mutedUntil: later });
      const kept = await patch(group.id, { mutedUntil: null });
      expect(kept.body.isMuted).toBe(true);
      expect(kept.body.mutedUntil).toBeUndefined();
      await patch(group.id, { mutedUntil: later });
      const off = await patch(group.id, { isMuted: false });
      expect(off.body.isMuted).toBe(false);
      expect(off.body.mutedUntil).toBeUndefined();
      // Dropping the end time of an unmuted chat leaves it unmuted.
      expect((await patch(group.id, { mutedUntil: null })).body.isMuted).toBe(false);
    });

    it("refuses a past, malformed or contradictory mutedUntil with 400, changing nothing", async () => {
      const group = await newGroup(env);
      const future = new Date(Date.now() + 3_600_000).toISOString();
      for (const json of [
        { isMuted: true, mutedUntil: new Date(Date.now() - 60_000).toISOString() },
        { mutedUntil: "tomorrow" },
        { mutedUntil: 1_900_000_000_000 },
        { mutedUntil: "10000-01-01T00:00:00Z" },
        { isMuted: false, mutedUntil: future },
      ])
        expectError(await patch(group.id, json), 400, ["body", "mutedUntil"]);
      const after = await chat(group.id);
      expect(after.isMuted).toBe(false);
      expect(after.mutedUntil).toBeUndefined();
    });
  });

  describe("messages: delete forEveryone", () => {
    /** What Echo's side of the chat still has, as Echo reports it when sent `!history`. */
    const echoHas = (chatID: string) => echoReport<string[]>(chatID, "history");

    it("forEveryone=false deletes only here: the other party keeps it; the default deletes it there too", async () => {
      const echo = await echoChat(env, env.accounts[0].accountID);
      const [local, everywhere, explicit] = [`only-here-${unique()}`, `everywhere-${unique()}`, `explicit-${unique()}`];
      const m1 = await sendSettled(env, echo.id, local);
      const m2 = await sendSettled(env, echo.id, everywhere);
      const m3 = await sendSettled(env, echo.id, explicit);
      expect(await echoHas(echo.id)).toEqual(expect.arrayContaining([local, everywhere, explicit]));

      const here = await raw(env, `${messagePath(echo.id, m1.id)}${qs({ forEveryone: false })}`, { method: "DELETE" });
      expect(here.status).toBe(204);
      expect(await env.sdk.messages.delete(m2.id, { chatID: echo.id })).toBeFalsy();
      expect(
        (await raw(env, `${messagePath(echo.id, m3.id)}${qs({ forEveryone: true })}`, { method: "DELETE" })).status,
      ).toBe(204);

      for (const m of [m1, m2, m3]) expectError(await raw(env, messagePath(echo.id, m.id)), 404);
      const page = await ok<Page<Message>>(env, `${chatPath(echo.id)}/messages`);
      for (const m of [m1, m2, m3]) expect(page.items.map((x) => x.id)).not.toContain(m.id);
      const has = await echoHas(echo.id);
      expect(has).toContain(local);
      expect(has).not.toContain(everywhere);
      expect(has).not.toContain(explicit);
    });

    it("SDK 5 messages.delete with forEveryone false deletes on this device only", async () => {
      const echo = await echoChat(env, env.accounts[0].accountID);
      const word = `sdk-local-${unique()}`;
      const m = await sendSettled(env, echo.id, word);
      await env.sdk.messages.delete(m.id, { chatID: echo.id, forEveryone: false });
      expectError(await raw(env, messagePath(echo.id, m.id)), 404);
      expect(await echoHas(echo.id)).toContain(word);
    });

    it("accepts only true or false: anything else is a 400 naming query.forEveryone, and the message stays", async () => {
      const group = await newGroup(env);
      const m = await sendSettled(env, group.id, `stays ${unique()}`);
      for (const value of ["yes", "1", "0", "TRUE", "False", ["true", "false"]])
        expectError(
          await raw(env, `${messagePath(group.id, m.id)}${qs({ forEveryone: value })}`, { method: "DELETE" }),
          400,
          ["query", "forEveryone"],
        );
      expect((await ok<Message>(env, messagePath(group.id, m.id))).id).toBe(m.id);
      // `forEveryone=` (empty) means unset: the default, for everyone.
      expect((await raw(env, `${messagePath(group.id, m.id)}?forEveryone=`, { method: "DELETE" })).status).toBe(204);
      expectError(await raw(env, messagePath(group.id, m.id)), 404);
    });
  });

  describe("accounts and users: the fields newer clients read", () => {
    it("accounts carry network, bridge, status, loginID and capabilities, the same in accounts and bridges", async () => {
      const accounts = await ok<Record<string, any>[]>(env, "/v1/accounts");
      // The seeded accounts; the bridge scenarios may have added others, in other states.
      const seeded = env.accounts.map((s) => accounts.find((a) => a.accountID === s.accountID)!);
      expect(seeded.every(Boolean)).toBe(true);
      for (const a of seeded) {
        expect(typeof a.network, a.accountID).toBe("string");
        expect(a.bridge).toMatchObject({ provider: "local", type: "sandbox" });
        expect(a.status).toBe("connected");
        expect(typeof a.loginID).toBe("string");
        expect(a.capabilities).toMatchObject({
          sendMessages: true,
          editMessages: true,
          deleteMessages: true,
          deleteMessagesForMe: true,
          reactions: true,
          createChats: true,
          chatPictures: true,
          messageExpiry: true,
        });
      }
      for (const a of accounts) {
        if (a.statusText !== undefined) expect(typeof a.statusText).toBe("string");
        for (const value of Object.values(a.capabilities ?? {})) expect(typeof value).toBe("boolean");
        expect(await ok(env, `/v1/accounts/${encodeURIComponent(a.accountID)}`)).toEqual(a);
      }
      const bridge = await ok<{ accounts: Record<string, any>[] }>(env, `/v1/bridges/${accounts[0].bridge.id}`);
      for (const a of bridge.accounts) expect(a).toEqual(accounts.find((x) => x.accountID === a.accountID));
    });

    it("every participant and contact says cannotMessage", async () => {
      const chats = (await ok<Page<Chat>>(env, "/v1/chats")).items;
      for (const c of [...chats, await ok<Chat>(env, chatPath(chats[0].id))])
        for (const p of c.participants.items)
          expect(typeof (p as { cannotMessage?: unknown }).cannotMessage, `${c.id} ${p.id}`).toBe("boolean");
      const contacts = await contactsOf(env, env.accounts[0].accountID);
      expect(contacts.length).toBeGreaterThan(0);
      for (const u of contacts) expect((u as { cannotMessage?: unknown }).cannotMessage, u.id).toBe(false);
      const found = await env.sdk.accounts.contacts.search(env.accounts[0].accountID, {
        query: contacts[0].fullName!.split(" ")[0],
      });
      for (const u of found.items) expect(typeof u.cannotMessage).toBe("boolean");
    });
  });
}
