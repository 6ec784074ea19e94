import type { Storage } from "unstorage";
import { base64url, fromBase64url, randomSecret } from "../util/encoding.ts";
import { hashToken } from "../services/tokens.ts";

/**
 * The authorization server's records, next to the access tokens in the same storage (so that the CLI, writing to the
 * data directory from another process, and the daemon see one store). Every secret is stored as its SHA-256 only:
 * authorization codes, refresh tokens, one-time sign-in codes and owner sessions.
 */
export interface ClientRecord {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  createdAt: string;
  /** A client whose client_id is its metadata URL (src/oauth/client-metadata.ts): when the document was read. */
  metadataFetchedAt?: number;
}

export interface CodeRecord {
  clientID: string;
  redirectURI: string;
  scopes: ("read" | "write")[];
  resource?: string;
  challenge: string;
  expiresAt: number;
  /** Set once exchanged: a second exchange revokes what the first issued (RFC 6749 §4.1.2). */
  family?: string;
}

export interface RefreshRecord {
  clientID: string;
  clientName: string;
  scopes: ("read" | "write")[];
  family: string;
  /** Set once rotated: presenting it again revokes the whole family (a stolen refresh token). */
  used?: boolean;
  createdAt: number;
}

/** Everything one authorization's grant issued, through its refreshes: revoked together. */
export interface FamilyRecord {
  tokenIDs: string[];
  refreshIDs: string[];
  /** When the authorization was exchanged for its first tokens (ms since epoch; absent in families made before). */
  createdAt?: number;
}

export interface SessionRecord {
  expiresAt: number;
  csrf: string;
}

const prefix = { code: "oauth:code:", refresh: "oauth:refresh:" };
const key = {
  client: (id: string) => `oauth:client:${id}`,
  code: (hash: string) => `${prefix.code}${hash}`,
  refresh: (hash: string) => `${prefix.refresh}${hash}`,
  family: (id: string) => `oauth:family:${id}`,
  signIn: (hash: string) => `oauth:signin:${hash}`,
  session: (hash: string) => `oauth:session:${hash}`,
};

/**
 * A client ID that is its own registration (`client.<base64url JSON>`): what registration answers where inboxes
 * share a deployment, since the app registers before anyone has signed in, so no inbox is there to keep the record.
 * It holds nothing a client could not have registered itself, so it needs no signature.
 */
const SELF_CONTAINED = "client.";

export function selfContainedClientID(client: Omit<ClientRecord, "client_id">): string {
  return (
    SELF_CONTAINED + base64url(JSON.stringify({ n: client.client_name, r: client.redirect_uris, t: client.createdAt }))
  );
}

function readSelfContained(id: string): ClientRecord | null {
  try {
    const { n, r, t } = JSON.parse(fromBase64url(id.slice(SELF_CONTAINED.length))) as {
      n: unknown;
      r: unknown;
      t: unknown;
    };
    // What registration accepts (src/oauth/index.ts), so an ID made by hand is held to the same bounds.
    if (
      typeof n !== "string" ||
      n.length > 100 ||
      !Array.isArray(r) ||
      r.length < 1 ||
      r.length > 10 ||
      !r.every((u) => typeof u === "string" && u.length <= 2000) ||
      typeof t !== "string"
    )
      return null;
    return { client_id: id, client_name: n, redirect_uris: r, createdAt: t };
  } catch {
    return null;
  }
}

export class OAuthStore {
  /**
   * `inbox`: the inbox the secrets minted here name, where a deployment holds many (src/tenancy.ts);
   * `selfContainedClients`: whether client IDs that are their own registration are read (only there: a single
   * device keeps registering clients, and answers invalid_client for one it does not know).
   */
  constructor(
    private readonly storage: Storage,
    private readonly now: () => number,
    readonly inbox?: string,
    private readonly selfContainedClients = false,
  ) {}

  /** A new secret of this kind (`code`, `inbr`…), naming this store's inbox where there is one. */
  secret = (kind: string) => randomSecret(kind, this.inbox);

  client = async (id: string) =>
    id.startsWith(SELF_CONTAINED)
      ? this.selfContainedClients
        ? readSelfContained(id)
        : null
      : this.storage.getItem<ClientRecord>(key.client(id));
  saveClient = (client: ClientRecord) => this.storage.setItem(key.client(client.client_id), client);

  async saveCode(code: string, record: CodeRecord) {
    await this.storage.setItem(key.code(await hashToken(code)), record);
  }

  /** The code's record, marked used by this call (the caller learns whether it was already). */
  async takeCode(code: string): Promise<{ record: CodeRecord; replayed: boolean } | undefined> {
    if (!code || code.length > 200) return undefined;
    const k = key.code(await hashToken(code));
    const record = await this.storage.getItem<CodeRecord>(k);
    if (!record) return undefined;
    if (record.family) return { record, replayed: true };
    record.family = crypto.randomUUID();
    await this.storage.setItem(k, record);
    return { record, replayed: false };
  }

