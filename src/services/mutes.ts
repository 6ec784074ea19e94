import type { Context } from "./context.ts";

/**
 * Timed mutes (PATCH /v1/chats/{id} `isMuted: true, mutedUntil`). Like reminders (services/reminders.ts), the end
 * of a mute is part of the chat record, and the runtime only wakes the app at the time `nextMuteEnd` names;
 * `endDueMutes` then unmutes each chat whose time has come, which shows on the chat and, through the commit, as a
 * chat.upserted event.
 */
export function nextMuteEnd(ctx: Context): number | undefined {
  let next: number | undefined;
  for (const chat of ctx.db.chats.all()) {
    const until = chat.mutedUntil;
    if (until !== undefined && (next === undefined || until < next)) next = until;
  }
  return next;
}

export async function endDueMutes(ctx: Context): Promise<number> {
  const now = ctx.now();
  let ended = 0;
  for (const chat of ctx.db.chats.all()) {
    if (chat.mutedUntil === undefined || chat.mutedUntil > now) continue;
    chat.isMuted = false;
    chat.mutedUntil = undefined;
    ctx.db.saveChat(chat);
    ended++;
  }
  if (ended) await ctx.db.commit();
  return ended;
}
