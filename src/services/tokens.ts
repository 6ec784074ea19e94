import { secretHint } from "../tenancy.ts";
import { randomSecret } from "../util/encoding.ts";
import type { Storage } from "unstorage";
import { keys, type TokenRecord } from "../store/records.ts";

/**
 * Access tokens. Only a SHA-256 of each token is stored (`tok:<hex>`); the token itself is shown once, at creation.
 * Verification is remembered for at most a second (see TokenVerifier), so `inboxd token revoke` run in another
 * process takes effect within a second while the daemon runs.
 */
export type Scope = "read" | "write";

export async function hashToken(token: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export interface TokenOptions {
  name?: string;
  scopes?: Scope[];
  expiresAt?: number;
  clientID?: string;
  clientName?: string;
  /** The inbox the token names (src/tenancy.ts), where a deployment holds many. */
  inbox?: string;
}

export async function createToken(
  storage: Storage,
  options: TokenOptions = {},
): Promise<{ token: string; record: TokenRecord; id: string }> {
  const token = randomSecret("inbx", options.inbox);
  const { id, record } = await storeToken(storage, token, options);
  return { token, record, id };
}

async function storeToken(
  storage: Storage,
  token: string,
  options: TokenOptions,
): Promise<{ id: string; record: TokenRecord }> {
  const id = await hashToken(token);
  const record: TokenRecord = {
    name: options.name ?? "token",
    scopes: options.scopes?.length ? [...new Set(options.scopes)] : ["read", "write"],
    createdAt: new Date().toISOString(),
    hint: secretHint(token),
    ...(options.expiresAt !== undefined ? { expiresAt: options.expiresAt } : {}),
    ...(options.clientID ? { clientID: options.clientID, clientName: options.clientName } : {}),
  };
  await storage.setItem(keys.token(id), record);
  return { id, record };
}

export async function verifyToken(
  storage: Storage,
  token: string,
  now = Date.now(),
): Promise<(TokenRecord & { id: string }) | undefined> {
  if (!token || token.length > 200) return undefined;
  const id = await hashToken(token);
  const record = await storage.getItem<TokenRecord>(keys.token(id));
  if (!record || (record.expiresAt !== undefined && record.expiresAt <= now)) return undefined;
  return { ...record, id };
}

export async function listTokens(storage: Storage): Promise<(TokenRecord & { id: string })[]> {
  const ids = await storage.getKeys(keys.tokenPrefix);
  const out: (TokenRecord & { id: string })[] = [];
  for (const key of ids) {
    const record = await storage.getItem<TokenRecord>(key);
    if (record) out.push({ ...record, id: key.slice(keys.tokenPrefix.length) });
  }
  return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** Removes the token whose ID (its hash) is `id`, if there is one: OAuth revocation, the token routes, the Worker. */
export const removeTokenByID = (storage: Storage, id: string) => storage.removeItem(keys.token(id));

/** Whether a token with this ID (its hash) exists, expired or not. */
export const tokenExists = (storage: Storage, id: string) => storage.hasItem(keys.token(id));

/** Revokes by id (the hash, or an unambiguous prefix of it) or by name. Returns how many were revoked. */
export async function revokeToken(storage: Storage, idOrName: string): Promise<number> {
  const all = await listTokens(storage);
  let matches = all.filter((t) => t.name === idOrName || t.id === idOrName);
  if (matches.length === 0 && idOrName.length >= 6) matches = all.filter((t) => t.id.startsWith(idOrName));
  // An ID prefix shared by several tokens revokes none: which was meant is a guess.
  if (matches.length > 1 && !matches.some((t) => t.name === idOrName)) return 0;
  for (const t of matches) await removeTokenByID(storage, t.id);
  return matches.length;
}

/** Makes sure a known token (e.g. a Worker secret) is accepted; stores only its hash. */
export async function ensureToken(
  storage: Storage,
  token: string,
  options: { name?: string; scopes?: Scope[] } = {},
): Promise<void> {
  if (await storage.hasItem(keys.token(await hashToken(token)))) return;
  await storeToken(storage, token, options);
}

/**
 * Verifies tokens, remembering each answer for `ttlMs`. Hashing with WebCrypto and reading the record cost about a
 * fifth of a cheap request's CPU time; the memory holds only what a request already carried, and is never persisted.
 */
export class TokenVerifier {
  private readonly recent = new Map<string, { record: (TokenRecord & { id: string }) | undefined; at: number }>();

  constructor(
    private readonly storage: Storage,
    private readonly ttlMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  async verify(token: string): Promise<(TokenRecord & { id: string }) | undefined> {
    const hit = this.recent.get(token);
    if (hit && this.now() - hit.at < this.ttlMs)
      return hit.record && !(hit.record.expiresAt !== undefined && hit.record.expiresAt <= this.now())
        ? hit.record
        : undefined;
    const record = await verifyToken(this.storage, token, this.now());
    if (this.recent.size >= 1000) this.recent.clear();
    this.recent.set(token, { record, at: this.now() });
    return record;
  }
}
