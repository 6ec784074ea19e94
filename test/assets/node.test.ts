/**
 * The asset suite on the Node daemon, plus what only the daemon has: file:// srcURLs into <data dir>/assets (and
 * that they never reach any other file), chunk files on disk (nothing is left behind by refused or broken
 * uploads), and — on an in-process daemon whose limits the test controls — the upload size limit and the cleanup
 * of uploads never sent.
 */
import { mkdirSync, readFileSync, rmSync, symlinkSync, existsSync, writeFileSync } from "node:fs";
import { assetStorage } from "../../adapters/node/asset-storage.ts";
import { execFileSync, spawn } from "node:child_process";
import http from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNode, type NodeHarness } from "../harness/node.ts";
import { entries, listing, startTuned, type TunedDaemon } from "./daemon.ts";
import { MiB } from "./env.ts";
import { binaryBlob, png, sha256, text } from "./fixtures.ts";
import { randomToken, sleep } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { b64, multipartType, serveAsset, streamedUpload, uploadBytes, uploadForm, type Upload } from "./kit.ts";
import { assetSuite } from "./suite.ts";
import { call, connect } from "../mcp/kit.ts";

assetSuite<NodeHarness>({
  name: "node",
  start: (options) => startNode(options),
  srcURL: (server, id, fileName) => `file://${server.dataDir}/assets/${id}/${encodeURIComponent(fileName)}`,
  chunkFiles: (server) => listing(join(server.dataDir, "assets")),
});

/**
 * The listing of `dir` once it equals `expected`, or when the generous deadline (reached only when files are left
 * behind) passes: cleanup runs in the daemon after the client has its answer, and takes what it takes.
 */
async function listingBecomes(dir: string, expected: string[], timeoutMs = 20_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let now = listing(dir);
  while (now.join("\n") !== expected.join("\n") && Date.now() < deadline) {
    await sleep(50);
    now = listing(dir);
  }
  return now;
}

