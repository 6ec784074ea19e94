import { createRequire } from "node:module";
import type { Connector } from "db0";
import betterSqlite3Connector from "db0/connectors/better-sqlite3";
import nodeSqliteConnector from "db0/connectors/node-sqlite";

/**
 * Which SQLite library the daemon uses, per Node runtime (measured side by side in `npm run bench -- --only
 * bindings`):
 * - Node 22.13+ and 24: the built-in `node:sqlite`. No native addon, so `npm ci` builds nothing and nothing can
 *   clash with the runtime's ABI (better-sqlite3 ≤ 12 aborts at exit on Node 24.19+).
 * - Node 20 (no `node:sqlite`): better-sqlite3 12, compiled at install. It comes through the optional package
 *   `inboxd-sqlite-node20`, whose engines exclude Node 22+, so npm skips it and its build there.
 * Both write the same SQLite file format, so a data directory moves freely between runtimes.
 */
export type BindingName = "node:sqlite" | "better-sqlite3";

/** The calls inboxd makes on a connection; better-sqlite3's Database and node:sqlite's DatabaseSync both fit. */
export interface SqliteDatabase {
  exec(sql: string): unknown;
  prepare(sql: string): SqliteStatement;
  close(): unknown;
}
export interface SqliteStatement {
  get(...params: unknown[]): unknown;
  run(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

export interface SqliteBinding {
  name: BindingName;
  /** The library's version, e.g. "12.11.1", or the Node version for node:sqlite. */
  version: string;
  /** A db0 connector on the file at `path` (its instance is a SqliteDatabase). */
  connector(path: string): Connector;
  /** A plain connection, for tools and tests that need a second one. */
  open(path: string): SqliteDatabase;
}

type BetterSqlite3Class = new (path: string) => SqliteDatabase;

/** A better-sqlite3 module (any major) as a binding. */
export function betterSqlite3Binding(Database: BetterSqlite3Class, version: string): SqliteBinding {
  return {
    name: "better-sqlite3",
    version,
    // db0 calls a function-valued `lib` to load the module, so the class goes in a thunk.
    connector: (path) => betterSqlite3Connector({ path, lib: (() => Database) as never }),
    open: (path) => new Database(path),
  };
}

/** The built-in node:sqlite, or undefined on a runtime without it (Node 20, Node 22 before 22.13). */
export function nodeSqliteBinding(): SqliteBinding | undefined {
  const module = loadNodeSqlite();
  if (!module) return undefined;
  return {
    name: "node:sqlite",
    version: process.versions.node,
    connector: (path) => nodeSqliteConnector({ path }),
    open: (path) => new module.DatabaseSync(path),
  };
}

let chosen: SqliteBinding | undefined;

/** The binding for this runtime: node:sqlite where Node has it, else better-sqlite3 12. */
export function defaultBinding(): SqliteBinding {
  return (chosen ??= nodeSqliteBinding() ?? betterSqlite3ForNode20());
}

function betterSqlite3ForNode20(): SqliteBinding {
  let loaded: { Database: BetterSqlite3Class; version: string };
  try {
    loaded = createRequire(import.meta.url)("inboxd-sqlite-node20");
  } catch (error) {
    const major = Number(process.versions.node.split(".")[0]);
    const hint =
      major === 20
        ? "On Node 20 inboxd uses better-sqlite3, built by `npm ci` (it needs python3, make and g++); run `npm ci` again on this Node and look for build errors."
        : `Node ${process.versions.node} lacks node:sqlite; use Node 20.19+, 22.13+ or 24.`;
    throw new Error(
      `no SQLite binding for Node ${process.versions.node}. ${hint} (${(error as Error).message.split("\n")[0]})`,
    );
  }
  return betterSqlite3Binding(loaded.Database, loaded.version);
}

interface NodeSqliteModule {
  DatabaseSync: new (path: string) => SqliteDatabase;
}

function loadNodeSqlite(): NodeSqliteModule | undefined {
  // Node 22 announces node:sqlite with an ExperimentalWarning on stderr at first load; it is expected here.
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (!String(typeof warning === "string" ? warning : warning.message).includes("SQLite")) {
      (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
    }
  }) as typeof process.emitWarning;
  try {
    return process.getBuiltinModule("node:sqlite") as NodeSqliteModule | undefined;
  } catch {
    return undefined; // Node 22.5–22.12: present only behind --experimental-sqlite
  } finally {
    process.emitWarning = emitWarning;
  }
}
