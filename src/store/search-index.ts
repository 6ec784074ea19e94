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

/** A directory page (`ixd:<term>:<id>`): a run of older segment refs moved out of the term record. */
export interface PageRef {
  id: number;
  /** smallest posting of the page's first segment */
  t: number;
  c: number;
  s: number;
}

export interface TermMeta {
  n: number;
  next: number;
  /** The newest segments (all of them, for a term that never had more than TAIL + PAGE). */
  segs: SegmentRef[];
  /** Older segments, in pages of about PAGE refs, oldest first; absent until the term first outgrew its record. */
  pages?: PageRef[];
  nextPage?: number;
}

/**
 * Segment refs the term record keeps; past TAIL + PAGE, the oldest PAGE move to a directory page of their own.
 * Why: every new head segment rewrites the term record, and a common word gains one every HEAD postings; with all
 * refs in the record, that rewrite grew with the corpus (half a MB for the commonest word at 10M messages).
 */
export const TAIL = 128;
export const PAGE = 256;

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

const minOf = (ref: { t: number; c: number; s: number }): Posting => [ref.t, ref.c, ref.s];

/** Index of the last ref whose smallest posting is ≤ p (-1 if p precedes them all). */
function lastAtOrBefore(refs: readonly { t: number; c: number; s: number }[], p: ArrayLike<number>): number {
  let lo = 0,
    hi = refs.length - 1,
    found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (comparePosting(minOf(refs[mid]), 0, p, 0) <= 0) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * A term's segment refs in ascending order, as blocks: its directory pages, then the term record's own list (the
 * last block). Pages are read through the cache when first needed.
 */
class Blocks {
  constructor(
    private readonly kv: Kv,
    private readonly term: string,
    readonly meta: TermMeta,
  ) {}

  get pages(): PageRef[] {
    return this.meta.pages ?? [];
  }

  get count() {
    return this.pages.length + 1;
  }

  get last() {
    return this.pages.length;
  }

  async refs(block: number): Promise<SegmentRef[]> {
    if (block === this.last) return this.meta.segs;
    return (await this.kv.get<SegmentRef[]>(keys.segmentPage(this.term, this.pages[block].id))) ?? [];
  }

  /** Smallest posting of a block (undefined for an empty record list). */
  min(block: number): { t: number; c: number; s: number } | undefined {
    return block === this.last ? this.meta.segs[0] : this.pages[block];
  }

  /** The block and position of the last segment whose smallest posting is ≤ p; block -1 if p precedes them all. */
  async locate(p: ArrayLike<number>): Promise<{ block: number; at: number }> {
    const first = this.meta.segs[0];
    const block = first && comparePosting(minOf(first), 0, p, 0) <= 0 ? this.last : lastAtOrBefore(this.pages, p);
    if (block < 0) return { block: -1, at: -1 };
    return { block, at: lastAtOrBefore(await this.refs(block), p) };
  }

  /** Writes a changed page back. */
  savePage(block: number, refs: SegmentRef[]) {
    this.kv.put(keys.segmentPage(this.term, this.pages[block].id), refs);
  }
}

export class SearchIndex {
  private queue: { terms: string[]; posting: Posting }[] = [];
  /** Walks begun and not yet finished or closed; segments and pages they may still read wait in `retired`. */
  private walking = 0;
  private retired: string[] = [];

  /** `layout` is for tests, which need pages without writing hundreds of thousands of postings. */
  constructor(
    private readonly kv: Kv,
    private readonly layout = { tail: TAIL, page: PAGE },
  ) {}

  /** Queues postings; they are folded into segments by the next commit (see Kv.beforeCommit). */
  add(terms: string[], posting: Posting): void {
    if (terms.length) this.queue.push({ terms, posting });
  }

  async meta(term: string): Promise<TermMeta | undefined> {
    return this.kv.get<TermMeta>(keys.term(term));
  }

  /** Folds queued postings into their segments. Only ever called from a commit, so it has no concurrent writer. */
  async applyQueued(): Promise<void> {
    // Before this commit's own splits, so that what they retire outlives the walks running now.
    this.dropRetired();
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
    const blocks = new Blocks(this.kv, term, meta);
    let metaChanged = meta.segs.length === 0;
    // The newest segment's postings once read: new postings nearly always sort into it (or a head after it), and
    // a commit brings several per common word, which then cost no lookup each.
    let newest: { id: number; data: number[] } | undefined;
    for (const p of postings) {
      let block: number, at: number, refs: SegmentRef[], data: number[];
      const last = meta.segs[meta.segs.length - 1];
      if (last && comparePosting(minOf(last), 0, p, 0) <= 0) {
        // What locate() would find: the record's last segment.
        ({ block, at, refs } = { block: blocks.last, at: meta.segs.length - 1, refs: meta.segs });
        if (newest?.id !== last.id)
          newest = { id: last.id, data: (await this.kv.get<number[]>(keys.segment(term, last.id))) ?? [] };
        data = newest.data;
      } else {
        ({ block, at } = await blocks.locate(p));
        if (block < 0) ({ block, at } = { block: 0, at: 0 }); // before everything: into the very first segment
        refs = await blocks.refs(block);
        at = Math.max(0, at);
        data = refs.length ? ((await this.kv.get<number[]>(keys.segment(term, refs[at].id))) ?? []) : [];
      }
      // New postings almost always sort after everything. Once the last segment is full they open a small head
      // segment, so a commit rewrites a few KB per term instead of a full 1,024-posting segment. Only a posting
      // past the last segment's largest may do so: segments must not overlap.
      const isLast = block === blocks.last && at === refs.length - 1;
      if (refs.length === 0 || (isLast && refs[at].n >= HEAD && comparePosting(p, 0, data, data.length - 3) > 0)) {
        // Appending leaves every ref a walk holds where it was (see walk()).
        refs.push({ id: meta.next++, t: p[0], c: p[1], s: p[2], n: 0 });
        at = refs.length - 1;
        data = [];
        if (block === blocks.last) newest = { id: refs[at].id, data };
        metaChanged = true;
      }
      const ref = refs[at];
      insertSorted(data, p);
      ref.n = data.length / 3;
      if (comparePosting(p, 0, minOf(ref), 0) < 0) {
        [ref.t, ref.c, ref.s] = p;
        if (at === 0 && block < blocks.last) [blocks.pages[block].t, blocks.pages[block].c, blocks.pages[block].s] = p;
        metaChanged = true;
      }
      if (ref.n > 2 * SEGMENT) {
        // Both halves become new segments, and the one that split stays as it was until no walk can hold it: a
        // walk in progress reads the segments of the lists it started with (see walk()), so rewriting this one to
        // its lower half would hide the upper half from that walk.
        const half = Math.floor(ref.n / 2) * 3;
        const halves = [data.slice(0, half), data.slice(half)].map((part) => {
          const split: SegmentRef = { id: meta.next++, t: part[0], c: part[1], s: part[2], n: part.length / 3 };
          this.kv.put(keys.segment(term, split.id), part);
          return split;
        });
        this.retire(keys.segment(term, ref.id));
        // A new list rather than a splice, for the same reason.
        const grown = [...refs.slice(0, at), ...halves, ...refs.slice(at + 1)];
        if (block === blocks.last) meta.segs = grown;
        else if (grown.length > 2 * this.layout.page) this.splitPage(term, meta, block, grown);
        else blocks.savePage(block, grown);
        metaChanged = true;
        continue;
      }
      if (block < blocks.last) blocks.savePage(block, refs);
      this.kv.put(keys.segment(term, ref.id), data);
    }
    meta.n += postings.length;
    // A loop: a record written before pages existed sheds all its excess refs at its first insert.
    while (meta.segs.length > this.layout.tail + this.layout.page) {
      this.movePage(term, meta, this.layout.page);
      metaChanged = true;
    }
    // Counts only steer the choice of the rarest term, so a count change alone does not rewrite the meta record
    // (the cached copy stays exact; after a restart it may lag by the head segment's postings).
    if (metaChanged) this.kv.put(keys.term(term), meta);
  }

  /**
   * Moves the term record's `count` oldest refs to a new last page (they are newer than every page's refs: the
   * record holds the newest). New lists, not in-place changes, so a walk in progress keeps a consistent view.
   */
  private movePage(term: string, meta: TermMeta, count: number) {
    const refs = meta.segs.slice(0, count);
    meta.nextPage ??= 0;
    const page: PageRef = { id: meta.nextPage++, t: refs[0].t, c: refs[0].c, s: refs[0].s };
    meta.segs = meta.segs.slice(count);
    meta.pages = [...(meta.pages ?? []), page];
    this.kv.put(keys.segmentPage(term, page.id), refs);
  }

  /**
   * A page that grew past twice its size (segments split inside it) becomes two new pages. The old one stays until
   * no walk can hold it, as a split segment does (see insert()).
   */
  private splitPage(term: string, meta: TermMeta, block: number, refs: SegmentRef[]) {
    const half = refs.length >> 1;
    const halves = [refs.slice(0, half), refs.slice(half)].map((part) => {
      const page: PageRef = { id: meta.nextPage!++, t: part[0].t, c: part[0].c, s: part[0].s };
      this.kv.put(keys.segmentPage(term, page.id), part);
      return page;
    });
    const pages = meta.pages!;
    this.retire(keys.segmentPage(term, pages[block].id));
    meta.pages = [...pages.slice(0, block), ...halves, ...pages.slice(block + 1)];
  }

  /** Keeps a replaced segment or page for the walks running now; the first commit with no walk running drops it. */
  private retire(key: string) {
    this.retired.push(key);
  }

  private dropRetired() {
    if (this.walking > 0) return;
    for (const key of this.retired) this.kv.remove(key);
    this.retired = [];
  }

  /**
   * Yields batches of postings (flat triples) in walk order, strictly past `from`.
   * `before` walks newest → oldest, `after` oldest → newest. `bounds` prunes whole segments by time.
   */
  async *walk(
    term: string,
    direction: "before" | "after",
    from: Posting | null,
    bounds: { after?: number; before?: number } = {},
  ): AsyncGenerator<number[]> {
    // Counted until it ends or its consumer closes it (for await does on break; PostingProbe.close otherwise).
    this.walking++;
    try {
      yield* this.walkSegments(term, direction, from, bounds);
    } finally {
      this.walking--;
    }
  }

  private async *walkSegments(
    term: string,
    direction: "before" | "after",
    from: Posting | null,
    bounds: { after?: number; before?: number },
  ): AsyncGenerator<number[]> {
    const meta = await this.meta(term);
    if (!meta) return;
    // The lists as they are now: a commit during the walk replaces them rather than changing them (insert() only
    // appends in place), and keeps the segments and pages they name (see retire()), so the walk goes on over a
    // consistent set of segments.
    const blocks = new Blocks(this.kv, term, { ...meta });
    if (direction === "before") {
      let { block, at } = from ? await blocks.locate(from) : { block: blocks.last, at: -2 };
      // The segment after the current one (a segment holds postings ≥ its own min and < the next one's min).
      let newer: { t: number } | undefined;
      if (block >= 0) {
        const refs = await blocks.refs(block);
        if (at === -2) at = refs.length - 1;
        newer = refs[at + 1] ?? blocks.min(block + 1);
      }
      for (; block >= 0; block--) {
        const refs = await blocks.refs(block);
        for (let i = at === -2 ? refs.length - 1 : at; i >= 0; i--) {
          if (bounds.after !== undefined && newer && newer.t <= bounds.after) return;
          newer = refs[i];
          if (bounds.before !== undefined && refs[i].t >= bounds.before) continue;
          const data = (await this.kv.get<number[]>(keys.segment(term, refs[i].id))) ?? [];
          const out: number[] = [];
          for (let j = data.length - 3; j >= 0; j -= 3) {
            if (from && comparePosting(data, j, from, 0) >= 0) continue;
            out.push(data[j], data[j + 1], data[j + 2]);
          }
          if (out.length) yield out;
        }
        at = -2;
      }
    } else {
      const start = from ?? (bounds.after !== undefined ? ([bounds.after, 0, 0] as Posting) : null);
      let { block, at } = start ? await blocks.locate(start) : { block: 0, at: 0 };
      if (block < 0) ({ block, at } = { block: 0, at: 0 });
      for (; block < blocks.count; block++) {
        const refs = await blocks.refs(block);
        for (let i = Math.max(0, at); i < refs.length; i++) {
          if (bounds.before !== undefined && refs[i].t >= bounds.before) return;
          const data = (await this.kv.get<number[]>(keys.segment(term, refs[i].id))) ?? [];
          const out: number[] = [];
          for (let j = 0; j < data.length; j += 3) {
            if (from && comparePosting(data, j, from, 0) <= 0) continue;
            out.push(data[j], data[j + 1], data[j + 2]);
          }
          if (out.length) yield out;
        }
        at = 0;
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
    // The same layout as insertion reaches: whole pages of the oldest refs while the record would hold too many.
    while (meta.segs.length > this.layout.tail + this.layout.page) this.movePage(term, meta, this.layout.page);
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

  /** Ends the walk early (a probe is seldom read to its end), so the index knows it no longer runs. */
  async close(): Promise<void> {
    this.done = true;
    await this.source.return(undefined);
  }

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