describe("node only: file:// URLs never reach other files", () => {
  let server: NodeHarness;
  let api: Api;
  let assetDir: string;
  let up: Upload;
  let token: string;
  const bytes = text("the only bytes a file:// URL may give");
  const secrets = () =>
    [
      readFileSync("/etc/passwd", "utf8").split("\n")[0],
      "SQLite format 3",
      readFileSync("/etc/hostname", "utf8").trim(),
    ].filter((s) => s.length > 3);

  beforeAll(async () => {
    token = randomToken("rw");
    server = await startNode({
      seed: { chats: 4, messages: 20, accounts: 1, seed: 2 },
      tokens: [{ token, scopes: ["read", "write"] }],
    });
    api = new Api(server.url, token);
    assetDir = join(server.dataDir, "assets");
    up = await uploadBytes(api, bytes, "safe.txt");
  });
  afterAll(() => server?.stop());

  it("the upload's own srcURL (and its file://localhost form) serves it", async () => {
    expect(up.srcURL).toBe(`file://${assetDir}/${up.uploadID}/safe.txt`);
    for (const url of [up.srcURL, up.srcURL.replace("file://", "file://localhost")]) {
      const r = await serveAsset(api, url);
      expect(r.status, url).toBe(200);
      expect(sha256(r.bytes)).toBe(sha256(bytes));
    }
  });

  it("paths outside the asset directory, traversal (plain, percent-encoded, encoded slashes, backslashes), NUL and foreign hosts: 403/404, never the file", async () => {
    const id = () => up.uploadID;
    const urls = [
      "file:///etc/passwd",
      "file:///etc/hostname",
      "file://localhost/etc/passwd",
      `file://${server.dataDir}/inboxd.sqlite3`,
      `file://${assetDir}/../inboxd.sqlite3`,
      `file://${assetDir}/%2e%2e/inboxd.sqlite3`,
      `file://${assetDir}/%2E%2E%2Finboxd.sqlite3`,
      `file://${assetDir}%2F..%2Finboxd.sqlite3`,
      `file://${assetDir}/${id()}/..%2F..%2Finboxd.sqlite3`,
      `file://${assetDir}/${id()}%2F..%2F..%2Finboxd.sqlite3`,
      `file://${assetDir}/${id()}/%2e%2e%2f%2e%2e%2finboxd.sqlite3`,
      `file://${assetDir}/${id()}/..%5C..%5Cinboxd.sqlite3`,
      `file://${assetDir}/..%5Cinboxd.sqlite3`,
      `file://${assetDir}/${id()}%00/safe.txt`,
      `file://${assetDir}/%00../inboxd.sqlite3`,
      `file://evil.example${assetDir}/${id()}/safe.txt`,
      `file://${assetDir}`,
      `file://${assetDir}/`,
      `file://${assetDir}-other/${id()}/safe.txt`,
      `file:///${assetDir.replace(/^\//, "")}/../../../etc/passwd`,
      `file://${assetDir}/./../inboxd.sqlite3`,
      `file:${assetDir}/../inboxd.sqlite3`,
      "file:/etc/passwd",
      "FILE:///etc/passwd",
    ];
    for (const url of urls) {
      for (const r of [await serveAsset(api, url), await api.raw("POST", "/v1/assets/download", { json: { url } })]) {
        const body = "bytes" in r ? new TextDecoder().decode(r.bytes) : r.text;
        expect([400, 403, 404], `${url} → ${r.status}`).toContain(r.status);
        for (const secret of secrets()) expect(body, url).not.toContain(secret);
      }
    }
  });

  it("symlinks placed in the asset directory (named like assets) do not make other files servable", async () => {
    symlinkSync("/etc/hostname", join(assetDir, "linkedfile"));
    symlinkSync("/etc", join(assetDir, "linkdir"));
    mkdirSync(join(assetDir, "fakeasset1"));
    symlinkSync("/etc/hostname", join(assetDir, "fakeasset1", "0"));
    symlinkSync("/etc/hostname", join(assetDir, "fakeasset2_0")); // named like a chunk of an asset that does not exist
    mkdirSync(join(assetDir, up.uploadID), { recursive: true });
    symlinkSync("/etc/passwd", join(assetDir, up.uploadID, "evil"));
    const refused = [
      `file://${assetDir}/linkedfile`,
      `file://${assetDir}/linkedfile/x`,
      `file://${assetDir}/linkdir/passwd`,
      `file://${assetDir}/linkdir/hostname`,
      `file://${assetDir}/fakeasset1/0`,
      `file://${assetDir}/fakeasset1/hostname`,
      "mxc://inboxd/fakeasset1",
      "mxc://inboxd/fakeasset2",
      "localmxc://inboxd/linkdir",
    ];
    for (const url of refused) {
      const r = await serveAsset(api, url);
      expect([403, 404], `${url} → ${r.status}`).toContain(r.status);
      for (const secret of secrets()) expect(new TextDecoder().decode(r.bytes), url).not.toContain(secret);
    }
    // A name inside a real asset's directory only ever names that asset: its own bytes, not the link's target.
    const inside = await serveAsset(api, `file://${assetDir}/${up.uploadID}/evil`);
    expect(inside.status).toBe(200);
    expect(sha256(inside.bytes)).toBe(sha256(bytes));
  });

  it("an asset whose stored file was replaced by a symlink (or a FIFO): 403 NOT_A_STORED_FILE everywhere, on a connection that stays usable", async () => {
    const secret = "a file outside the asset directory: never served";
    const outside = join(server.dataDir, "outside.txt");
    writeFileSync(outside, secret);
    const victim = await uploadBytes(api, text("bytes to be swapped for a link"), "victim.txt");
    const chunk = join(assetDir, `${victim.uploadID}_0`);
    rmSync(chunk);
    symlinkSync(outside, chunk);
    const refused = (status: number, body: string, what: string) => {
      expect(status, `${what}: ${body}`).toBe(403);
      expect(body, what).not.toContain(secret);
      expect(JSON.parse(body), what).toMatchObject({
        code: "NOT_A_STORED_FILE",
        message: expect.stringContaining("not a regular file of the asset store"),
      });
    };
    // One kept-alive socket: every refusal is a whole answer, and the next request goes on the same connection.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    const onSocket = (method: string, path: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          `${server.url}${path}`,
          { method, agent, headers: { authorization: `Bearer ${token}`, ...headers } },
          (res) => {
            let body = "";
            res
              .setEncoding("utf8")
              .on("data", (piece: string) => (body += piece))
              .on("end", () => resolve({ status: res.statusCode!, body }));
          },
        );
        req
          .on("socket", (socket) => sockets.add(socket))
          .on("error", reject)
          .end();
      });
    const serve = `/v1/assets/serve?url=${encodeURIComponent(victim.srcURL)}`;
    const etag = `"${victim.uploadID}-${victim.fileSize}"`;
    for (const [what, headers] of [
      ["GET", {}],
      ["a range", { range: "bytes=0-4" }],
      ["If-None-Match", { "if-none-match": etag }],
      ["If-Modified-Since", { "if-modified-since": new Date(Date.now() + 86_400_000).toUTCString() }],
    ] as const) {
      const r = await onSocket("GET", serve, headers);
      refused(r.status, r.body, what);
    }
    const head = await onSocket("HEAD", serve);
    expect(head.status, "HEAD").toBe(403);
    const download = await api.raw("POST", "/v1/assets/download", { json: { url: `mxc://inboxd/${victim.uploadID}` } });
    refused(download.status, download.text, "POST /v1/assets/download");
    const chatID = (await api.ok<{ items: { id: string }[] }>("GET", "/v1/chats")).items[0].id;
    const sent = await api.postMessage(chatID, {
      text: "with the swapped file",
      attachment: { uploadID: victim.uploadID },
    });
    refused(sent.status, sent.text, "sending it as an attachment");
    const mcp = await connect(server.url, token, "streamable");
    try {
      const tool = await call(mcp, "download_asset", { url: `mxc://inboxd/${victim.uploadID}` });
      expect(tool.isError, tool.text).toBe(true);
      expect(tool.text).toContain("not a regular file of the asset store");
      expect(tool.text).not.toContain(secret);
      await expect(mcp.readResource({ uri: `inboxd://assets/${victim.uploadID}` })).rejects.toThrow(
        /not a regular file of the asset store/,
      );
    } finally {
      await mcp.close();
    }
    const after = await onSocket("GET", "/v1/accounts");
    expect(after.status).toBe(200);
    expect(sockets.size, "every request on one kept-alive connection").toBe(1);
    agent.destroy();

    // A FIFO in its place is refused the same way, without the read hanging on it.
    const fifo = await uploadBytes(api, text("bytes to be swapped for a FIFO"), "fifo.txt");
    const fifoChunk = join(assetDir, `${fifo.uploadID}_0`);
    rmSync(fifoChunk);
    execFileSync("mkfifo", [fifoChunk]);
    const r = await serveAsset(api, fifo.srcURL);
    refused(r.status, new TextDecoder().decode(r.bytes), "a FIFO");

    // A directory under the asset directory that is a link does not lead anywhere either.
    mkdirSync(join(server.dataDir, "elsewhere"));
    symlinkSync(join(server.dataDir, "elsewhere"), join(assetDir, "linkeddir"));
    writeFileSync(join(server.dataDir, "elsewhere", "x"), secret);
    const blobs = assetStorage(assetDir);
    await expect(blobs.getItemRaw("linkeddir:x")).rejects.toThrow(/not a regular file of the asset store/);
    await expect(blobs.setItemRaw("linkeddir:y", new Uint8Array([1]))).rejects.toThrow(
      /not a regular file of the asset store/,
    );
  });

  it("every srcURL the server hands out can be served back, whatever the file name", async () => {
    const names = [
      "back\\slash.txt",
      "..",
      ".",
      "a/b.txt",
      "%2e%2e",
      "semi;colon,comma.txt",
      "..hidden",
      "tab\there.txt",
      "ünï ¢ødé.txt",
      "x".repeat(255),
    ];
    const failures: string[] = [];
    for (const fileName of names) {
      const content = text(`named ${fileName}`);
      const u = await api.ok<Upload>("POST", "/v1/assets/upload/base64", { content: b64(content), fileName });
      expect(u.fileName).toBe(fileName);
      const r = await serveAsset(api, u.srcURL);
      if (r.status !== 200 || sha256(r.bytes) !== sha256(content))
        failures.push(`${JSON.stringify(fileName)} → ${u.srcURL} → ${r.status}`);
    }
    expect(failures).toEqual([]);
  });
});

