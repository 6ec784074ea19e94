import { mkdirSync } from "node:fs";
import { createToken, listTokens, revokeToken, type Scope } from "../../src/services/tokens.ts";
import { databasePath } from "./data-dir.ts";
import { openSqliteStorage } from "./sqlite-storage.ts";
import { UsageError } from "./usage-error.ts";

export async function runToken(dataDir: string, positionals: string[], values: { scope?: string[]; name?: string }): Promise<number> {
  const [action, target] = positionals;
  mkdirSync(dataDir, { recursive: true });
  const { storage, close } = await openSqliteStorage(databasePath(dataDir));
  try {
    if (action === "create") {
      const scopes = values.scope ?? ["read", "write"];
      for (const s of scopes) if (s !== "read" && s !== "write") throw new UsageError(`--scope must be read or write, got ${s}`);
      const { token, record } = await createToken(storage, { name: values.name, scopes: scopes as Scope[] });
      console.error(`Created token "${record.name}" with scopes ${record.scopes.join(", ")}. It is shown only once:`);
      console.log(token);
      return 0;
    }
    if (action === "list") {
      const tokens = await listTokens(storage);
      if (tokens.length === 0) console.log("no tokens");
      const now = Date.now();
      for (const t of tokens) {
        const kind = t.clientID ? `app, ${t.expiresAt !== undefined && t.expiresAt <= now ? "expired" : `until ${new Date(t.expiresAt ?? 0).toISOString()}`}` : "cli";
        console.log(`${t.id.slice(0, 12)}  ${t.name.padEnd(16)}  ${t.scopes.join(",").padEnd(10)}  ${t.createdAt}  ${t.hint}…  ${kind}`);
      }
      return 0;
    }
    if (action === "revoke") {
      if (!target) throw new UsageError("token revoke needs an ID prefix (from token list) or a name");
      const n = await revokeToken(storage, target);
      if (n === 0) {
        console.error(`no token matches ${target}`);
        return 1;
      }
      console.log(`revoked ${n} token${n === 1 ? "" : "s"}`);
      return 0;
    }
    throw new UsageError(action ? `unknown token action ${action}` : "token needs an action: create, list or revoke");
  } finally {
    await close();
  }
}
