import { describe, expect, it } from "vitest";
import { encryptedFileOf, encryptedMediaID, findEncryptedFile, parseEncryptedMediaID } from "./encrypted-media.ts";

const file = {
  url: "mxc://example.org/AbC_12-x",
  key: { kty: "oct", alg: "A256CTR", k: "secret-key-material", key_ops: ["encrypt", "decrypt"], ext: true },
  iv: "w+sE15fzSc0AAAAAAAAAAA",
  hashes: { sha256: "fdSLu/YkRx3Wyh3KQabP3rd6+SFiKg5lsJZQHtkSAYA" },
  v: "v2",
};

describe("encrypted media IDs", () => {
  it("name the file and the event that holds its key, never the key", () => {
    const id = encryptedMediaID(file.url, "!room:example.org", "$ev/ent+id:x");
    expect(id).not.toContain(file.key.k);
    expect(id).toMatch(/^mxc:\/\/[^/\s]+\/\S+$/); // what /v1/assets/serve accepts
    expect(parseEncryptedMediaID(id)).toEqual({ mxc: file.url, roomID: "!room:example.org", eventID: "$ev/ent+id:x" });
  });

  it("refuse what they did not make", () => {
    for (const bad of [
      file.url,
      `${file.url}#inboxd-e2ee:`,
      `${file.url}#inboxd-e2ee:%21room`,
      `${file.url}#inboxd-e2ee:a:b:c`,
      `${file.url}#inboxd-e2ee:%E0%A4%A:b`,
      "https://example.org/x#inboxd-e2ee:a:b",
      "mxc://example.org/../x#inboxd-e2ee:a:b",
    ])
      expect(parseEncryptedMediaID(bad), bad).toBeUndefined();
  });

  it("take a well-formed `file` object only, and find a file or its thumbnail by URL", () => {
    expect(encryptedFileOf(file)).toMatchObject({ url: file.url, iv: file.iv });
    expect(encryptedFileOf({ ...file, url: "https://example.org/x" })).toBeUndefined();
    expect(encryptedFileOf({ ...file, hashes: {} })).toBeUndefined();
    expect(encryptedFileOf({ ...file, key: "k" })).toBeUndefined();
    expect(encryptedFileOf("mxc://example.org/x")).toBeUndefined();
    const thumbnail = { ...file, url: "mxc://example.org/thumb" };
    const content = { file, info: { thumbnail_file: thumbnail } };
    expect(findEncryptedFile(content, file.url)?.url).toBe(file.url);
    expect(findEncryptedFile(content, thumbnail.url)?.url).toBe(thumbnail.url);
    expect(findEncryptedFile(content, "mxc://example.org/other")).toBeUndefined();
  });
});
