// A webhook receiver for inboxd: verifies each POST's signature, refuses stale timestamps (replays of an old
// delivery), and handles each delivery once (inboxd delivers at least once, so a retry or a replay can repeat one).
//
//   INBOXD_WEBHOOK_SECRET=whsec_… PORT=8788 node examples/webhook-receiver.mjs
//   npm run -s inboxd -- webhook add http://127.0.0.1:8788/     # prints the secret on its last line
//
// (Register first to get the secret, then start the receiver; inboxd retries until it answers.) Every POST carries
//   x-inboxd-timestamp: <unix seconds>
//   x-inboxd-signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>
//   x-inboxd-delivery:  dlv_<webhook>_<eventID>, the same on every retry of that event (also the body's deliveryID)
// Answers 204 to a verified delivery (or one already handled), 401 to a forged or stale one. Ctrl-C stops it (exit 0).
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const secret = process.env.INBOXD_WEBHOOK_SECRET;
if (!secret) {
  console.error(
    "Set INBOXD_WEBHOOK_SECRET to the webhook's secret (POST /v1/webhooks or `inboxd webhook add` shows it once).",
  );
  process.exit(2);
}
const port = Number(process.env.PORT ?? 8788);
const MAX_AGE_SECONDS = 5 * 60;
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Delivery IDs handled already. In memory here; a real receiver keeps them with what it did (a database row). */
const seen = new Set();

function verify(headers, body) {
  const timestamp = headers["x-inboxd-timestamp"];
  const signature = headers["x-inboxd-signature"];
  if (typeof timestamp !== "string" || !/^\d+$/.test(timestamp) || typeof signature !== "string")
    return "missing x-inboxd-timestamp or x-inboxd-signature";
  const expected = Buffer.from(
    `sha256=${createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex")}`,
  );
  const given = Buffer.from(signature);
  // timingSafeEqual takes equal lengths only; the length of a signature is no secret.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "bad signature";
  // Checked after the signature: only a signed timestamp means anything.
  const age = Math.floor(Date.now() / 1000) - Number(timestamp);
  if (Math.abs(age) > MAX_AGE_SECONDS) return `stale timestamp (${age} s old)`;
  return undefined;
}

const server = createServer((request, response) => {
  if (request.method !== "POST") {
    response.writeHead(405, { allow: "POST" }).end();
    return;
  }
  const chunks = [];
  let size = 0;
  request.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) request.destroy();
    else chunks.push(chunk);
  });
  request.on("end", () => {
    const body = Buffer.concat(chunks);
    const refusal = verify(request.headers, body);
    if (refusal) {
      console.log(`rejected delivery ${request.headers["x-inboxd-delivery"] ?? "-"}: ${refusal}`);
      response.writeHead(401).end();
      return;
    }
    const event = JSON.parse(body.toString("utf8"));
    // The body's deliveryID equals the x-inboxd-delivery header, and is covered by the signature (the header is not).
    const delivery = event.deliveryID;
    if (seen.has(delivery)) {
      console.log(`duplicate delivery ${delivery}: already handled`);
      response.writeHead(204).end();
      return;
    }
    seen.add(delivery);
    const entry = event.entries?.[0];
    const what =
      event.type === "message.upserted" && entry
        ? ` ${entry.senderName ?? entry.senderID}: ${JSON.stringify(entry.text ?? `[${entry.type}]`)}`
        : "";
    console.log(
      `verified ${event.type} eventID=${event.eventID} delivery=${delivery} chat=${event.chatID || "-"}${what}`,
    );
    response.writeHead(204).end();
  });
});

server.on("error", (error) => {
  console.error(`failed: ${error.message}`);
  process.exit(1);
});
server.listen(port, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}/`));

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    console.log(`stopped after ${seen.size} deliveries`);
    server.close();
    process.exit(0);
  });
}
