import { parse, stringify } from "devalue";
import * as FakeIndexedDB from "fake-indexeddb";
import { ACCOUNT_RECORD_PARTS, type AccountRecords } from "../../../bridges/connector.ts";

const { IDBCursor, IDBDatabase, IDBFactory, IDBIndex, IDBKeyRange, IDBObjectStore, indexedDB } = FakeIndexedDB;

/**
 * Durable IndexedDB for the Rust crypto store, on both runtimes.
 *
 * Why: matrix-sdk-crypto-wasm keeps its state (device identity, Olm sessions, Megolm room keys…) only in IndexedDB,
 * which neither Node nor workerd has. fake-indexeddb (a complete IndexedDB in plain JS) stands in for it, in memory;
 * this journal makes it durable: every write to a database it watches marks that record dirty, and `flush` copies
 * the dirty records into the account's record parts, which the store commits all at once. `restore` puts them
 * back before the crypto store opens, schema first.
 *
 * Records are spread over the parts by a hash of store and key, so a flush rewrites only the parts that changed and
 * a start reads a fixed set of keys (no key listing, which scans on every storage driver). What is kept is what the
 * Rust store wrote, values already encrypted with its store key (see machine.ts).
 */

interface StoreSchema {
  keyPath: string | string[] | null;
  autoIncrement: boolean;
  indexes: { name: string; keyPath: string | string[]; unique: boolean; multiEntry: boolean }[];
}

interface DatabaseSchema {
  version: number;
  stores: Record<string, StoreSchema>;
}

/** One part as stored: its records (database, store, key → value, each devalue-encoded), and the schemas. */
interface Part {
  records: Record<string, string>;
  /** Only part 0 carries the schemas of the databases. */
  schemas?: Record<string, DatabaseSchema>;
}

/** Writes to watched databases: database name → record IDs (or "*" for a store rewritten whole). */
const dirtyByDatabase = new Map<string, Set<string>>();
/** Every open connection, by database: a store that failed to open leaves its connections behind (see restore). */
const connectionsByDatabase = new Map<string, Set<IDBDatabase>>();
let patched = false;

/** Makes fake-indexeddb the runtime's IndexedDB (the Rust store looks it up on the global object) and watches writes. */
export function installIndexedDB(): void {
  if (patched) return;
  patched = true;
  // Every export but the default is a name of the IndexedDB API (indexedDB, IDBFactory, IDBKeyRange…).
  for (const [name, value] of Object.entries(FakeIndexedDB))
    if (name !== "default")
      Object.defineProperty(globalThis, name, { value, configurable: true, writable: true, enumerable: false });

  const mark = (store: IDBObjectStore, key: IDBValidKey | "*") => {
    const dirty = dirtyByDatabase.get(store.transaction.db.name);
    dirty?.add(key === "*" ? `${store.name}\u0000*` : recordID(store.name, key));
  };
  const factory = IDBFactory.prototype;
  const originalOpen = factory.open;
  factory.open = function (this: IDBFactory, name: string, version?: number) {
    const request = original(this, name, version);
    request.addEventListener("success", () => {
      const connections = connectionsByDatabase.get(name) ?? new Set();
      connectionsByDatabase.set(name, connections.add(request.result));
    });
    return request;
  };
  const original = (f: IDBFactory, name: string, version?: number) =>
    version === undefined ? originalOpen.call(f, name) : originalOpen.call(f, name, version);
  const originalClose = IDBDatabase.prototype.close;
  IDBDatabase.prototype.close = function (this: IDBDatabase) {
    connectionsByDatabase.get(this.name)?.delete(this);
    return originalClose.call(this);
  };
  const proto = IDBObjectStore.prototype;
  for (const method of ["put", "add"] as const) {
    const original = proto[method];
    proto[method] = function (this: IDBObjectStore, ...args: [unknown, IDBValidKey?]) {
      const request = original.apply(this, args);
      request.addEventListener("success", () => mark(this, request.result));
      return request;
    } as typeof original;
  }
  const originalDelete = proto.delete;
  proto.delete = function (this: IDBObjectStore, query: IDBValidKey | IDBKeyRange) {
    mark(this, query instanceof IDBKeyRange ? "*" : query);
    return originalDelete.call(this, query);
  };
  const originalClear = proto.clear;
  proto.clear = function (this: IDBObjectStore) {
    mark(this, "*");
    return originalClear.call(this);
  };
  const cursor = IDBCursor.prototype;
  const storeOf = (c: IDBCursor) =>
    c.source instanceof IDBIndex ? c.source.objectStore : (c.source as IDBObjectStore);
  const originalUpdate = cursor.update;
  cursor.update = function (this: IDBCursor, value: unknown) {
    mark(storeOf(this), this.primaryKey);
    return originalUpdate.call(this, value);
  };
  const originalCursorDelete = cursor.delete;
  cursor.delete = function (this: IDBCursor) {
    mark(storeOf(this), this.primaryKey);
    return originalCursorDelete.call(this);
  };
}

