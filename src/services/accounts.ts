import type { NetworkClient } from "../bridges/connector.ts";
import { ApiError } from "../errors.ts";
import type { Account, Page, User } from "../schema/wire.ts";
import type { AccountRecord } from "../store/records.ts";
import { callNetwork, requireAccount, unsupported, type Context } from "./context.ts";
import { decodeCursor, encodeCursor, fingerprint } from "./cursor.ts";
import { presentUser } from "./present.ts";

/**
 * What an account's network lets a client do, from the optional methods its connected client has (the contract's
 * way of declaring features, src/bridges/connector.ts). Absent while the account has no connected client.
 */
export function accountCapabilities(client: NetworkClient | undefined): Record<string, boolean> | undefined {
  if (!client) return undefined;
  return {
    sendMessages: true,
    editMessages: client.edit !== undefined,
    deleteMessages: client.delete !== undefined,
    // Deleting only on this device needs nothing from the network.
    deleteMessagesForMe: true,
    reactions: client.react !== undefined,
    markRead: client.markRead !== undefined,
    createChats: client.createChat !== undefined,
    startChats: client.resolveIdentifier !== undefined,
    searchContacts: client.searchContacts !== undefined,
    listContacts: client.listContacts !== undefined,
    downloadMedia: client.downloadMedia !== undefined,
    typing: client.setTyping !== undefined,
    // PATCH /v1/chats/{id} `imgURL` and `messageExpirySeconds` (422 NOT_SUPPORTED where false).
    chatPictures: client.setChatAvatar !== undefined,
    messageExpiry: client.setMessageExpiry !== undefined,
    // POST /v1/chats/{id}/notify-anyway (422 NOT_SUPPORTED where false).
    notifyAnyway: client.notifyAnyway !== undefined,
  };
}

/**
 * The Account wire object. With the context, it carries `capabilities` too; every place that answers accounts
 * (accounts, bridges, login sessions) passes it, so an account reads the same wherever a client meets it.
 */
export function presentAccount(a: AccountRecord, ctx?: Context): Account {
  const out: Account = {
    accountID: a.accountID,
    user: { ...a.user, isSelf: true },
    // An account through another server keeps its bridge type there; `self-hosted` says it is not on this device.
    bridge: {
      id: `local-${a.network}`,
      provider: a.origin ? "self-hosted" : "local",
      type: a.origin?.bridge.type ?? a.network,
    },
    status: a.status,
    network: a.networkName,
    loginID: a.loginID,
  };
  if (a.origin)
    out.via = {
      bridge: a.origin.bridge,
      accountID: a.origin.accountID,
      servers: a.origin.servers,
      ...(a.origin.iconURL ? { iconURL: a.origin.iconURL } : {}),
    };
  if (a.statusText) out.statusText = a.statusText;
  const capabilities = ctx && accountCapabilities(connectedClient(ctx, a.accountID));
  if (capabilities) out.capabilities = capabilities;
  return out;
}

/** The account's client, or undefined while it has none (the runtime answers that case with a 503 error). */
function connectedClient(ctx: Context, accountID: string): NetworkClient | undefined {
  try {
    return ctx.bridges.client(accountID);
  } catch (error) {
    if (error instanceof ApiError) return undefined;
    throw error;
  }
}

export function listAccounts(ctx: Context): Account[] {
  return ctx.db.accounts.map((a) => presentAccount(a, ctx));
}

export function getAccount(ctx: Context, accountID: string): Account {
  return presentAccount(requireAccount(ctx, accountID), ctx);
}

/** Network search plus exact identifier lookup, merged and de-duplicated. */
export async function searchContacts(ctx: Context, accountID: string, query: string): Promise<{ items: User[] }> {
  requireAccount(ctx, accountID);
  const client = ctx.bridges.client(accountID);
  if (!client.searchContacts) throw unsupported("contact search");
  const [found, exact] = await Promise.all([
    callNetwork(() => client.searchContacts!(query)),
    client.resolveIdentifier
      ? callNetwork(() => client.resolveIdentifier!({ id: query, username: query, email: query, phoneNumber: query }))
      : null,
  ]);
  const items = exact ? [exact, ...found.filter((u) => u.id !== exact.id)] : found;
  return { items: items.map(presentUser) };
}

/** Contacts sorted by name; cursors are positions (name, id) in that order. */
export async function listContacts(
  ctx: Context,
  accountID: string,
  q: { cursor?: string; direction?: "before" | "after"; limit?: number; query?: string },
): Promise<Page<User>> {
  requireAccount(ctx, accountID);
  const client = ctx.bridges.client(accountID);
  if (!client.listContacts) throw unsupported("contact lists");
  const scope = fingerprint([accountID, q.query ?? ""]);
  const limit = q.limit ?? 50;
  const needle = q.query?.toLowerCase();
  const key = (u: User) => `${(u.fullName ?? u.username ?? u.id).toLowerCase()}\u0000${u.id}`;
  const all = (await callNetwork(() => client.listContacts!()))
    .filter(
      (u) =>
        !needle ||
        [u.fullName, u.username, u.email, u.phoneNumber, u.id].some((f) => f?.toLowerCase().includes(needle)),
    )
    .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  let start = 0,
    end = all.length;
  if (q.cursor) {
    const [pos] = decodeCursor(q.cursor, "contacts", scope, 1) as string[];
    const at = all.findIndex((u) => key(u) >= pos);
    const idx = at < 0 ? all.length : at;
    if ((q.direction ?? "before") === "before") start = idx < all.length && key(all[idx]) === pos ? idx + 1 : idx;
    else end = idx;
  }
  const after = q.cursor && q.direction === "after";
  const slice = after ? all.slice(Math.max(start, end - limit), end) : all.slice(start, start + limit);
  const hasMore = after ? end - limit > start : start + limit < end;
  return {
    items: slice.map(presentUser),
    hasMore,
    oldestCursor: slice.length ? encodeCursor("contacts", scope, [key(slice[slice.length - 1])]) : null,
    newestCursor: slice.length ? encodeCursor("contacts", scope, [key(slice[0])]) : null,
  };
}
