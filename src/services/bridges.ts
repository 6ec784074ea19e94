import { ACCOUNT_RECORD_PARTS, type AccountRecords, type NetworkConnector } from "../bridges/connector.ts";
import type { LoginCapable, LoginResult } from "../bridges/login.ts";
import type { LoginSession } from "../bridges/login-sessions.ts";
import { ApiError, badRequest, clip, notFound } from "../errors.ts";
import { keys, type AccountRecord, type LoginRecord } from "../store/records.ts";
import { presentAccount } from "./accounts.ts";
import { callNetwork, type Context } from "./context.ts";

/**
 * Bridges (one per connector: `local-<network>`), their logins, and connecting, reconnecting and removing
 * accounts through login sessions.
 */
export const bridgeIDOf = (network: string) => `local-${network}`;

type Bridgeable = NetworkConnector & LoginCapable;

function requireBridge(ctx: Context, bridgeID: string): Bridgeable {
  const connector = ctx.bridges.connectors().find((c) => bridgeIDOf(c.network) === bridgeID);
  if (!connector || !("loginFlows" in connector)) {
    const known = ctx.bridges
      .connectors()
      .filter((c) => "loginFlows" in c)
      .map((c) => bridgeIDOf(c.network));
    throw new ApiError(
      404,
      "NOT_FOUND",
      `bridge ${clip(bridgeID, 100)} not found: the bridges are ${known.join(", ")} (GET /v1/bridges)`,
    );
  }
  return connector as Bridgeable;
}

const activeAccounts = (ctx: Context, network: string) =>
  ctx.db.accounts.filter((a) => a.network === network && a.status !== "disabled");

/** Where a deployment holds many inboxes: whether this one holds as many accounts as its operator allows. */
function inboxAccountLimitReached(ctx: Context): boolean {
  const max = ctx.tenancy?.limits?.maxAccounts;
  return max !== undefined && ctx.db.accounts.filter((a) => a.status !== "disabled").length >= max;
}

export function presentBridge(ctx: Context, connector: Bridgeable) {
  const accounts = ctx.db.accounts.filter((a) => a.network === connector.network);
  const active = activeAccounts(ctx, connector.network).length;
  const max = connector.bridge.maxAccounts;
  const status = active >= max ? "limit_reached" : active > 0 ? "connected" : "available";
  return {
    id: bridgeIDOf(connector.network),
    type: connector.network,
    provider: "local" as const,
    displayName: connector.displayName,
    network: connector.displayName,
    status,
    statusText:
      status === "limit_reached"
        ? `${connector.displayName} allows ${max} account${max === 1 ? "" : "s"} on this device`
        : status === "connected"
          ? `${active} account${active === 1 ? "" : "s"} connected`
          : "Ready to connect",
    supportsMultipleAccounts: max > 1,
    activeAccountCount: active,
    accounts: accounts.map((a) => presentAccount(a, ctx)),
  };
}

export function listBridges(ctx: Context) {
  const items = ctx.bridges
    .connectors()
    .filter((c): c is Bridgeable => "loginFlows" in c)
    .map((c) => presentBridge(ctx, c));
  return { items };
}

export const getBridge = (ctx: Context, bridgeID: string) => presentBridge(ctx, requireBridge(ctx, bridgeID));
export const bridgeCapabilities = (ctx: Context, bridgeID: string) => requireBridge(ctx, bridgeID).bridge.capabilities;
export const loginFlows = (ctx: Context, bridgeID: string) => ({ items: requireBridge(ctx, bridgeID).loginFlows() });

export function presentLogin(ctx: Context, login: LoginRecord) {
  const accounts = ctx.db.accounts.filter((a) => a.loginID === login.loginID);
  const statuses = new Set(accounts.map((a) => a.status));
  const status =
    accounts.length === 0
      ? "logged_out"
      : [...statuses].every((s) => s === "connected")
        ? "connected"
        : statuses.has("connecting") || statuses.has("backfilling")
          ? "connecting"
          : statuses.has("reconnect_required") ||
              statuses.has("connection_required") ||
              statuses.has("attention_required")
            ? "needs_login"
            : statuses.has("disconnected") || statuses.has("disabled")
              ? "logged_out"
              : "unknown";
  const out: Record<string, unknown> = {
    bridgeID: bridgeIDOf(login.network),
    loginID: login.loginID,
    status,
    removeScopes: ["current-device", "all-devices"],
    accountIDs: accounts.map((a) => a.accountID),
    user: login.user,
  };
  const text = accounts.find((a) => a.statusText)?.statusText;
  if (text) out.statusText = text;
  return out;
}