describe("node only: the upload size limit (an in-process daemon with maxUploadBytes = 4 MiB)", () => {
  const LIMIT = 4 * MiB;
  let d: TunedDaemon;
  let before: string[];
  const pendingUploads = async () =>
    Object.keys((await d.app.context.db.kv.get<Record<string, number>>("uploads")) ?? {}).length;

  beforeAll(async () => {
    d = await startTuned({ maxUploadBytes: LIMIT });
    // one accepted upload, so that the directory exists and "unchanged" means something
    await uploadBytes(d.api, text("kept"), "kept.txt");
  });
  afterAll(() => d?.stop());

  const form = (bytes: Uint8Array<ArrayBuffer>, name = "f.bin") => {
    const f = new FormData();
    f.append("file", new Blob([bytes]), name);
    return f;
  };

  it("one byte over the limit → 413 JSON; no chunk file and no upload record is left", async () => {
    before = listing(d.assetDir);
    const pending = await pendingUploads();
    const r = await uploadForm(d.api, form(binaryBlob(LIMIT + 1)));
    expect(r.status).toBe(413);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    expect(r.body).toMatchObject({ code: "PAYLOAD_TOO_LARGE", message: expect.any(String) });
    expect(listing(d.assetDir)).toEqual(before);
    expect(await pendingUploads()).toBe(pending);
  });

  it("20 MB streamed → 413; nothing left behind; the daemon keeps serving", async () => {
    before = listing(d.assetDir);
    const r = await d.api
      .raw("POST", "/v1/assets/upload", {
        body: streamedUpload(20 * MiB),
        headers: { "content-type": multipartType },
        duplex: true,
      })
      .catch((e: unknown) => ({ status: -1, text: String(e), body: undefined }));
    // The server may answer before it has read the whole body; then the client may see the connection end instead.
    if (r.status !== -1) {
      expect(r.status).toBe(413);
      expect(r.body).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    }
    // The limit is found only once 4 MiB are stored as chunk files, before the client can see any answer or the
    // connection end: a listing as before means they were removed.
    expect(await listingBecomes(d.assetDir, before)).toEqual(before);
    const after = await uploadBytes(d.api, png(2, 2), "after.png");
    expect(after.fileSize).toBeGreaterThan(0);
  });

  it("a refused upload leaves no empty directory behind either", async () => {
    const all = entries(d.assetDir);
    expect((await uploadForm(d.api, form(binaryBlob(LIMIT + 1)))).status).toBe(413);
    expect(entries(d.assetDir)).toEqual(all);
  });

  it("a file of exactly the limit is accepted", async () => {
    const r = await uploadForm(d.api, form(binaryBlob(LIMIT), "exact.bin"));
    expect(r.status, r.text).toBe(200);
    expect(r.body.fileSize).toBe(LIMIT);
  });

  it("a file of exactly the limit is accepted also when fields come before it", async () => {
    const f = new FormData();
    f.append("fileName", "exact-after-fields.bin");
    f.append("mimeType", "application/x-exact");
    f.append("file", new Blob([binaryBlob(LIMIT)]), "exact.bin");
    const r = await uploadForm(d.api, f);
    expect(r.status, r.text).toBe(200);
  });
});

