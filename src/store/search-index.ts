import type { Kv } from "./kv.ts";
import { keys } from "./records.ts";

/**
 * Inverted index for message search, kept in storage so a restart needs no rebuild.
 *
 * A term's postings are `[ts, chatNo, seq]` triples in ascending (ts, chatNo, seq) order, split into segments of
 * ~SEGMENT postings (`ixs:<term>:<id>`); `ix:<term>` lists the segments with their smallest posting and counts.
 * Searches walk segments newest-first and stop as soon as a page is full, so a common word costs one or two
 * segment reads; a rare word costs one read per segment it appears in.
 *
 * The index only proposes candidates: the search service re-checks every candidate against the message itself,
 * so postings left behind by edits and deletions are harmless and never need rewriting.
 */
export const SEGMENT = 1024;
/** Size at which an appended-to head segment is closed and a new one started. */
export const HEAD = 128;
/** Pseudo-terms: every message, and one per media kind (never produced by `tokenize`). */
export const ALL_TERM = "~all";
export const mediaTerm = (kind: "image" | "video" | "file" | "link" | "any") => `~${kind}`;

export interface SegmentRef {
  id: number;
  /** smallest posting of the segment */
  t: number;
  c: number;
  s: number;
  n: number;
}

export interface TermMeta {
  n: number;
  next: number;
  segs: SegmentRef[];
}

export type Posting = [ts: number, chatNo: number, seq: number];

const MAX_TERM = 48;

/** Lower-cased words (Unicode letters and digits), each once, capped in length. */
export function tokenize(text: string | undefined): string[] {
  if (!text) return [];
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu);
  if (!words) return [];
  return [...new Set(words.map((w) => (w.length > MAX_TERM ? w.slice(0, MAX_TERM) : w)))];
}

export function comparePosting(a: ArrayLike<number>, ai: number, b: ArrayLike<number>, bi: number): number {
  return a[ai] - b[bi] || a[ai + 1] - b[bi + 1] || a[ai + 2] - b[bi + 2];
}

export class SearchIndex {
  private queue: { terms: string[]; posting: Posting }[] = [];

  constructor(private readonly kv: Kv) {}

  /** Queues postings; they are folded into segments by the next commit (see Kv.beforeCommit). */
  add(terms: string[], posting: Posting): void {
    if (terms.length) this.queue.push({ terms, posting });
  }

  async meta(term: string): Promise<TermMeta | undefined> {
    return this.kv.get<TermMeta>(keys.term(term));
  }

  /** Folds queued postings into their segments. Only ever called from a commit, so it has no concurrent writer. */
  async applyQueued(): Promise<void> {
    if (this.queue.length === 0) return;
    const queue = this.queue;
    this.queue = [];
    const byTerm = new Map<string, Posting[]>();
    for (const { terms, posting } of queue)
      for (const term of terms) {
        let list = byTerm.get(term);
        if (!list) byTerm.set(term, (list = []));
        list.push(posting);
      }
    await Promise.all([...byTerm].map(([term, postings]) => this.insert(term, postings)));
  }

  private async insert(term: string, postings: Posting[]): Promise<void> {
    const meta: TermMeta = (await this.meta(term)) ?? { n: 0, next: 0, segs: [] };
    let metaChanged = meta.segs.length === 0;
    for (const p of postings) {
      let i = Math.max(0, this.findSegment(meta, p));
      let data = meta.segs.length ? ((await this.kv.get<number[]>(keys.segment(term, meta.segs[i].id))) ?? []) : [];
      // New postings almost always sort after everything. Once the last segment is full they open a small head
      // segment, so a commit rewrites a few KB per term instead of a full 1,024-posting segment. Only a posting
      // past the last segment's largest may do so: segments must not overlap.
      const isLast = i === meta.segs.length - 1;
      if (meta.segs.length === 0 || (isLast && meta.segs[i].n >= HEAD && comparePosting(p, 0, data, data.length - 3) > 0)) {
        meta.segs.push({ id: meta.next++, t: p[0], c: p[1], s: p[2], n: 0 });
        i = meta.segs.length - 1;
        data = [];
        metaChanged = true;
      }
      const ref = meta.segs[i];
      const key = keys.segment(term, ref.id);
      insertSorted(data, p);
      ref.n = data.length / 3;
      if (comparePosting(p, 0, [ref.t, ref.c, ref.s], 0) < 0) {
        [ref.t, ref.c, ref.s] = p;
        metaChanged = true;
      }
      if (ref.n > 2 * SEGMENT) {
        const half = Math.floor(ref.n / 2) * 3;
        const tail = data.splice(half);
        const split: SegmentRef = { id: meta.next++, t: tail[0], c: tail[1], s: tail[2], n: tail.length / 3 };
        ref.n = data.length / 3;
        meta.segs.splice(i + 1, 0, split);
        this.kv.put(keys.segment(term, split.id), tail);
        metaChanged = true;
      }
      this.kv.put(key, data);
    }
    meta.n += postings.length;
    // Counts only steer the choice of the rarest term, so a count change alone does not rewrite the meta record
    // (the cached copy stays exact; after a restart it may lag by the head segment's postings).
    if (metaChanged) this.kv.put(keys.term(term), meta);
  }