function requireLogin(ctx: Context, bridgeID: string, loginID: string): LoginRecord {
  const login = ctx.db.logins.find((l) => l.loginID === loginID && bridgeIDOf(l.network) === bridgeID);
  if (!login) throw notFound(`login ${loginID} on bridge ${bridgeID}`);
  return login;
}

export function listLogins(ctx: Context, bridgeID: string) {
  const connector = requireBridge(ctx, bridgeID);
  return { items: ctx.db.logins.filter((l) => l.network === connector.network).map((l) => presentLogin(ctx, l)) };
}

export const getLogin = (ctx: Context, bridgeID: string, loginID: string) =>
  presentLogin(ctx, requireLogin(ctx, bridgeID, loginID));

/** The LoginSession wire object: `currentStep` only while waiting, the account and login once complete. */
export function presentSession(ctx: Context, session: LoginSession) {
  const out: Record<string, unknown> = {
    bridgeID: session.bridgeID,
    loginSessionID: session.id,
    status: session.status,
  };
  if (session.step) out.currentStep = session.step;
  if (session.error) out.error = session.error;
  const loginID = session.outcome?.loginID ?? session.reauth?.loginID;
  if (loginID) out.loginID = loginID;
  const accountID = session.outcome?.accountIDs[0] ?? session.reauth?.accountID;
  if (accountID) out.accountID = accountID;
  if (session.outcome) {
    const account = ctx.db.account(session.outcome.accountIDs[0]);
    if (account) out.account = presentAccount(account, ctx);
    const login = ctx.db.logins.find((l) => l.loginID === session.outcome!.loginID);
    // The newer official clients read the login as `connection` (the same object, by their name for it).
    if (login) out.login = out.connection = presentLogin(ctx, login);
  }
  return out;
}

export async function startLoginSession(
  ctx: Context,
  bridgeID: string,
  input: { flowID?: string; accountID?: string; loginID?: string; clientHTTP?: boolean },
) {
  const connector = requireBridge(ctx, bridgeID);
  const flows = connector.loginFlows();
  const flowID = input.flowID ?? flows[0]?.id;
  if (!flowID || !flows.some((f) => f.id === flowID))
    throw badRequest(`unknown flowID ${input.flowID}`, [
      { code: "invalid_value", message: `one of ${flows.map((f) => f.id).join(", ")}`, path: ["body", "flowID"] },
    ]);
  let reauth: LoginSession["reauth"];
  let reauthAccounts: AccountRecord[] | undefined;
  if (input.accountID || input.loginID) {
    const account = input.accountID ? ctx.db.account(input.accountID) : undefined;
    if (input.accountID && (!account || account.network !== connector.network))
      throw notFound(`account ${input.accountID} on bridge ${bridgeID}`);
    const loginID = input.loginID ?? account!.loginID;
    if (account && account.loginID !== loginID)
      throw badRequest("accountID and loginID do not belong together", [
        { code: "invalid_value", message: "mismatch", path: ["body", "loginID"] },
      ]);
    requireLogin(ctx, bridgeID, loginID);
    reauth = { accountID: input.accountID, loginID };
    reauthAccounts = ctx.db.accounts.filter((a) => a.loginID === loginID);
  } else if (inboxAccountLimitReached(ctx)) {
    const max = ctx.tenancy!.limits!.maxAccounts!;
    throw new ApiError(
      409,
      "LIMIT_REACHED",
      `this inbox may hold ${max} account(s), the limit its operator set; remove one first (DELETE /v1/accounts/{accountID}/login) or ask the operator to raise it`,
      undefined,
      { "x-should-retry": "false" },
    );
  } else if (activeAccounts(ctx, connector.network).length >= connector.bridge.maxAccounts) {
    throw new ApiError(
      409,
      "LIMIT_REACHED",
      `${connector.displayName} allows ${connector.bridge.maxAccounts} account(s) on this device; remove one first`,
      undefined,
      { "x-should-retry": "false" },
    );
  }
  const process = await callNetwork(async () =>
    connector.createLogin(
      flowID,
      reauthAccounts,
      { clientHTTP: input.clientHTTP === true },
      ctx.db.accounts.filter((a) => a.network === connector.network),
    ),
  );
  return presentSession(ctx, await ctx.sessions.start(bridgeID, process, reauth));
}

