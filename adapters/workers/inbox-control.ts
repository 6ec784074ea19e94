import type { SeedOptions } from "../../src/seed/dataset.ts";
import type { InboxLimits } from "../../src/tenancy.ts";

// What the registry (registry-object.ts) and an inbox's object (inbox-object.ts) tell each other, where a deployment
// holds many inboxes.

/** What the operator knows of one inbox (the registry's record; the inbox keeps a copy of status and limits). */
export interface InboxRecord {
  id: string;
  name?: string;
  createdAt: string;
  status: "active" | "suspended";
  limits: InboxLimits;
  /** The single-device deployment's inbox, adopted when the deployment went to many inboxes. */
  adopted?: boolean;
  /**
   * Set while the inbox fronts the person's own daemon instead of holding their data (docs/many-inboxes.md): the
   * SHA-256 of the pairing secret it dials in with (`relay_<inbox>.…`, shown once by the admin API).
   */
  relay?: { secretHash: string; since: string };
}

/** What the registry asks of an inbox's object (RPC), where a deployment holds many. */
export interface InboxControl {
  /** Makes this object the inbox `record` describes (with a sandbox dataset); false if it already is one. */
  tenancyCreate(record: InboxRecord, seed?: SeedOptions): Promise<boolean>;
  /** A changed status (suspension) or changed limits. */
  tenancyUpdate(record: InboxRecord): Promise<void>;
  /** A one-time sign-in code for the person's browser (`/oauth/login?code=…`). */
  tenancySignInCode(ttlMs: number): Promise<string>;
  tenancyUsage(): Promise<InboxUsage>;
  /** Deletes everything the inbox holds: its storage, its alarm, its sockets and its assets in R2. */
  tenancyDelete(): Promise<{ assetsDeleted: number }>;
}

/** Per-inbox counts on the admin API. */
export interface InboxUsage {
  accounts: number;
  chats: number;
  /** Message slots of every chat (deleted messages keep theirs). */
  messages: number;
  /** The object's SQLite database, in bytes (what the storage limit and Cloudflare's storage billing count). */
  storageBytes: number;
  /** HTTP requests and WebSocket upgrades since the inbox was created (saved at least every 10 s). */
  requests: number;
}
