/** The shortest ID prefix `token revoke` and `webhook remove` accept: long enough not to hit an ID by accident. */
export const MIN_PREFIX = 6;

/**
 * The one item whose ID is `target` or starts with it, or why there is none: too short a prefix, no match, or
 * several (the command then does nothing rather than guess).
 */
export function pickByIdPrefix<T extends { id: string }>(
  items: T[],
  target: string,
  noun: string,
  listCommand: string,
): { item: T } | { why: string } {
  const exact = items.find((item) => item.id === target);
  if (exact) return { item: exact };
  if (target.length < MIN_PREFIX)
    return {
      why: `${target} is too short to pick a ${noun}: give at least ${MIN_PREFIX} characters of its ID (from ${listCommand})`,
    };
  const matches = items.filter((item) => item.id.startsWith(target));
  if (matches.length === 1) return { item: matches[0] };
  if (matches.length === 0) return { why: `no ${noun} has an ID starting with ${target} (see ${listCommand})` };
  const shown = matches
    .slice(0, 5)
    .map((item) => item.id)
    .join(", ");
  return {
    why: `${target} matches ${matches.length} ${noun}s (${shown}${matches.length > 5 ? ", …" : ""}); give more of the ID`,
  };
}
