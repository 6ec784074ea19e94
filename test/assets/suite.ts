/**
 * Assets and attachments on any runtime that serves the app: uploads (multipart and base64), serving with ranges
 * and conditional requests, a 50 MB file end to end, the real 500 MB limit (a streamed 500 MiB + 1 byte body),
 * sending uploads as attachments (the sandbox reads every byte and rejects incomplete ones; Echo answers
 * `Echo: [<fileName>]`), and downloading seeded network media. Each entry file (node.test.ts, workerd.test.ts)
 * calls `assetSuite` with its harness and adds what only its runtime has.
 */
import { afterAll, beforeAll, describe } from "vitest";
import { attachmentCases } from "./attachments.ts";
import { createEnv, type Runtime, type Server } from "./env.ts";
import { randomToken } from "../kit/common.ts";
import { Api } from "../kit/http.ts";
import { quietChat } from "./kit.ts";
import { largeFileCases } from "./large-file.ts";
import { mediaCases } from "./media.ts";
import { uploadCases } from "./uploads.ts";

export type { Runtime } from "./env.ts";

/** Enough seeded messages that search finds media of every kind. */
export const SEED = { chats: 60, messages: 3000, accounts: 1, seed: 9 };

export function assetSuite<S extends Server>(runtime: Runtime<S>) {
  describe(`assets on ${runtime.name}`, () => {
    const env = createEnv(runtime);

    beforeAll(async () => {
      env.rwToken = randomToken("rw");
      env.roToken = randomToken("ro");
      env.server = await runtime.start({
        seed: SEED,
        tokens: [
          { token: env.rwToken, scopes: ["read", "write"] },
          { token: env.roToken, scopes: ["read"] },
        ],
      });
      env.api = new Api(env.server.url, env.rwToken);
      env.ro = env.api.withToken(env.roToken);
      env.anon = env.api.withToken(null);
      env.echo = await env.api.echoChat();
      env.quiet = await quietChat(env.api);
    });
    afterAll(() => env.server?.stop());

    uploadCases(env);
    largeFileCases(env);
    attachmentCases(env);
    mediaCases(env);
  });
}
