import type { Context } from "./context.ts";

/**
 * Chat reminders going off. Reminders are part of the chat records (so they survive restarts); the runtime only
 * provides a wake-up at the time `nextReminderAt` names (a timer on the daemon, an alarm in the Worker), and
 * `fireDueReminders` does the rest: each due reminder gets `firedAt`, which shows on the chat and, through the
 * commit, as a chat.upserted event.
 */
export function nextReminderAt(ctx: Context): number | undefined {
  let next: number | undefined;
  for (const chat of ctx.db.chats.all()) {
    const r = chat.reminder;
    if (r && r.firedAt === undefined && (next === undefined || r.at < next)) next = r.at;
  }
  return next;
}

export async function fireDueReminders(ctx: Context): Promise<number> {
  const now = ctx.now();
  let fired = 0;
  for (const chat of ctx.db.chats.all()) {
    const r = chat.reminder;
    if (!r || r.firedAt !== undefined || r.at > now) continue;
    r.firedAt = now;
    ctx.db.saveChat(chat);
    fired++;
  }
  if (fired) await ctx.db.commit();
  return fired;
}