  /** Index of the last segment whose smallest posting is ≤ p (-1 if p precedes them all). */
  private findSegment(meta: TermMeta, p: ArrayLike<number>): number {
    let lo = 0, hi = meta.segs.length - 1, found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = meta.segs[mid];
      if (comparePosting([s.t, s.c, s.s], 0, p, 0) <= 0) { found = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return found;
  }

  /**
   * Yields batches of postings (flat triples) in walk order, strictly past `from`.
   * `before` walks newest → oldest, `after` oldest → newest. `bounds` prunes whole segments by time.
   */
  async *walk(term: string, direction: "before" | "after", from: Posting | null, bounds: { after?: number; before?: number } = {}): AsyncGenerator<number[]> {
    const meta = await this.meta(term);
    if (!meta) return;
    const segs = meta.segs;
    if (direction === "before") {
      let i = from ? this.findSegment(meta, from) : segs.length - 1;
      for (; i >= 0; i--) {
        // A segment holds postings ≥ its own min and < the next one's min.
        const next = segs[i + 1];
        if (bounds.after !== undefined && next && next.t <= bounds.after) return;
        if (bounds.before !== undefined && segs[i].t >= bounds.before) continue;
        const data = (await this.kv.get<number[]>(keys.segment(term, segs[i].id))) ?? [];
        const out: number[] = [];
        for (let j = data.length - 3; j >= 0; j -= 3) {
          if (from && comparePosting(data, j, from, 0) >= 0) continue;
          out.push(data[j], data[j + 1], data[j + 2]);
        }
        if (out.length) yield out;
      }
    } else {
      let i = from ? Math.max(0, this.findSegment(meta, from)) : 0;
      if (!from && bounds.after !== undefined) i = Math.max(0, this.findSegment(meta, [bounds.after, 0, 0]));
      for (; i < segs.length; i++) {
        if (bounds.before !== undefined && segs[i].t >= bounds.before) return;
        const data = (await this.kv.get<number[]>(keys.segment(term, segs[i].id))) ?? [];
        const out: number[] = [];
        for (let j = 0; j < data.length; j += 3) {
          if (from && comparePosting(data, j, from, 0) <= 0) continue;
          out.push(data[j], data[j + 1], data[j + 2]);
        }
        if (out.length) yield out;
      }
    }
  }

  /** Writes a whole term at once from postings already sorted ascending (used by `seed`). */
  writeSorted(term: string, flat: ArrayLike<number>, count: number): void {
    const meta: TermMeta = { n: count, next: 0, segs: [] };
    for (let start = 0; start < count; start += SEGMENT) {
      const end = Math.min(count, start + SEGMENT);
      const data: number[] = new Array((end - start) * 3);
      for (let k = 0; k < data.length; k++) data[k] = flat[start * 3 + k];
      const id = meta.next++;
      meta.segs.push({ id, t: data[0], c: data[1], s: data[2], n: end - start });
      this.kv.put(keys.segment(term, id), data);
    }
    this.kv.put(keys.term(term), meta);
  }
}

/** Inserts p in order; an equal posting (an edit re-indexing its words) is not stored twice. */
function insertSorted(data: number[], p: Posting) {
  let i = data.length;
  while (i > 0 && comparePosting(data, i - 3, p, 0) > 0) i -= 3;
  if (i > 0 && comparePosting(data, i - 3, p, 0) === 0) return;
  if (i === data.length) data.push(p[0], p[1], p[2]);
  else data.splice(i, 0, p[0], p[1], p[2]);
}

/**
 * Membership test against one term's postings for keys that arrive in walk order (a merge join): used to
 * intersect several query words from the index alone, so only real matches are loaded.
 */
export class PostingProbe {
  private batch: number[] = [];
  private at = 0;
  private done = false;

  constructor(
    private readonly source: AsyncGenerator<number[]>,
    private readonly direction: "before" | "after",
  ) {}

  /** True when the term has posting `key`. Keys must be passed in walk order. */
  async has(key: ArrayLike<number>, keyAt = 0): Promise<boolean> {
    const sign = this.direction === "before" ? 1 : -1;
    for (;;) {
      if (this.at >= this.batch.length) {
        if (this.done) return false;
        const next = await this.source.next();
        if (next.done) {
          this.done = true;
          return false;
        }
        this.batch = next.value;
        this.at = 0;
        continue;
      }
      const c = comparePosting(this.batch, this.at, key, keyAt) * sign;
      if (c > 0) this.at += 3;
      else return c === 0;
    }
  }
}
