import type BeeperDesktop from "@beeper/desktop-api";
import type { LoginResult } from "../../bridges/login.ts";
import type { User } from "../../schema/wire.ts";
import type { DesktopApiState, UpstreamAuth } from "./state.ts";

interface UpstreamAccount {
  accountID: string;
  user: User;
  network?: string;
  bridge: { id: string; provider: "cloud" | "self-hosted" | "local" | "platform-sdk"; type: string };
  via?: { servers?: string[] };
  /** inboxd says how each account's own connection stands; the desktop app does not. */
  status?: string;
  statusText?: string;
}

/**
 * The upstream's accounts as accounts of the login. An account that passed through this inboxd on its way there
 * (its `via.servers` names `self`) is left out and named in `looped`: importing it would send its messages round
 * in a circle.
 */
export async function upstreamAccounts(
  sdk: BeeperDesktop,
  baseURL: string,
  auth: UpstreamAuth,
  instanceID: string | undefined,
  self: string,
) {
  const list = (await sdk.accounts.list()) as unknown as UpstreamAccount[];
  const accounts: LoginResult["accounts"] = [];
  const looped: string[] = [];
  const statuses = new Map<string, { status: string; statusText?: string }>();
  for (const a of list) {
    const servers = [...(instanceID ? [instanceID] : []), ...(a.via?.servers ?? [])];
    if (a.via?.servers?.includes(self)) {
      looped.push(a.accountID);
      continue;
    }
    if (a.status)
      statuses.set(a.accountID, { status: a.status, ...(a.statusText ? { statusText: a.statusText } : {}) });
    const state: DesktopApiState = {
      baseURL,
      auth,
      upstreamAccountID: a.accountID,
      ...(instanceID ? { instanceID } : {}),
    };
    accounts.push({
      remoteID: a.accountID,
      user: { ...a.user, isSelf: true },
      networkName: a.network ?? a.bridge?.type,
      state: state as unknown as Record<string, unknown>,
      origin: { bridge: a.bridge, accountID: a.accountID, servers },
    });
  }
  return { accounts, looped, statuses };
}