describe("node only: uploads that break off", () => {
  let d: TunedDaemon;
  beforeAll(async () => {
    d = await startTuned({});
    await uploadBytes(d.api, text("kept"), "kept.txt");
  });
  afterAll(() => d?.stop());

  it("a client that goes away after 3 MB: its chunk files are removed", async () => {
    const before = listing(d.assetDir);
    // The client's fetch fails at once; the daemon notices when the request's connection closes, then cleans up.
    const closed = new Promise<void>((resolve) =>
      d.httpServer.once("request", (request: http.IncomingMessage) => request.once("close", () => resolve())),
    );
    await d.api
      .raw("POST", "/v1/assets/upload", {
        body: streamedUpload(20 * MiB, { abortAfter: 3 * MiB }),
        headers: { "content-type": multipartType },
        duplex: true,
      })
      .catch(() => undefined);
    await closed;
    expect(await listingBecomes(d.assetDir, before)).toEqual(before);
    // and the daemon is fine
    expect((await uploadBytes(d.api, text("still here"), "ok.txt")).fileSize).toBe(10);
  });
});

describe("node only: uploads never sent are cleaned up (uploadTtlMs, app.wake)", () => {
  const TTL = 60_000;
  let clock = Date.now();
  let d: TunedDaemon;
  beforeAll(async () => {
    d = await startTuned({ uploadTtlMs: TTL, now: () => clock });
  });
  afterAll(() => d?.stop());

  it("after the TTL, wake() deletes the unsent upload (record and chunk files); the sent one stays", async () => {
    const unsentBytes = binaryBlob(MiB + 10); // two chunk files
    const unsent = await uploadBytes(d.api, unsentBytes, "unsent.bin");
    expect(listing(d.assetDir).filter((f) => f.startsWith(`${unsent.uploadID}_`))).toEqual([
      `${unsent.uploadID}_0`,
      `${unsent.uploadID}_1`,
    ]);
    // the daemon was asked to wake when it expires
    expect(d.scheduled.filter((t) => t !== undefined).at(-1)).toBe(clock + TTL);

    const sentBytes = png(16, 16);
    const sent = await uploadBytes(d.api, sentBytes, "sent.png");
    const chat = await d.api.echoChat();
    const message = await d.api.postMessage(chat.id, { attachment: { uploadID: sent.uploadID } });
    expect(message.status).toBe(200);
    await d.api.settled(chat.id, message.body.pendingMessageID);

    // before the TTL: nothing happens
    clock += TTL - 1000;
    await d.app.wake();
    expect((await serveAsset(d.api, unsent.srcURL)).status).toBe(200);

    clock += 2000;
    await d.app.wake();
    for (const url of [unsent.srcURL, `mxc://inboxd/${unsent.uploadID}`])
      expect((await serveAsset(d.api, url)).status, url).toBe(404);
    expect(existsSync(join(d.assetDir, `${unsent.uploadID}_0`))).toBe(false);
    expect(existsSync(join(d.assetDir, `${unsent.uploadID}_1`))).toBe(false);
    // it can no longer be sent either
    expect((await d.api.postMessage(chat.id, { attachment: { uploadID: unsent.uploadID } })).status).toBe(422);

    const kept = await serveAsset(d.api, sent.srcURL);
    expect(kept.status).toBe(200);
    expect(sha256(kept.bytes)).toBe(sha256(sentBytes));
    const m = await d.api.message(chat.id, message.body.pendingMessageID);
    expect((await serveAsset(d.api, m.attachments![0].id!)).status).toBe(200);
  });
});

