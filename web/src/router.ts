import { useEffect, useState } from "preact/hooks";

/**
 * Hash routes, so every view has an address (back/forward work, a reload stays put) while the server serves one
 * page: `#/` the inbox, `#/chat/<chatID>` a chat (`?message=<id>` opens it at that message), `#/accounts`,
 * `#/accounts/<bridgeID>/connect`, `#/settings`.
 */
export interface Route {
  view: "inbox" | "accounts" | "settings";
  chatID?: string;
  messageID?: string;
  bridgeID?: string;
  /** A login to reconnect (account ID), for the wizard. */
  accountID?: string;
}

export function parseRoute(hash: string): Route {
  const [path, search] = hash.replace(/^#/, "").split("?");
  const query = new URLSearchParams(search ?? "");
  const parts = (path ?? "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "chat" && parts[1])
    return { view: "inbox", chatID: parts[1], messageID: query.get("message") ?? undefined };
  if (parts[0] === "accounts")
    return {
      view: "accounts",
      bridgeID: parts[2] === "connect" ? parts[1] : undefined,
      accountID: query.get("account") ?? undefined,
    };
  if (parts[0] === "settings") return { view: "settings" };
  return { view: "inbox" };
}

export const chatHref = (chatID: string, messageID?: string) =>
  `#/chat/${encodeURIComponent(chatID)}${messageID ? `?message=${encodeURIComponent(messageID)}` : ""}`;
export const connectHref = (bridgeID: string, accountID?: string) =>
  `#/accounts/${encodeURIComponent(bridgeID)}/connect${accountID ? `?account=${encodeURIComponent(accountID)}` : ""}`;

export function navigate(href: string) {
  if (location.hash !== href) location.hash = href;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return route;
}