/** Stores what a finished login yields (called by the session machine). */
export async function completeLogin(
  ctx: Context,
  session: LoginSession,
  result: LoginResult,
): Promise<{ loginID: string; accountIDs: string[] }> {
  const connector = requireBridge(ctx, session.bridgeID);
  const { db } = ctx;
  let login = session.reauth
    ? db.logins.find((l) => l.loginID === session.reauth!.loginID)
    : db.logins.find((l) => l.network === connector.network && l.remoteID === result.remoteID);
  if (session.reauth && !login)
    throw new ApiError(409, "LOGIN_REMOVED", "the login being reconnected was removed meanwhile");
  if (session.reauth && login && login.remoteID !== result.remoteID)
    throw new ApiError(422, "WRONG_ACCOUNT", "signed in as a different account than the one being reconnected");
  const existing = login ? db.accounts.filter((a) => a.loginID === login!.loginID) : [];
  const added = result.accounts.filter((a) => !existing.some((x) => x.remoteID === a.remoteID));
  if (session.reauth?.accountID) {
    const target = db.account(session.reauth.accountID);
    if (!target || !result.accounts.some((a) => a.remoteID === target.remoteID))
      throw new ApiError(422, "WRONG_ACCOUNT", "the login did not include the account being reconnected");
  }
  // Every account a login would add counts against the bridge's limit, whether the login is new or not.
  if (activeAccounts(ctx, connector.network).length + added.length > connector.bridge.maxAccounts)
    throw new ApiError(
      409,
      "LIMIT_REACHED",
      `${connector.displayName} allows ${connector.bridge.maxAccounts} account(s) on this device`,
    );
  if (!login) {
    login = {
      loginID: `${bridgeIDOf(connector.network)}_login_${randomID()}`,
      network: connector.network,
      remoteID: result.remoteID,
      user: result.user,
      createdAt: new Date(ctx.now()).toISOString(),
    };
    db.logins.push(login);
  }
  login.user = result.user;
  const accountIDs: string[] = [];
  for (const a of result.accounts) {
    let account = db.accounts.find((x) => x.loginID === login!.loginID && x.remoteID === a.remoteID);
    if (account) {
      // Reconnect in place: same accountID and history; keep what the connector already synced.
      await ctx.bridges.detach(account.accountID);
      account.user = a.user;
      account.origin = a.origin;
      account.state = { ...a.state, ...account.state, ...pickCredentials(a.state) };
      account.status = "connecting";
      account.statusText = undefined;
    } else {
      account = newAccount(connector, login.loginID, a);
      db.accounts.push(account);
    }
    // After the detach above: the client that kept the old records is stopped before they are replaced.
    if (a.records)
      for (let part = 0; part < ACCOUNT_RECORD_PARTS; part++) {
        const value = a.records.get(part);
        const key = keys.accountRecord(account.accountID, part);
        if (value === undefined) db.kv.remove(key);
        else db.kv.put(key, value);
      }
    accountIDs.push(account.accountID);
  }
  db.saveLogins();
  db.saveAccounts();
  await db.commit();
  for (const id of accountIDs) connectInBackground(ctx, db.account(id)!);
  // A reconnect names the account it was for first, so the session's accountID is that account.
  const wanted = session.reauth?.accountID;
  if (wanted) accountIDs.sort((a, b) => Number(b === wanted) - Number(a === wanted));
  return { loginID: login.loginID, accountIDs };
}

/** Connects in the background: the caller is done; the account reports backfilling, then connected. */
function connectInBackground(ctx: Context, account: AccountRecord) {
  const { db } = ctx;
  void ctx.bridges
    .attach(account)
    .then(
      async (client) => {
        if (account.status === "connecting" && !client?.reportsStatus) {
          account.status = "connected";
          db.saveAccounts();
          await db.commit();
        }
      },
      async (error: unknown) => {
        account.status = "connection_required";
        account.statusText = error instanceof Error ? error.message : "could not connect";
        db.saveAccounts();
        await db.commit();
      },
    )
    // Only a store that failed or closed meanwhile (the daemon stopping) gets here; the account reconnects on the
    // next start either way.
    .catch(() => undefined);
}

/** A new account of the login, as a finished login or the network hands it over; it connects once stored. */
function newAccount(connector: Bridgeable, loginID: string, a: LoginResult["accounts"][number]): AccountRecord {
  return {
    accountID: `local-${connector.network}_ba_${randomID()}`,
    network: connector.network,
    networkName: a.networkName ?? connector.displayName,
    user: a.user,
    loginID,
    remoteID: a.remoteID,
    status: "connecting",
    state: a.state,
    ...(a.origin ? { origin: a.origin } : {}),
  };
}

/**
 * Removing accounts deletes their chats and messages from this device: they go from every list and search. Their
 * connector records (a Matrix account's encryption keys) go with them.
 */
