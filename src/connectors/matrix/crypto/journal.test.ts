import * as lib from "@matrix-org/matrix-sdk-crypto-wasm";
import { createStorage, type Storage } from "unstorage";
import { beforeAll, describe, expect, it } from "vitest";
import type { AccountRecords } from "../../../bridges/connector.ts";
import { Db } from "../../../store/db.ts";
import { IndexedDBJournal, installIndexedDB } from "./journal.ts";
import { MatrixCrypto, newStoreKey } from "./machine.ts";
import type { MatrixHttp } from "../http.ts";

// The journal against the real Rust crypto store and a real store (unstorage's memory driver under inboxd's Db, as
// an account's records are kept); each "restart" opens the Db again on the same storage and forgets the databases.

/** An account's record parts in a Db, the way services/bridges.ts keeps them (the keys differ: no account here). */
function recordsIn(db: Db): AccountRecords {
  return {
    get: (part) => db.kv.get(`journal-test:${part}`),
    put: (part, value) => db.kv.put(`journal-test:${part}`, value),
    commit: () => db.commit(),
  };
}

/** What `open` may not touch: it only reads and writes the store; the homeserver is for syncs and sends. */
const noHomeserver = new Proxy({} as MatrixHttp, {
  get: (_, name) => {
    throw new Error(`opening the crypto store used the homeserver (${String(name)})`);
  },
});

const request = <T>(r: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });

/** Forgets every database in memory: what a new process (or an evicted Durable Object) starts with. */
async function forgetDatabases() {
  for (const { name } of await indexedDB.databases()) if (name) await request(indexedDB.deleteDatabase(name));
}

async function openDevice(storage: Storage, storeName: string, storeKey: string) {
  return MatrixCrypto.open({
    lib,
    userID: "@alice:journal.test",
    deviceID: "JOURNALDEV",
    storeName,
    storeKey,
    records: recordsIn(await Db.open(storage)),
    http: noHomeserver,
  });
}

describe("the crypto store's journal", () => {
  beforeAll(async () => {
    await lib.initAsync();
    installIndexedDB();
  });

  it("keeps a device's identity across a restart, and only with its store key", async () => {
    const storage = createStorage();
    const storeKey = newStoreKey();
    const first = await openDevice(storage, "journal-identity", storeKey);
    const identity = first.fingerprint;
    first.close();
    await forgetDatabases();

    // The values are the Rust store's ciphertext: another key cannot open them.
    await expect(openDevice(storage, "journal-identity", newStoreKey())).rejects.toThrow();
    // The right key still opens it in the same process, though the failed open left its connections behind.
    const again = await openDevice(storage, "journal-identity", storeKey);
    expect(again.fingerprint).toBe(identity);
    again.close();
    await forgetDatabases();

    // A store with nothing in its records is a new device, with a new identity.
    const fresh = await openDevice(createStorage(), "journal-identity", storeKey);
    expect(fresh.fingerprint).not.toBe(identity);
    fresh.close();
    await forgetDatabases();
  });

  it("journals puts, deletes and clears, and drops another device's databases on restore", async () => {
    const storage = createStorage();
    const db = await Db.open(storage);
    const records = recordsIn(db);
    const name = "journal-ops::matrix-sdk-crypto";
    const stale = "journal-gone::matrix-sdk-crypto";
    // A database of an earlier device, journalled under the same records: the restore below drops it.
    const earlier = new IndexedDBJournal(records, "journal-gone");
    await earlier.restore();
    await writeDatabase(stale, (store) => store.put({ id: "old", value: 1 }));
    await earlier.flush();
    earlier.close();
    await records.commit();
    await forgetDatabases();

    const journal = new IndexedDBJournal(records, "journal-ops");
    await journal.restore();
    await writeDatabase(name, (store) => {
      for (let i = 0; i < 40; i++) store.put({ id: `k${i}`, value: i });
      store.put({ id: ["a", 2], value: "compound" });
    });
    await journal.flush();
    await writeDatabase(name, (store) => {
      store.delete("k3");
      store.put({ id: "k4", value: "changed" });
    });
    await journal.flush();
    await records.commit();
    journal.close();
    await forgetDatabases();

    const reopened = recordsIn(await Db.open(storage));
    const restored = new IndexedDBJournal(reopened, "journal-ops");
    await restored.restore();
    const rows = await readDatabase(name);
    expect(rows).toHaveLength(40);
    expect(rows.find((r) => r.id === "k3")).toBeUndefined();
    expect(rows.find((r) => r.id === "k4")?.value).toBe("changed");
    expect(rows.find((r) => Array.isArray(r.id))?.value).toBe("compound");
    expect((await indexedDB.databases()).map((d) => d.name)).not.toContain(stale);

    await writeDatabase(name, (store) => {
      store.clear();
      store.put({ id: "only", value: 0 });
    });
    await restored.flush();
    await reopened.commit();
    restored.close();
    await forgetDatabases();
    const last = new IndexedDBJournal(recordsIn(await Db.open(storage)), "journal-ops");
    await last.restore();
    expect(await readDatabase(name)).toEqual([{ id: "only", value: 0 }]);
    last.close();
    await forgetDatabases();
  });
});

async function writeDatabase(name: string, write: (store: IDBObjectStore) => void) {
  const open = indexedDB.open(name, 1);
  open.onupgradeneeded = () => open.result.createObjectStore("things", { keyPath: "id" });
  const db = await request(open);
  const tx = db.transaction("things", "readwrite");
  write(tx.objectStore("things"));
  await new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
  });
  db.close();
}

async function readDatabase(name: string): Promise<{ id: unknown; value: unknown }[]> {
  const db = await request(indexedDB.open(name, 1));
  const rows = await request(db.transaction("things").objectStore("things").getAll());
  db.close();
  return rows;
}
