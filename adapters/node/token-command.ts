import { createToken, listTokens, revokeToken, type Scope } from "../../src/services/tokens.ts";
import { openDataDir } from "./data-dir.ts";
import { printTable } from "./cli-table.ts";
import { RELAYED_INBOX_KEY } from "../../src/tenancy.ts";
import { UsageError } from "./usage-error.ts";
import { pickByIdPrefix } from "./id-prefix.ts";

export async function runToken(
  dataDir: string,
  positionals: string[],
  values: { scope?: string[]; name?: string },
): Promise<number> {
  const [action, target] = positionals;
  if (action !== "create" && action !== "list" && action !== "revoke")
    throw new UsageError(action ? `unknown token action ${action}` : "token needs an action: create, list or revoke");
  if (action === "create")
    for (const s of values.scope ?? [])
      if (s !== "read" && s !== "write") throw new UsageError(`--scope must be read or write, got ${s}`);
  if (action === "revoke" && !target)
    throw new UsageError("token revoke needs an ID prefix (from token list) or a name");
  // Only create makes a data directory; list and revoke on one without data say so.
  const { storage, close } = await openDataDir(dataDir, { create: action === "create" });
  try {
    if (action === "create") {
      const { token, record } = await createToken(storage, {
        name: values.name,
        scopes: (values.scope ?? ["read", "write"]) as Scope[],
        // A daemon relaying through an inbox of many: its tokens name the inbox (serve.ts, relayedInbox).
        inbox: (await storage.getItem<string>(RELAYED_INBOX_KEY)) ?? undefined,
      });
      console.error(`Created token "${record.name}" with scopes ${record.scopes.join(", ")}. It is shown only once:`);
      console.log(token);
      return 0;
    }
    if (action === "list") {
      const tokens = await listTokens(storage);
      if (tokens.length === 0) console.log("no tokens");
      const now = Date.now();
      const kind = (t: (typeof tokens)[number]) =>
        t.clientID
          ? `app, ${t.expiresAt !== undefined && t.expiresAt <= now ? "expired" : `until ${new Date(t.expiresAt ?? 0).toISOString()}`}`
          : "cli";
      if (tokens.length)
        printTable(
          ["ID", "NAME", "SCOPES", "CREATED", "STARTS", "KIND"],
          tokens.map((t) => [t.id.slice(0, 12), t.name, t.scopes.join(","), t.createdAt, `${t.hint}…`, kind(t)]),
        );
      return 0;
    }
    // A name ends every token of that name (an app's name, every token it was given); an ID prefix, exactly one.
    const tokens = await listTokens(storage);
    let chosen = tokens.filter((t) => t.name === target);
    if (chosen.length === 0) {
      const picked = pickByIdPrefix(tokens, target, "token", "inboxd token list");
      if ("why" in picked) {
        console.error(`inboxd: no token is named ${target}, and ${picked.why}`);
        return 1;
      }
      chosen = [picked.item];
    }
    let n = 0;
    for (const t of chosen) n += await revokeToken(storage, t.id);
    console.log(`revoked ${n} token${n === 1 ? "" : "s"}`);
    return 0;
  } finally {
    await close();
  }
}
