// The official TypeScript SDK (@beeper/desktop-api 5.0.0) against inboxd: list the accounts, find the sandbox's
// Echo chat, send a message, and wait for Echo's answer by polling the chat's messages.
//
//   INBOXD_TOKEN=inbx_… node examples/sdk.mjs [text]
//
// INBOXD_URL defaults to http://127.0.0.1:23373. Needs an account of the sandbox network (`inboxd seed`, or a login
// through local-sandbox, see docs/networks.md, "Connect an account"). Exits 1 when something fails.
import BeeperDesktop from "@beeper/desktop-api";

const ECHO = "@echo:sandbox.invalid";
const baseURL = process.env.INBOXD_URL ?? process.env.API ?? "http://127.0.0.1:23373";
const accessToken = process.env.INBOXD_TOKEN ?? process.env.TOKEN; // the README's names work too
if (!accessToken) {
  console.error("Set INBOXD_TOKEN to an access token (`npm run -s inboxd -- token create` prints one).");
  process.exit(2);
}
const text = process.argv[2] ?? `hello from the SDK at ${new Date().toISOString()}`;

try {
  const client = new BeeperDesktop({ baseURL, accessToken });

  const accounts = await client.accounts.list();
  for (const account of accounts)
    console.log(
      `account ${account.accountID} (${account.network ?? "unknown network"}): ${account.user.fullName ?? account.user.id}`,
    );

  // Chat search matches word starts in titles and participant names; the Echo chat is a single chat with Echo in it.
  let echo;
  for await (const chat of client.chats.search({ query: "echo", type: "single" })) {
    if (chat.participants.items.some((user) => user.id === ECHO)) {
      echo = chat;
      break;
    }
  }
  if (!echo) throw new Error("no Echo chat: connect a sandbox account first (inboxd seed, or the local-sandbox login)");
  console.log(`Echo chat ${echo.id} on ${echo.accountID}`);

  const { pendingMessageID } = await client.messages.send(echo.id, { text });
  console.log(`sent ${pendingMessageID}: ${text}`);

  // Echo answers within a second, as a reply to our message (linkedMessageID).
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await client.messages.list(echo.id);
    const reply = page.items.find((m) => m.linkedMessageID === pendingMessageID && m.senderID === ECHO);
    if (reply) {
      console.log(`reply ${reply.id} from ${reply.senderName ?? reply.senderID}: ${reply.text}`);
      break;
    }
    if (Date.now() > deadline) throw new Error(`no reply to ${pendingMessageID} within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
} catch (error) {
  // The SDK's errors carry the HTTP status and inboxd's error body ({code, message}).
  console.error(
    `failed: ${error instanceof BeeperDesktop.APIError ? `HTTP ${error.status} ${JSON.stringify(error.error)}` : error.message}`,
  );
  process.exit(1);
}