async function dropChatsOf(ctx: Context, accounts: AccountRecord[]) {
  for (const chat of [...ctx.db.chats.all()])
    if (accounts.some((a) => a.accountID === chat.accountID)) await ctx.db.dropChat(chat);
  for (const account of accounts)
    for (let part = 0; part < ACCOUNT_RECORD_PARTS; part++)
      ctx.db.kv.remove(keys.accountRecord(account.accountID, part));
}

/** ConnectorHost.records: an account's numbered parts, written through the store's commits like everything else. */
export function accountRecords(ctx: Context, account: AccountRecord): AccountRecords {
  const key = (part: number) => {
    if (!Number.isInteger(part) || part < 0 || part >= ACCOUNT_RECORD_PARTS)
      throw new RangeError(`an account record part is 0 to ${ACCOUNT_RECORD_PARTS - 1}, not ${part}`);
    return keys.accountRecord(account.accountID, part);
  };
  return {
    get: (part) => ctx.db.kv.get(key(part)),
    put: (part, value) => ctx.db.kv.put(key(part), value),
    commit: () => ctx.db.commit(),
  };
}

/**
 * ConnectorHost.setLoginAccounts: the login of `member` now holds `accounts` (the network added or removed some). A
 * new one is stored and connected; one gone is disconnected and removed with its chats; the rest take the new
 * user, network name and origin. The bridge's account limit applies to additions as to a login.
 */
export async function syncLoginAccounts(
  ctx: Context,
  member: AccountRecord,
  accounts: LoginResult["accounts"],
): Promise<string[]> {
  const { db } = ctx;
  const login = db.logins.find((l) => l.loginID === member.loginID);
  const connector = ctx.bridges.connectors().find((c) => c.network === member.network) as Bridgeable | undefined;
  if (!login || !connector) return [];
  const current = db.accounts.filter((a) => a.loginID === login.loginID);
  const gone = current.filter((a) => !accounts.some((x) => x.remoteID === a.remoteID));
  let room = connector.bridge.maxAccounts - activeAccounts(ctx, connector.network).length + gone.length;
  const added: AccountRecord[] = [];
  for (const a of accounts) {
    const existing = current.find((x) => x.remoteID === a.remoteID);
    if (existing) {
      existing.user = a.user;
      if (a.networkName) existing.networkName = a.networkName;
      if (a.origin) existing.origin = a.origin;
      continue;
    }
    if (room-- <= 0) continue;
    const account = newAccount(connector, login.loginID, a);
    db.accounts.push(account);
    added.push(account);
  }
  for (const account of gone) await ctx.bridges.detach(account.accountID);
  await dropChatsOf(ctx, gone);
  db.accounts = db.accounts.filter((a) => !gone.includes(a));
  db.saveAccounts();
  await db.commit();
  for (const account of added) connectInBackground(ctx, account);
  return db.accounts.filter((a) => a.loginID === login.loginID).flatMap((a) => (a.remoteID ? [a.remoteID] : []));
}

/** Connector state that a reconnect refreshes (credentials), as opposed to sync progress, which it keeps. */
function pickCredentials(state: Record<string, unknown>): Record<string, unknown> {
  const { synced: _synced, ...rest } = state;
  return rest;
}

export async function removeLogin(
  ctx: Context,
  bridgeID: string,
  loginID: string,
  scope: "current-device" | "all-devices",
) {
  const _login = requireLogin(ctx, bridgeID, loginID);
  const { db } = ctx;
  const accounts = db.accounts.filter((a) => a.loginID === loginID);
  for (const account of accounts) {
    // The network forgets this device (Matrix: POST /logout); a network that cannot be reached does not stop removal.
    await ctx.bridges
      .attached(account.accountID)
      ?.logout?.()
      .catch(() => undefined);
    await ctx.bridges.detach(account.accountID);
  }
  await dropChatsOf(ctx, accounts);
  db.accounts = db.accounts.filter((a) => a.loginID !== loginID);
  db.logins = db.logins.filter((l) => l.loginID !== loginID);
  db.saveAccounts();
  db.saveLogins();
  await db.commit();
  const removed = accounts.map((a) => a.accountID);
  return {
    bridgeID,
    loginID,
    scope,
    status: "removed" as const,
    affectedAccountIDs: removed,
    removedAccountIDs: removed,
    success: true as const,
  };
}

function randomID(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(15));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_");
}

/** A connector's own state for an account (keys, positions in the network's history), kept with the account. */
export async function saveAccountState(ctx: Context, account: AccountRecord, state: Record<string, unknown>) {
  account.state = state;
  ctx.db.saveAccounts();
  await ctx.db.commit();
}
