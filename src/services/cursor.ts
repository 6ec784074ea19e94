import { base64url, fromBase64url } from "../util/encoding.ts";
import { badRequest } from "../errors.ts";

/**
 * Opaque pagination cursors: base64url of `[kind, scope, ...position]`. `kind` names the endpoint and `scope` a
 * fingerprint of the query, so a cursor from another endpoint or another query is refused with 400 rather than
 * silently paging the wrong list.
 */
export function encodeCursor(kind: string, scope: string, position: (string | number)[]): string {
  return base64url(JSON.stringify([kind, scope, ...position]));
}

export function decodeCursor(cursor: string, kind: string, scope: string, arity: number): (string | number)[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fromBase64url(cursor));
  } catch {
    throw invalid();
  }
  if (
    !Array.isArray(parsed) ||
    parsed[0] !== kind ||
    parsed[1] !== scope ||
    parsed.length !== arity + 2 ||
    !parsed.slice(2).every((x) => typeof x === "number" || typeof x === "string")
  )
    throw invalid();
  return parsed.slice(2);
}

function invalid() {
  return badRequest("invalid cursor: it does not come from this endpoint and query", [
    { code: "invalid_cursor", message: "unknown or malformed cursor", path: ["query", "cursor"] },
  ]);
}

/** A short stable fingerprint of query parameters (FNV-1a). */
export function fingerprint(value: unknown): string {
  const text = JSON.stringify(value);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36);
}

/**
 * Message sortKeys double as message-list cursors (SDK 4.2.x pages with the last item's sortKey). They are digits
 * only, which keeps them apart from message IDs (`<chat no>.<seq>`, with a dot) and from the other endpoints'
 * cursors (base64url of a JSON array, which always starts with a letter: `[` encodes as `W`).
 */
export const SORT_KEY_WIDTH = 12;
export function sortKeyOf(seq: number): string {
  return String(seq).padStart(SORT_KEY_WIDTH, "0");
}
export function isSortKey(cursor: string): boolean {
  return /^\d{1,15}$/.test(cursor);
}
export function seqOfSortKey(cursor: string): number {
  if (!isSortKey(cursor)) throw invalid();
  return Number(cursor);
}
