import { mkdirSync } from "node:fs";
import { createWebhook, removeWebhook, storedWebhooks } from "../../src/services/webhooks.ts";
import { ApiError } from "../../src/http/errors.ts";
import { databasePath } from "./data-dir.ts";
import { openSqliteStorage } from "./sqlite-storage.ts";
import { UsageError } from "./usage-error.ts";

/**
 * `inboxd webhook add|list|remove`: edits the webhook config (a running daemon picks changes up within 2 s); list
 * shows each webhook's counts and cursor as last stored.
 */
export async function runWebhook(dataDir: string, positionals: string[], values: { chat?: string[] }): Promise<number> {
  const [action, target] = positionals;
  mkdirSync(dataDir, { recursive: true });
  const { storage, close } = await openSqliteStorage(databasePath(dataDir));
  try {
    if (action === "add") {
      if (!target) throw new UsageError("webhook add needs a URL");
      const hook = await createWebhook(storage, { url: target, chatIDs: values.chat });
      console.error(`Added webhook ${hook.id} for ${hook.chatIDs[0] === "*" ? "every chat" : hook.chatIDs.join(", ")}. Its signing secret is shown only once:`);
      console.log(hook.secret);
      return 0;
    }
    if (action === "list") {
      const hooks = await storedWebhooks(storage);
      if (hooks.length === 0) console.log("no webhooks");
      for (const h of hooks) {
        // pending is at most this many: the CLI does not read the events to tell which are for the webhook's chats.
        const counts = `delivered ${h.delivered}  failed ${h.failed}  pending ≤${h.pending}  cursor ${h.cursor}`;
        console.log(`${h.id}  ${h.url}  ${h.chatIDs.join(",")}  ${h.createdAt}  ${counts}${h.lastError ? `  last error: ${h.lastError.message}` : ""}`);
      }
      return 0;
    }
    if (action === "remove") {
      if (!target) throw new UsageError("webhook remove needs an ID (from webhook list)");
      await removeWebhook(storage, target);
      console.log(`removed ${target}`);
      return 0;
    }
    throw new UsageError(action ? `unknown webhook action ${action}` : "webhook needs an action: add, list or remove");
  } catch (error) {
    if (error instanceof ApiError) {
      console.error(`inboxd: ${error.message}`);
      return 1;
    }
    throw error;
  } finally {
    await close();
  }
}
