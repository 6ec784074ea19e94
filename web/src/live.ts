/**
 * Live updates through /v1/ws, subscribed to every chat. A browser cannot set headers on a WebSocket, so the token
 * goes as the subprotocol `bearer.<token>` next to `inboxd.v1` (the server selects the latter). After a reconnect
 * the page resumes from the last eventID it handled (`since`): the server replays what it missed, so nothing needs
 * re-reading. Only when the server no longer has those events (`resync.required`), or the page never got one, are
 * listeners told to re-read what they show (`resync`).
 */
import type { Chat, Message } from "./api.ts";
import { currentToken } from "./api.ts";
import { refreshCredentials } from "./auth.ts";

export type LiveEvent =
  | { type: "message.upserted"; chatID: string; ids: string[]; entries?: Message[] }
  | { type: "message.deleted"; chatID: string; ids: string[] }
  | { type: "chat.upserted"; chatID: string; ids: string[]; entries?: Chat[] }
  | { type: "chat.deleted"; chatID: string; ids: string[] }
  | { type: "focus"; chatID: string; focus: { chatID?: string; messageID?: string; draftText?: string } }
  | { type: "typing"; chatID: string; typing: { participantID: string; state: "typing" | "paused" } }
  | { type: "account.upserted" | "account.deleted"; chatID: ""; ids: string[] }
  | { type: "resync" };

type Listener = (event: LiveEvent) => void;

const listeners = new Set<Listener>();
let socket: WebSocket | undefined;
let attempts = 0;
/** The newest logged event handled: where a reconnect resumes. */
let lastEventID: number | undefined;
let stopped = false;
/** The pending reconnection, if any (stopLive cancels it). */
let reconnect: ReturnType<typeof setTimeout> | undefined;
export let connected = false;
const statusListeners = new Set<(connected: boolean) => void>();

export function onLive(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function onLiveStatus(listener: (connected: boolean) => void): () => void {
  statusListeners.add(listener);
  return () => statusListeners.delete(listener);
}

const emit = (event: LiveEvent) => listeners.forEach((l) => l(event));
const setConnected = (value: boolean) => {
  connected = value;
  statusListeners.forEach((l) => l(value));
};

export function startLive() {
  stopped = false;
  const token = currentToken();
  if (!token || socket) return;
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/ws`;
  const ws = new WebSocket(url, ["inboxd.v1", `bearer.${token}`]);
  socket = ws;
  let opened = false;
  ws.onopen = () => {
    opened = true;
    ws.send(
      JSON.stringify({
        type: "subscriptions.set",
        chatIDs: ["*"],
        ...(lastEventID !== undefined ? { since: lastEventID } : {}),
      }),
    );
  };
  ws.onmessage = (message) => {
    const data = JSON.parse(String(message.data)) as { type: string; eventID?: number };
    if (typeof data.eventID === "number") lastEventID = data.eventID;
    if (data.type === "subscriptions.updated") {
      // A reconnect without a cursor could have missed anything.
      if (attempts > 0 && lastEventID === undefined) emit({ type: "resync" });
      attempts = 0;
      setConnected(true);
    } else if (data.type === "resync.required") {
      lastEventID = (data as { latestEventID?: number }).latestEventID;
      emit({ type: "resync" });
    } else if (data.type !== "ready" && data.type !== "error") emit(data as LiveEvent);
  };
  ws.onclose = async () => {
    // A socket already replaced (stopLive, then startLive) must not touch its successor.
    if (socket !== ws) return;
    socket = undefined;
    setConnected(false);
    if (stopped) return;
    // Refused before opening: most likely the token expired; renew it before trying again.
    if (!opened) await refreshCredentials(token);
    attempts++;
    reconnect = setTimeout(
      () => {
        reconnect = undefined;
        if (!stopped) startLive();
      },
      Math.min(30_000, 500 * 2 ** Math.min(attempts, 6)),
    );
  };
}

export function stopLive() {
  stopped = true;
  clearTimeout(reconnect);
  reconnect = undefined;
  socket?.close();
  socket = undefined;
}

const focusDrafts = new Map<string, string>();

/** Keeps a draft that POST /v1/focus handed over, for its chat's composer, which may not be on screen yet. */
export function keepFocusDraft(chatID: string, text: string) {
  focusDrafts.set(chatID, text);
}

/** The draft kept for a chat, once. */
export function takeFocusDraft(chatID: string): string | undefined {
  const text = focusDrafts.get(chatID);
  focusDrafts.delete(chatID);
  return text;
}