  async saveRefresh(token: string, record: RefreshRecord): Promise<string> {
    const id = await hashToken(token);
    await this.storage.setItem(key.refresh(id), record);
    return id;
  }

  async refresh(token: string): Promise<{ id: string; record: RefreshRecord } | undefined> {
    if (!token || token.length > 200) return undefined;
    const id = await hashToken(token);
    const record = await this.storage.getItem<RefreshRecord>(key.refresh(id));
    return record ? { id, record } : undefined;
  }

  markRefreshUsed = async (id: string, record: RefreshRecord) =>
    this.storage.setItem(key.refresh(id), { ...record, used: true });

  async addToFamily(family: string, add: { tokenID?: string; refreshID?: string }) {
    const record = (await this.family(family)) ?? { tokenIDs: [], refreshIDs: [], createdAt: this.now() };
    if (add.tokenID) record.tokenIDs.push(add.tokenID);
    if (add.refreshID) record.refreshIDs.push(add.refreshID);
    await this.storage.setItem(key.family(family), record);
  }

  family = (id: string) => this.storage.getItem<FamilyRecord>(key.family(id));

  /** Revokes every access and refresh token the family holds. */
  async revokeFamily(family: string, removeToken: (id: string) => Promise<void>) {
    const record = await this.family(family);
    if (!record) return;
    for (const id of record.tokenIDs) await removeToken(id);
    for (const id of record.refreshIDs) await this.storage.removeItem(key.refresh(id));
    await this.storage.removeItem(key.family(family));
  }

  /**
   * Every refresh record, used ones too, with its id. A scan of the store: for the settings pages
   * (GET /v1/authorized-apps), never on a request's hot path.
   */
  refreshRecords = () => this.scan<RefreshRecord>(prefix.refresh);

  /**
   * Ends every grant of a client: each family its refresh records belong to (their access and refresh tokens), the
   * refresh records themselves, and its codes not exchanged yet. The client's registration stays, so it may ask for
   * consent again. Access tokens outside a family are the caller's to remove (they live in the token store).
   */
  async revokeClient(clientID: string, removeToken: (id: string) => Promise<void>) {
    const refreshes = (await this.refreshRecords()).filter((r) => r.record.clientID === clientID);
    for (const family of new Set(refreshes.map((r) => r.record.family))) await this.revokeFamily(family, removeToken);
    for (const r of refreshes) await this.storage.removeItem(key.refresh(r.id));
    for (const c of await this.scan<CodeRecord>(prefix.code))
      if (c.record.clientID === clientID) await this.storage.removeItem(key.code(c.id));
  }

  private async scan<T>(under: string): Promise<{ id: string; record: T }[]> {
    const out: { id: string; record: T }[] = [];
    for (const k of await this.storage.getKeys(under)) {
      const record = await this.storage.getItem<T>(k);
      if (record) out.push({ id: k.slice(under.length), record });
    }
    return out;
  }

  async removeRefresh(token: string): Promise<RefreshRecord | undefined> {
    const found = await this.refresh(token);
    if (found) await this.storage.removeItem(key.refresh(found.id));
    return found?.record;
  }

  /** A one-time sign-in code for the owner's browser (what `inboxd open` and `serve` print), valid for `ttlMs`. */
  async createSignIn(ttlMs: number): Promise<string> {
    const code = this.secret("signin");
    await this.storage.setItem(key.signIn(await hashToken(code)), { expiresAt: this.now() + ttlMs });
    return code;
  }

  /** Consumes a sign-in code: true once, for a code that exists and has not expired. */
  async useSignIn(code: string): Promise<boolean> {
    if (!code || code.length > 200) return false;
    const k = key.signIn(await hashToken(code));
    const record = await this.storage.getItem<{ expiresAt: number }>(k);
    if (!record) return false;
    await this.storage.removeItem(k);
    return record.expiresAt > this.now();
  }

  async createSession(ttlMs: number): Promise<{ id: string; record: SessionRecord }> {
    const id = this.secret("session");
    const record = { expiresAt: this.now() + ttlMs, csrf: randomSecret("csrf") };
    await this.storage.setItem(key.session(await hashToken(id)), record);
    return { id, record };
  }

  async session(id: string | undefined): Promise<SessionRecord | undefined> {
    if (!id || id.length > 200) return undefined;
    const record = await this.storage.getItem<SessionRecord>(key.session(await hashToken(id)));
    return record && record.expiresAt > this.now() ? record : undefined;
  }
}
