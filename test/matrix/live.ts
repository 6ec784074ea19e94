/**
 * `npm run test:matrix-live`, outside `npm test`: the Matrix connector against a homeserver of your choice (a newer Synapse, Conduit, Dendrite, a public
 * server), to check what the bundled Synapse 1.67 cannot show — authenticated media, newer room versions. Runs only
 * when the environment names the server and a test account:
 *
 *   INBOXD_MATRIX_LIVE_HOMESERVER=https://matrix.example.org  (a URL or a server name)
 *   INBOXD_MATRIX_LIVE_USER=@inboxd-test:example.org
 *   INBOXD_MATRIX_LIVE_PASSWORD=…
 *
 * It signs in, waits for the first sync, reads the chat list and a chat's messages (every answer checked against
 * the served OpenAPI document), then removes the login, which signs the session out. It sends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDaemonRuntime, type Runtime } from "../harness/bridge-runtime.ts";
import { ResponseChecker } from "../scenario/openapi-check.ts";
import { Client, MATRIX_BRIDGE, randomToken } from "./kit.ts";

const env = {
  homeserver: process.env.INBOXD_MATRIX_LIVE_HOMESERVER,
  username: process.env.INBOXD_MATRIX_LIVE_USER,
  password: process.env.INBOXD_MATRIX_LIVE_PASSWORD,
};
if (!env.homeserver || !env.username || !env.password)
  throw new Error(
    "the live Matrix test needs INBOXD_MATRIX_LIVE_HOMESERVER, INBOXD_MATRIX_LIVE_USER and INBOXD_MATRIX_LIVE_PASSWORD (a homeserver and a throwaway account)",
  );

describe("Matrix connector against a live homeserver", () => {
  let runtime: Runtime;
  let api: Client;

  beforeAll(async () => {
    runtime = await startDaemonRuntime(randomToken(), { matrixFirstBackfill: 5 });
    api = new Client(runtime);
  });

  afterAll(() => runtime?.stop());

  it("signs in, syncs, reads chats and messages, and signs out", async () => {
    api.spec = new ResponseChecker(await api.ok("GET", "/v1/spec"));
    const session = await api.login(
      { homeserver: env.homeserver!, username: env.username!, password: env.password! },
      undefined,
      { bridgeID: MATRIX_BRIDGE },
    );
    expect(session).toMatchObject({ status: "complete" });
    await api.accountStatus(session.accountID, "connected", undefined, 180_000);
    const chats = await api.sdk.chats.list({ accountIDs: [session.accountID] });
    for (const chat of chats.items.slice(0, 5)) await api.sdk.messages.list(chat.id);
    await api.ok("POST", `/v1/bridges/${MATRIX_BRIDGE}/logins/${encodeURIComponent(session.loginID)}/remove`, {});
  }, 300_000);
});
