// Live events over /v1/ws from Node 20, which has no global WebSocket: the `ws` package (a dependency of inboxd).
// Subscribes to every chat and prints each event. The server keeps a durable event log (docs/events-and-webhooks.md,
// "Events that are never lost"), so after a dropped connection this client reconnects with `since` = the last eventID it printed
// and the server replays what it missed: nothing lost, nothing printed twice.
//
//   INBOXD_TOKEN=inbx_… node examples/websocket.mjs
//
// INBOXD_URL defaults to http://127.0.0.1:23373; INBOXD_SINCE=N starts after event N (what a stop prints). Ctrl-C
// stops it (exit 0). A refused token exits 1; a server that is down is retried (0.5 s doubling to 30 s).
import WebSocket from "ws";

const base = (process.env.INBOXD_URL ?? process.env.API ?? "http://127.0.0.1:23373").replace(/\/$/, "");
const token = process.env.INBOXD_TOKEN ?? process.env.TOKEN; // the README's names work too
if (!token) {
  console.error("Set INBOXD_TOKEN to an access token (`npm run -s inboxd -- token create` prints one).");
  process.exit(2);
}

/** The last eventID handled: where a reconnect resumes. */
let lastEventID = process.env.INBOXD_SINCE === undefined ? undefined : Number(process.env.INBOXD_SINCE);
if (lastEventID === undefined) {
  // Start at the newest logged event, so that even a drop before the first event loses nothing.
  const response = await fetch(`${base}/v1/events`, { headers: { authorization: `Bearer ${token}` } }).catch(
    (error) => {
      console.error(`failed: cannot reach ${base}: ${error.cause?.message ?? error.message}`);
      process.exit(1);
    },
  );
  if (!response.ok) {
    console.error(`failed: GET /v1/events answered HTTP ${response.status} ${await response.text()}`);
    process.exit(1);
  }
  lastEventID = (await response.json()).latestEventID;
}

let delay = 500;
let resumed = false;
let socket;
let stopping = false;

function connect() {
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/v1/ws`, { headers: { authorization: `Bearer ${token}` } });
  socket = ws;
  ws.on("open", () => {
    delay = 500;
    ws.send(JSON.stringify({ type: "subscriptions.set", requestID: "1", chatIDs: ["*"], since: lastEventID }));
  });
  ws.on("unexpected-response", (_request, response) => {
    if (response.statusCode === 401 || response.statusCode === 403) {
      console.error(`failed: /v1/ws refused the token: HTTP ${response.statusCode}`);
      process.exit(1);
    }
    console.error(`/v1/ws answered HTTP ${response.statusCode}`);
    ws.terminate(); // then "close": retried
  });
  ws.on("message", (data) => {
    const event = JSON.parse(data.toString());
    switch (event.type) {
      case "ready":
        return;
      case "subscriptions.updated":
        // The first subscription starts at the newest event; later ones pick up after the last event handled.
        console.log(`subscribed to every chat, ${resumed ? "resuming" : "starting"} after eventID ${event.since}`);
        resumed = true;
        return;
      case "error":
        console.error(`server error ${event.code}: ${event.message}`);
        return;
      case "resync.required":
        // The log no longer holds what came after our cursor: re-read what you show (GET /v1/chats…), then go on.
        console.log(
          `resync required: events ${lastEventID + 1}–${event.latestEventID} are gone; re-read, continuing after ${event.latestEventID}`,
        );
        lastEventID = event.latestEventID;
        return;
    }
    if (event.eventID !== undefined) {
      if (event.eventID <= lastEventID) return; // at least once: never print an event twice
      lastEventID = event.eventID;
    }
    console.log(`event ${event.eventID ?? "-"} ${event.type} chat=${event.chatID || "-"}${describe(event)}`);
  });
  ws.on("error", (error) => console.error(`connection error: ${error.message}`));
  ws.on("close", () => {
    if (stopping) return;
    console.log(`disconnected; reconnecting in ${delay} ms`);
    setTimeout(connect, delay);
    delay = Math.min(delay * 2, 30_000);
  });
}

/** A few words about an event: a message's sender and text, a chat's title, who is typing. */
function describe(event) {
  const entry = event.entries?.[0];
  if (event.type === "message.upserted" && entry)
    return ` ${entry.senderName ?? entry.senderID}: ${JSON.stringify(entry.text ?? `[${entry.type}]`)}`;
  if (event.type === "chat.upserted" && entry) return ` "${entry.title}"`;
  if (event.type === "typing") return ` ${event.typing.participantID} ${event.typing.state}`;
  return ` ids=${event.ids.join(",")}`;
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopping = true;
    socket?.close();
    console.log(`stopped; resume with INBOXD_SINCE=${lastEventID}`);
    process.exit(0);
  });
}

connect();
