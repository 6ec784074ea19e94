import { cleanupUploads } from "./assets.ts";
import type { Context } from "./context.ts";
import { endDueMutes, nextMuteEnd } from "./mutes.ts";
import { fireDueReminders, nextReminderAt } from "./reminders.ts";

/**
 * Work that falls due later: reminders, timed mutes, webhook retries and expired uploads. The runtime wakes the app
 * at `nextWakeAt` (the daemon with a timer, the Worker with a Durable Object alarm: AppOptions.schedule), and `wake`
 * does what is due then. Event-log compaction is handed in: it is the log's, and runs on wake-ups too.
 */
export function nextWakeAt(ctx: Context): number | undefined {
  const times = [nextReminderAt(ctx), nextMuteEnd(ctx), ctx.webhooks.nextAt(), ctx.nextUploadExpiry];
  const defined = times.filter((t): t is number => t !== undefined);
  return defined.length ? Math.min(...defined) : undefined;
}

export async function wake(ctx: Context, compactLog: () => Promise<void>): Promise<void> {
  await compactLog();
  await fireDueReminders(ctx);
  await endDueMutes(ctx);
  // The next reminder is armed before webhooks run: a long backlog to a slow receiver must not delay it.
  ctx.rearm();
  await ctx.webhooks.run();
  await cleanupUploads(ctx, ctx.assets);
  ctx.rearm();
}
