/**
 * Helpers every suite and bench shares: tokens, the paths of a chat and a message, Echo's ID, the harness's start
 * options, and waiting for something to happen. Nothing here asserts.
 */
import { randomBytes } from "node:crypto";

export type Scope = "read" | "write";

/** What a suite asks of the runtime it runs on: a seeded data set and the tokens to accept. */
export interface StartOptions {
  seed: { chats: number; messages: number; accounts?: number; seed?: number };
  tokens: { token: string; scopes: Scope[] }[];
}
/**
 * Starts a server holding `options.seed` and accepting `options.tokens`. A server that mints its own tokens (an inbox
 * of many, which a token reaches only if it names it) answers `tokens`: the token it gave for each one asked for.
 */
export type Start = (
  options: StartOptions,
) => Promise<{ url: string; stop(): Promise<void>; tokens?: Record<string, string> }>;

export const randomToken = (prefix: string) => `${prefix}_${randomBytes(18).toString("base64url")}`;
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const enc = encodeURIComponent;
export const chatPath = (chatID: string) => `/v1/chats/${enc(chatID)}`;
export const messagePath = (chatID: string, messageID: string) => `${chatPath(chatID)}/messages/${enc(messageID)}`;

/** The sandbox network's Echo, who answers every message in its direct chats. */
export const ECHO_ID = "@echo:sandbox.invalid";

/** Polls until `probe` answers something truthy; throws naming `what` after the timeout. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 5000,
  everyMs = 25,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
