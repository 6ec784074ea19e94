/**
 * The 13 endpoints of the deprecated /v0 generation and the /v1 operation that replaced each (the spec's /v0 table
 * and its list of successors). One table, read by the routes (their documented successor), the deprecation headers
 * (the `Link` each answer carries) and `isV0Path`.
 */
export interface V0Endpoint {
  /** How /v0 is called: GET with a query, POST with a JSON body. */
  method: "GET" | "POST";
  /** The /v1 operation that replaced it: method and path, `{name}` for a path parameter. */
  successor: { method: "GET" | "POST" | "DELETE"; path: string };
}

export const V0_ENDPOINTS = {
  "get-accounts": { method: "GET", successor: { method: "GET", path: "/v1/accounts" } },
  search: { method: "GET", successor: { method: "GET", path: "/v1/search" } },
  "search-users": { method: "GET", successor: { method: "GET", path: "/v1/accounts/{accountID}/contacts" } },
  "get-chat": { method: "GET", successor: { method: "GET", path: "/v1/chats/{chatID}" } },
  "search-chats": { method: "GET", successor: { method: "GET", path: "/v1/chats/search" } },
  "search-messages": { method: "GET", successor: { method: "GET", path: "/v1/messages/search" } },
  "open-app": { method: "POST", successor: { method: "POST", path: "/v1/focus" } },
  "download-asset": { method: "POST", successor: { method: "POST", path: "/v1/assets/download" } },
  "create-chat": { method: "POST", successor: { method: "POST", path: "/v1/chats" } },
  "archive-chat": { method: "POST", successor: { method: "POST", path: "/v1/chats/{chatID}/archive" } },
  "set-chat-reminder": { method: "POST", successor: { method: "POST", path: "/v1/chats/{chatID}/reminders" } },
  "clear-chat-reminder": { method: "POST", successor: { method: "DELETE", path: "/v1/chats/{chatID}/reminders" } },
  "send-message": { method: "POST", successor: { method: "POST", path: "/v1/chats/{chatID}/messages" } },
} as const satisfies Record<string, V0Endpoint>;

export type V0Name = keyof typeof V0_ENDPOINTS;

/** Paths of the /v0 REST generation; the MCP transports (/v0/mcp, /v0/sse, /v0/messages) live under /v0 too. */
export function isV0Path(pathname: string): boolean {
  return /^\/v0(\/|$)/.test(pathname) && !/^\/v0\/(mcp|sse|messages)(\/|$)/.test(pathname);
}

/** The endpoint a /v0 path names, if it names one (whatever the method: a GET of a POST endpoint still has a successor). */
export function endpointAt(pathname: string): V0Name | undefined {
  const name = pathname.slice("/v0/".length);
  return Object.hasOwn(V0_ENDPOINTS, name) ? (name as V0Name) : undefined;
}
