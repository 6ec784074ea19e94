import { EventLog } from "../../src/events/log.ts";
import { createWebhook, removeWebhook, storedWebhooks } from "../../src/services/webhooks.ts";
import { ApiError } from "../../src/errors.ts";
import { openDataDir } from "./data-dir.ts";
import { printTable } from "./cli-table.ts";
import { UsageError } from "./usage-error.ts";
import { MIN_PREFIX, pickByIdPrefix } from "./id-prefix.ts";

/**
 * `inboxd webhook add|list|remove`: edits the webhook config (a running daemon picks changes up within 2 s); list
 * shows each webhook's counts and cursor as last stored.
 */
export async function runWebhook(dataDir: string, positionals: string[], values: { chat?: string[] }): Promise<number> {
  const [action, target] = positionals;
  if (action !== "add" && action !== "list" && action !== "remove")
    throw new UsageError(action ? `unknown webhook action ${action}` : "webhook needs an action: add, list or remove");
  if (action === "add" && !target) throw new UsageError("webhook add needs a URL");
  if (action === "remove" && !target)
    throw new UsageError(`webhook remove needs an ID, or its first ${MIN_PREFIX}+ characters (from webhook list)`);
  // Only add makes a data directory; list and remove on one without data say so.
  const { storage, close } = await openDataDir(dataDir, { create: action === "add" });
  try {
    if (action === "add") {
      const hook = await createWebhook(
        storage,
        { url: target, chatIDs: values.chat },
        { head: await EventLog.head(storage) },
      );
      console.error(
        `Added webhook ${hook.id} for ${hook.chatIDs[0] === "*" ? "every chat" : hook.chatIDs.join(", ")}. Its signing secret is shown only once:`,
      );
      console.log(hook.secret);
      return 0;
    }
    const hooks = await storedWebhooks(storage, await EventLog.head(storage));
    if (action === "list") {
      if (hooks.length === 0) console.log("no webhooks");
      // PENDING is at most this many: the CLI does not read the events to tell which are for the webhook's chats.
      const header = ["ID", "URL", "CHATS", "CREATED", "DELIVERED", "FAILED", "PENDING", "CURSOR", "LAST ERROR"];
      const row = (h: (typeof hooks)[number]) => [
        h.id,
        h.url,
        h.chatIDs.join(","),
        h.createdAt,
        `${h.delivered}`,
        `${h.failed}`,
        `≤${h.pending}`,
        `${h.cursor}`,
        h.lastError?.message ?? "-",
      ];
      if (hooks.length) printTable(header, hooks.map(row));
      return 0;
    }
    const picked = pickByIdPrefix(hooks, target, "webhook", "inboxd webhook list");
    if ("why" in picked) {
      console.error(`inboxd: ${picked.why}`);
      return 1;
    }
    await removeWebhook(storage, picked.item.id);
    console.log(`removed ${picked.item.id}`);
    return 0;
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
