/**
 * What the asset suite's modules share: the runtime under test, the server it started, clients for each token,
 * the chats used for sending, and assertions about served bytes. Filled by the suite's beforeAll; read only inside
 * tests.
 */
import { expect } from "vitest";
import { sha256 } from "./fixtures.ts";
import type { Chat } from "../../src/schema/wire.ts";
import type { StartOptions } from "../kit/common.ts";
import type { Api } from "../kit/http.ts";
import { serveAsset, type Upload } from "./kit.ts";

export interface Server {
  url: string;
  stop(): Promise<void>;
}

export interface Runtime<S extends Server> {
  name: string;
  start(options: StartOptions): Promise<S>;
  /** The srcURL this runtime gives asset `id` stored under `fileName`. */
  srcURL(server: S, id: string, fileName: string): string;
  /** The chunk files the runtime holds, where the test can look (the daemon's asset directory). */
  chunkFiles?(server: S): string[];
}

export interface AssetEnv<S extends Server = Server> {
  runtime: Runtime<S>;
  server: S;
  /** read+write, read-only and no token */
  api: Api;
  ro: Api;
  anon: Api;
  rwToken: string;
  roToken: string;
  /** Echo's direct chat (answers every message) and a direct chat where nobody answers */
  echo: Chat;
  quiet: Chat;
  expectSrcURL(up: Upload): void;
  expectLength(r: { bytes: Uint8Array; h(name: string): string | null }, n: number, what?: string): void;
  expectServed(up: Upload, bytes: Uint8Array, mimeType?: string): Promise<void>;
}

export const MiB = 1024 * 1024;

/** An env whose data fields are set later (beforeAll); its assertions read them when called. */
export function createEnv<S extends Server>(runtime: Runtime<S>): AssetEnv<S> {
  const env = {
    runtime,
    expectSrcURL(up: Upload) {
      expect(up.srcURL).toBe(runtime.srcURL(env.server, up.uploadID, up.fileName));
    },
    /**
     * The body has `n` bytes, and so does Content-Length when it is sent. (Whether it is sent at all is its own
     * test, "Content-Length is declared", so that its absence does not hide everything else.)
     */
    expectLength(r: { bytes: Uint8Array; h(name: string): string | null }, n: number, what?: string) {
      expect(r.bytes.length, what).toBe(n);
      const declared = r.h("content-length");
      if (declared !== null) expect(declared, what).toBe(String(n));
    },
    /** Serves an upload by its srcURL, mxc:// and localmxc:// URLs; each must give exactly `bytes`. */
    async expectServed(up: Upload, bytes: Uint8Array, mimeType = up.mimeType) {
      for (const url of [up.srcURL, `mxc://inboxd/${up.uploadID}`, `localmxc://inboxd/${up.uploadID}`]) {
        const r = await serveAsset(env.api, url);
        expect(r.status, url).toBe(200);
        expect(r.h("content-type"), url).toBe(mimeType);
        env.expectLength(r, bytes.length, url);
        expect(sha256(r.bytes), url).toBe(sha256(bytes));
      }
    },
  } as AssetEnv<S>;
  return env;
}