function recordID(store: string, key: IDBValidKey): string {
  return `${store}\u0000${stringify(key)}`;
}

/** FNV-1a over the record's ID: which part it lives in. */
function partOf(database: string, id: string): number {
  let hash = 0x811c9dc5;
  const text = `${database}\u0001${id}`;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % ACCOUNT_RECORD_PARTS;
}

const request = <T>(r: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });

/** The databases of one account's crypto store: restored before it opens, flushed after each step it takes. */
export class IndexedDBJournal {
  private parts: Part[] = [];
  private loaded = false;
  private flushing: Promise<void> = Promise.resolve();
  /** Our own connections for reading what to flush: closed whenever the store wants a new version. */
  private readonly connections = new Map<string, IDBDatabase>();

  constructor(
    private readonly records: AccountRecords,
    /** The databases watched: the names the crypto store uses (its store name, then `::…`). */
    private readonly prefix: string,
  ) {}

  /** Reads every part and rebuilds the databases in memory, then starts watching them. */
  async restore(): Promise<void> {
    installIndexedDB();
    this.parts = await Promise.all(
      Array.from({ length: ACCOUNT_RECORD_PARTS }, async (_, part) => {
        const raw = (await this.records.get(part)) as Part | undefined | null;
        return raw && typeof raw === "object" && raw.records ? raw : { records: {} };
      }),
    );
    // Databases of another device of the account (signed in again as a new device) are dropped: that device is gone.
    const ours = new Set(this.names());
    const schemas = this.parts[0].schemas ?? {};
    for (const name of Object.keys(schemas))
      if (!ours.has(name)) {
        delete schemas[name];
        this.records.put(0, this.parts[0]);
      }
    const byDatabase = new Map<string, [string, string][]>();
    for (const [index, part] of this.parts.entries())
      for (const [id, value] of Object.entries(part.records)) {
        const split = id.indexOf("\u0001");
        const database = id.slice(0, split);
        if (!ours.has(database)) {
          delete part.records[id];
          this.records.put(index, part);
          continue;
        }
        if (!byDatabase.has(database)) byDatabase.set(database, []);
        byDatabase.get(database)!.push([id.slice(split + 1), value]);
      }
    // A database left over in memory (an account loaded again in the same process) is replaced by what is stored.
    // Connections still open to it are dead: the crypto store closes its own when it closes, but not when it fails
    // to open (a store key that does not fit), and the deletion would wait for them for ever.
    for (const name of ours) await dropDatabase(name);
    for (const [name, schema] of Object.entries(schemas)) {
      const open = indexedDB.open(name, schema.version);
      open.onupgradeneeded = () => {
        for (const [storeName, store] of Object.entries(schema.stores)) {
          const created = open.result.createObjectStore(storeName, {
            keyPath: store.keyPath,
            autoIncrement: store.autoIncrement,
          });
          for (const index of store.indexes)
            created.createIndex(index.name, index.keyPath, { unique: index.unique, multiEntry: index.multiEntry });
        }
      };
      const db = await request(open);
      const rows = byDatabase.get(name) ?? [];
      if (rows.length > 0) {
        const tx = db.transaction([...db.objectStoreNames], "readwrite");
        for (const [id, value] of rows) {
          const split = id.indexOf("\u0000");
          const store = tx.objectStore(id.slice(0, split));
          const key = parse(id.slice(split + 1)) as IDBValidKey;
          if (store.keyPath === null) store.put(parse(value), key);
          else store.put(parse(value));
        }
        await new Promise<void>((resolve, reject) => {
          tx.oncomplete = () => resolve();
          tx.onerror = () => reject(tx.error);
          tx.onabort = () => reject(tx.error ?? new Error("restoring the crypto store was aborted"));
        });
      }
      db.close();
    }
    this.loaded = true;
    this.watch();
  }

  /** Watches the account's databases, also ones the store creates after this (its first start). */
  private watch() {
    for (const name of this.names()) if (!dirtyByDatabase.has(name)) dirtyByDatabase.set(name, new Set());
  }

  private names(): string[] {
    return [`${this.prefix}::matrix-sdk-crypto`, `${this.prefix}::matrix-sdk-crypto-meta`];
  }

  /**
   * Copies what changed since the last flush into the record parts (put, not yet committed: the caller's commit
   * makes them durable with whatever else it writes, such as the sync position that depends on them).
   */
  async flush(): Promise<void> {
    // One flush at a time: a second one (a send's, during a sync's) finds the dirty set taken by the first and must
    // not report done (and let its caller commit) before the first has put its records.
    const turn = this.flushing.catch(() => undefined).then(() => this.flushNow());
    this.flushing = turn;
    return turn;
  }