describe("node only: a storage failure during an upload", () => {
  // The daemon runs in a child process: if it freezes, only the child does, and the test can tell.
  it("the upload fails with a 5xx, and the daemon keeps answering other requests", async () => {
    const script = fileURLToPath(new URL("./children/daemon-failing-storage.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const { url, token } = await new Promise<{ url: string; token: string }>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d) => {
          out += d;
          if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]));
        });
        child.on("exit", (code) => reject(new Error(`child exited with ${code}`)));
      });
      const api = new Api(url, token);
      const withTimeout = <T>(p: Promise<T>, ms: number, what: string) =>
        Promise.race([p, sleep(ms).then(() => `${what}: no answer within ${ms} ms` as const)]);
      const upload = await withTimeout(
        api
          .raw("POST", "/v1/assets/upload", {
            body: streamedUpload(16 * MiB),
            headers: { "content-type": multipartType },
            duplex: true,
          })
          .then(
            (r) => r.status,
            (e: unknown) => `upload failed: ${String(e)}`,
          ),
        10_000,
        "upload",
      );
      const info = await withTimeout(
        api.raw("GET", "/v1/accounts").then(
          (r) => r.status,
          (e: unknown) => `failed: ${String(e)}`,
        ),
        3_000,
        "GET /v1/accounts afterwards",
      );
      expect({ upload, info }).toEqual({ upload: 500, info: 200 });
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);
});