  private async flushNow(): Promise<void> {
    if (!this.loaded) throw new Error("the crypto store's journal was flushed before it was restored");
    const touched = new Set<number>();
    const schemas: Record<string, DatabaseSchema> = { ...(this.parts[0].schemas ?? {}) };
    let schemaChanged = false;
    for (const name of this.names()) {
      const dirty = dirtyByDatabase.get(name);
      if (!dirty || dirty.size === 0) continue;
      dirtyByDatabase.set(name, new Set());
      const db = await this.connection(name);
      if (!db) continue;
      const schema = schemaOf(db);
      if (JSON.stringify(schema) !== JSON.stringify(schemas[name])) {
        schemas[name] = schema;
        schemaChanged = true;
      }
      const stores = new Set([...dirty].map((id) => id.slice(0, id.indexOf("\u0000"))));
      const present = [...stores].filter((store) => db.objectStoreNames.contains(store));
      const tx = present.length > 0 ? db.transaction(present, "readonly") : undefined;
      const reads: Promise<void>[] = [];
      for (const id of dirty) {
        const split = id.indexOf("\u0000");
        const storeName = id.slice(0, split);
        const encodedKey = id.slice(split + 1);
        if (encodedKey === "*") {
          reads.push(this.rewriteStore(name, storeName, tx, touched));
          continue;
        }
        const store = tx && db.objectStoreNames.contains(storeName) ? tx.objectStore(storeName) : undefined;
        reads.push(
          (store ? request(store.get(parse(encodedKey) as IDBValidKey)) : Promise.resolve(undefined)).then((value) =>
            this.set(name, id, value, touched),
          ),
        );
      }
      await Promise.all(reads);
      // A store the schema no longer has (a migration dropped it): its records go too.
      for (const part of this.parts)
        for (const id of Object.keys(part.records)) {
          const [database, rest] = [id.slice(0, id.indexOf("\u0001")), id.slice(id.indexOf("\u0001") + 1)];
          if (database === name && !db.objectStoreNames.contains(rest.slice(0, rest.indexOf("\u0000")))) {
            delete part.records[id];
            touched.add(this.parts.indexOf(part));
          }
        }
    }
    if (schemaChanged) {
      this.parts[0].schemas = schemas;
      touched.add(0);
    }
    for (const part of touched) this.records.put(part, this.parts[part]);
  }

  private set(database: string, id: string, value: unknown, touched: Set<number>) {
    const part = partOf(database, id);
    const records = this.parts[part].records;
    const full = `${database}\u0001${id}`;
    if (value === undefined) {
      if (!(full in records)) return;
      delete records[full];
    } else records[full] = stringify(value);
    touched.add(part);
  }

  /** A store cleared or range-deleted: what it holds now replaces every record of it. */
  private async rewriteStore(
    database: string,
    storeName: string,
    tx: IDBTransaction | undefined,
    touched: Set<number>,
  ) {
    const prefix = `${database}\u0001${storeName}\u0000`;
    for (const [index, part] of this.parts.entries())
      for (const id of Object.keys(part.records))
        if (id.startsWith(prefix)) {
          delete part.records[id];
          touched.add(index);
        }
    if (!tx?.objectStoreNames.contains(storeName)) return;
    const store = tx.objectStore(storeName);
    const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
    keys.forEach((key, i) => this.set(database, recordID(storeName, key), values[i], touched));
  }

  private async connection(name: string): Promise<IDBDatabase | undefined> {
    const open = this.connections.get(name);
    if (open) return open;
    const known = (await indexedDB.databases()).some((d) => d.name === name);
    if (!known) return undefined;
    const db = await request(indexedDB.open(name));
    db.onversionchange = () => {
      db.close();
      if (this.connections.get(name) === db) this.connections.delete(name);
    };
    this.connections.set(name, db);
    return db;
  }

  /** Stops watching and closes this journal's connections (the account is unloaded; its data stays stored). */
  close(): void {
    for (const db of this.connections.values()) db.close();
    this.connections.clear();
    for (const name of this.names()) dirtyByDatabase.delete(name);
  }

  /** Closes, then deletes the databases from memory: a store never handed to an account (an abandoned login). */
  async discard(): Promise<void> {
    this.close();
    for (const name of this.names()) await dropDatabase(name);
  }
}

/** Deletes a database from memory, closing its connections first (the deletion would wait for them for ever). */
async function dropDatabase(name: string): Promise<void> {
  for (const connection of connectionsByDatabase.get(name) ?? []) connection.close();
  await request(indexedDB.deleteDatabase(name));
}

function schemaOf(db: IDBDatabase): DatabaseSchema {
  const stores: Record<string, StoreSchema> = {};
  const names = [...db.objectStoreNames];
  if (names.length === 0) return { version: db.version, stores };
  const tx = db.transaction(names, "readonly");
  for (const name of names) {
    const store = tx.objectStore(name);
    stores[name] = {
      keyPath: store.keyPath as StoreSchema["keyPath"],
      autoIncrement: store.autoIncrement,
      indexes: [...store.indexNames].map((indexName) => {
        const index = store.index(indexName);
        return {
          name: indexName,
          keyPath: index.keyPath as string | string[],
          unique: index.unique,
          multiEntry: index.multiEntry,
        };
      }),
    };
  }
  return { version: db.version, stores };
}
