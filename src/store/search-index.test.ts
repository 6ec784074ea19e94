import { createStorage, type Storage } from "unstorage";
import { describe, expect, it } from "vitest";
import { prng } from "../connectors/sandbox/corpus.ts";
import { Kv } from "./kv.ts";
import { keys } from "./records.ts";
import {
  HEAD,
  PAGE,
  PostingProbe,
  SEGMENT,
  SearchIndex,
  TAIL,
  tokenize,
  type Posting,
  type SegmentRef,
  type TermMeta,
} from "./search-index.ts";

const TERM = "word";

type Layout = { tail: number; page: number };

/** A Kv + SearchIndex wired as Db wires them: queued postings are folded in by each commit. */
function openTestIndex(storage: Storage = createStorage(), layout?: Layout) {
  let index!: SearchIndex;
  const kv = new Kv(storage, { beforeCommit: () => index.applyQueued() });
  index = new SearchIndex(kv, layout);
  return { kv, index, storage };
}

const cmp = (a: Posting, b: Posting) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** n distinct postings, sorted ascending; several share a timestamp so chatNo/seq order matters too. */
function makePostings(n: number, seed = 1): Posting[] {
  const random = prng(seed);
  const seen = new Set<string>();
  const out: Posting[] = [];
  while (out.length < n) {
    const p: Posting = [
      1_600_000_000_000 + Math.floor(random() * n * 10) * 1000,
      Math.floor(random() * 5),
      Math.floor(random() * 100_000),
    ];
    if (seen.has(String(p))) continue;
    seen.add(String(p));
    out.push(p);
  }
  return out.sort(cmp);
}

function shuffled<T>(items: T[], seed: number): T[] {
  const random = prng(seed);
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

async function insert(ix: ReturnType<typeof openTestIndex>, postings: Posting[], perCommit: number) {
  for (let i = 0; i < postings.length; i += perCommit) {
    for (const p of postings.slice(i, i + perCommit)) ix.index.add([TERM], p);
    await ix.kv.commit();
  }
}

async function walk(
  index: SearchIndex,
  direction: "before" | "after",
  from: Posting | null = null,
  bounds = {},
): Promise<Posting[]> {
  const out: Posting[] = [];
  for await (const batch of index.walk(TERM, direction, from, bounds))
    for (let j = 0; j < batch.length; j += 3) out.push([batch[j], batch[j + 1], batch[j + 2]]);
  return out;
}

/** The stored layout: each segment sorted, its ref's min is its first posting, and it ends before the next one starts. */
async function expectLayoutConsistent(
  ix: ReturnType<typeof openTestIndex>,
  layout: Layout = { tail: TAIL, page: PAGE },
) {
  const meta = (await ix.kv.get<TermMeta>(keys.term(TERM)))!;
  expect(meta.segs.length).toBeLessThanOrEqual(layout.tail + layout.page);
  const refs: SegmentRef[] = [];
  for (const page of meta.pages ?? []) {
    const pageRefs = (await ix.kv.get<SegmentRef[]>(keys.segmentPage(TERM, page.id)))!;
    expect([page.t, page.c, page.s], `page ${page.id} min`).toEqual([pageRefs[0].t, pageRefs[0].c, pageRefs[0].s]);
    expect(pageRefs.length).toBeLessThanOrEqual(2 * layout.page);
    refs.push(...pageRefs);
  }
  refs.push(...meta.segs);
  // Nothing stored that the term no longer names: a split's old segment or page goes at the first commit without
  // a walk running (this one, if the test left none open).
  await ix.kv.commit();
  const stored = async (prefix: string) =>
    (await ix.storage.getKeys(prefix)).map((key) => Number(key.slice(prefix.length))).sort((a, b) => a - b);
  expect(await stored(`ixs:${TERM}:`), "stored segments").toEqual(refs.map((ref) => ref.id).sort((a, b) => a - b));
  expect(await stored(`ixd:${TERM}:`), "stored pages").toEqual(
    (meta.pages ?? []).map((page) => page.id).sort((a, b) => a - b),
  );
  let previousMax: Posting | null = null;
  for (const ref of refs) {
    expect(ref.n).toBeLessThanOrEqual(2 * SEGMENT);
    const data = (await ix.kv.get<number[]>(keys.segment(TERM, ref.id))) ?? [];
    const postings: Posting[] = [];
    for (let j = 0; j < data.length; j += 3) postings.push([data[j], data[j + 1], data[j + 2]]);
    expect(postings, `segment ${ref.id} is sorted`).toEqual([...postings].sort(cmp));
    expect([ref.t, ref.c, ref.s], `segment ${ref.id} min`).toEqual(postings[0]);
    if (previousMax)
      expect(cmp(previousMax, postings[0]), `segment ${ref.id} starts after the previous one ends`).toBeLessThan(0);
    previousMax = postings[postings.length - 1];
  }
}

describe("tokenize", () => {
  it("lower-cases, splits on anything but letters and digits, and de-duplicates", () => {
    expect(tokenize("Hello, hello WORLD! what's 2day?")).toEqual(["hello", "world", "what", "s", "2day"]);
  });
  it("keeps Unicode letters and digits", () => {
    expect(tokenize("Café naïve 東京 Ünïcødé ٣٤")).toEqual(["café", "naïve", "東京", "ünïcødé", "٣٤"]);
  });
  it("returns nothing for empty, missing or symbol-only text", () => {
    expect(tokenize(undefined)).toEqual([]);
    expect(tokenize("")).toEqual([]);
    expect(tokenize("👍 -- !!")).toEqual([]);
  });
  it("caps very long words at 48 characters", () => {
    expect(tokenize("a".repeat(100))).toEqual(["a".repeat(48)]);
  });
});

// Every test runs with the production layout (small terms: all refs in the term record) and with a tiny one, where
// the same postings spread over many directory pages, so appends, splits and walks cross page boundaries.
describe.each([
  ["refs in the term record", undefined],
  ["refs in directory pages", { tail: 2, page: 3 }],
  // One ref per page: a segment that splits inside a page soon splits the page too.
  ["refs in pages of one", { tail: 1, page: 1 }],
] as [string, Layout | undefined][])("SearchIndex (%s)", (_, layout) => {
  const openIndex = (storage?: Storage) => openTestIndex(storage, layout);
  const expectSegmentsConsistent = (ix: ReturnType<typeof openIndex>) => expectLayoutConsistent(ix, layout);
  const all = makePostings(3 * SEGMENT);

  it("gives the same walk whatever the insertion order and commit grouping", async () => {
    const appended = openIndex();
    await insert(appended, all, 1);
    const shuffledIn = openIndex();
    await insert(shuffledIn, shuffled(all, 7), 50);
    const reversed = openIndex();
    await insert(reversed, [...all].reverse(), all.length);
    for (const ix of [appended, shuffledIn, reversed]) {
      await expectSegmentsConsistent(ix);
      expect(await walk(ix.index, "after")).toEqual(all);
      expect(await walk(ix.index, "before")).toEqual([...all].reverse());
    }
  }, 60_000);

  it("walks before and after a cursor, every posting exactly once and in order", async () => {
    const ix = openIndex();
    await insert(ix, shuffled(all, 3), 100);
    const cursors: Posting[] = [all[0], all[1], all[all.length - 1], [0, 0, 0], [Number.MAX_SAFE_INTEGER, 0, 0]];
    for (let i = 97; i < all.length; i += 397) cursors.push(all[i], [all[i][0], all[i][1], all[i][2] + 0.5]);
    for (const c of cursors) {
      const before = await walk(ix.index, "before", c);
      const after = await walk(ix.index, "after", c);
      expect(before).toEqual(all.filter((p) => cmp(p, c) < 0).reverse());
      expect(after).toEqual(all.filter((p) => cmp(p, c) > 0));
    }
  }, 60_000);

  it("splits a segment that grows past 2*SEGMENT and keeps the order", async () => {
    const ix = openIndex();
    const postings = makePostings(2 * SEGMENT + 500, 11);
    // Descending insertion sends every posting to the first segment, which must split.
    await insert(ix, [...postings].reverse(), 300);
    const meta = (await ix.index.meta(TERM))!;
    expect(meta.segs.length + (meta.pages?.length ?? 0)).toBeGreaterThan(1);
    await expectSegmentsConsistent(ix);
    expect(await walk(ix.index, "after")).toEqual(postings);
  }, 60_000);

  it("keeps order when a posting arrives just before the newest one", async () => {
    // Pairs arrive swapped (p1, p0, p3, p2, …), one per commit: each late posting sorts inside the newest segment,
    // whatever its fill level. In the app: an inbound message with an older network timestamp, or two chats
    // sending in the same millisecond.
    const ix = openIndex();
    const postings = makePostings(600, 5);
    const swapped = postings.map((_, i) => postings[i % 2 === 0 ? i + 1 : i - 1]);
    await insert(ix, swapped, 1);
    await expectSegmentsConsistent(ix);
    expect(await walk(ix.index, "after")).toEqual(postings);
    expect(await walk(ix.index, "before")).toEqual([...postings].reverse());
  }, 60_000);

  it("stores a re-added posting (an edit) once, in place", async () => {
    // Each append is followed by an edit of the message before it, which re-indexes the same posting.
    const ix = openIndex();
    const postings = makePostings(400, 9);
    const sequence = postings.flatMap((p, i) => (i === 0 ? [p] : [p, postings[i - 1]]));
    await insert(ix, sequence, 1);
    await expectSegmentsConsistent(ix);
    expect(await walk(ix.index, "after")).toEqual(postings);
  }, 60_000);

  it("prunes by date bounds without losing any posting inside them", async () => {
    const many = makePostings(8 * SEGMENT, 21);
    const after = many[Math.floor(many.length * 0.4)][0];
    const before = many[Math.floor(many.length * 0.6)][0];
    const inside = many.filter((p) => p[0] > after && p[0] < before);
    const written = openIndex();
    written.index.writeSorted(TERM, many.flat(), many.length);
    await written.kv.commit();
    const inserted = openIndex();
    await insert(inserted, shuffled(many, 5), 1000);
    for (const ix of [written, inserted])
      for (const direction of ["before", "after"] as const) {
        const walked = await walk(ix.index, direction, null, { after, before });
        expect(walked.filter((p) => p[0] > after && p[0] < before)).toEqual(
          direction === "after" ? inside : [...inside].reverse(),
        );
      }
    // With whole 1,024-posting segments, most of the 8 segments lie outside the bounds and are skipped.
    for (const direction of ["before", "after"] as const)
      expect((await walk(written.index, direction, null, { after, before })).length).toBeLessThanOrEqual(4 * SEGMENT);
  }, 60_000);

  it("persists: a new index over the same storage walks the same postings", async () => {
    const storage = createStorage();
    const first = openIndex(storage);
    await insert(first, shuffled(all, 13), 256);
    const second = openIndex(storage);
    await expectSegmentsConsistent(second);
    expect(await walk(second.index, "after")).toEqual(all);
  }, 60_000);

  it("writeSorted produces the same walk as insertion", async () => {
    const ix = openIndex();
    const flat = all.flat();
    ix.index.writeSorted(TERM, flat, all.length);
    await ix.kv.commit();
    expect(await walk(ix.index, "after")).toEqual(all);
    expect((await ix.index.meta(TERM))!.n).toBe(all.length);
    await expectSegmentsConsistent(ix);
  });
});

describe("SearchIndex directory pages", () => {
  const postings = makePostings(40 * HEAD, 31);

  it("keeps a bounded term record however many postings are appended, and walks them all", async () => {
    const layout = { tail: 2, page: 3 };
    const ix = openTestIndex(createStorage(), layout);
    await insert(ix, postings, 16);
    const meta = (await ix.index.meta(TERM))!;
    expect(meta.pages!.length).toBeGreaterThanOrEqual(10);
    await expectLayoutConsistent(ix, layout);
    expect(await walk(ix.index, "before")).toEqual([...postings].reverse());
  });

  it("splits a page whose segments split (postings arriving oldest last, as a history backfill sends them)", async () => {
    const layout = { tail: 1, page: 1 };
    const ix = openTestIndex(createStorage(), layout);
    const many = makePostings(12 * SEGMENT, 41);
    await insert(ix, [...many].reverse(), 500);
    const ids = (await ix.index.meta(TERM))!.pages!.map((page) => page.id);
    // A page split inserts a new page after the one that split, so page IDs stop ascending.
    expect(ids).not.toEqual([...ids].sort((a, b) => a - b));
    await expectLayoutConsistent(ix, layout);
    expect(await walk(ix.index, "after")).toEqual(many);
    expect(await walk(ix.index, "before", many[5000])).toEqual(many.slice(0, 5000).reverse());
  });

  it("finishes a walk over the segments it started with while commits move refs to new pages", async () => {
    const layout = { tail: 2, page: 3 };
    const ix = openTestIndex(createStorage(), layout);
    await insert(ix, postings, 64);
    const pagesBefore = (await ix.index.meta(TERM))!.pages!.length;
    for (const direction of ["before", "after"] as const) {
      const walker = ix.index.walk(TERM, direction, null);
      const seen: number[] = [...(await walker.next()).value!];
      // Enough newer postings that the term record sheds refs into new pages while the walk is paused.
      const later = Array.from(
        { length: 12 * HEAD },
        (_, i): Posting => [postings[postings.length - 1][0] + 1 + i + (direction === "after" ? 0 : 1e9), 0, 0],
      );
      await insert(ix, later, HEAD);
      for await (const batch of walker) seen.push(...batch);
      const walked: Posting[] = [];
      for (let j = 0; j < seen.length; j += 3) walked.push([seen[j], seen[j + 1], seen[j + 2]]);
      // Every posting there was when the walk began, once and in order (an after-walk may also see newer ones).
      const expected = direction === "before" ? [...postings].reverse() : postings;
      expect(walked.slice(0, expected.length)).toEqual(expected);
    }
    expect((await ix.index.meta(TERM))!.pages!.length).toBeGreaterThan(pagesBefore);
  });

  // A history back-fill adds old postings: they split segments (and, in pages, the pages) at the far end of a walk
  // that a search has paused. The walk must still see every posting its lists held when it began.
  it.each([
    ["refs in the term record", undefined],
    ["refs in directory pages", { tail: 2, page: 3 }],
    ["refs in pages of one", { tail: 1, page: 1 }],
  ] as [string, Layout | undefined][])(
    "finishes a walk paused while a back-fill splits the segments and pages ahead of it (%s)",
    async (_, layout) => {
      const original = Array.from({ length: 24 * HEAD }, (_, i): Posting => [1_700_000_000_000 + i * 10_000, 0, i]);
      for (const direction of ["before", "after"] as const) {
        const ix = openTestIndex(createStorage(), layout);
        await insert(ix, original, HEAD);
        const walker = ix.index.walk(TERM, direction, null);
        const seen: number[] = [...(await walker.next()).value!];
        // Ahead of the walk: older than everything for a walk from the newest, just below the newest for one from
        // the oldest. Newest first, as a back-fill sends them.
        const edge = direction === "before" ? original[0][0] - 1 : original[original.length - 1][0] - 1;
        const backfill = Array.from({ length: 3 * SEGMENT }, (_, i): Posting => [edge - i, 1, i]);
        const segmentsBefore = (await ix.index.meta(TERM))!.next;
        await insert(ix, backfill, 256);
        for await (const batch of walker) seen.push(...batch);

        const walked: Posting[] = [];
        for (let j = 0; j < seen.length; j += 3) walked.push([seen[j], seen[j + 1], seen[j + 2]]);
        const ordered = direction === "before" ? [...walked].sort(cmp).reverse() : [...walked].sort(cmp);
        expect(walked, "in walk order, each posting once").toEqual(ordered);
        expect(new Set(walked.map(String)).size).toBe(walked.length);
        const expected = direction === "before" ? [...original].reverse() : original;
        expect(walked.filter((p) => p[1] === 0)).toEqual(expected);
        // The back-fill did split segments while the walk was paused (a split adds at least one).
        expect((await ix.index.meta(TERM))!.next - segmentsBefore).toBeGreaterThanOrEqual(2);
        await expectLayoutConsistent(ix, layout);
        expect(await walk(ix.index, "after")).toEqual([...original, ...backfill].sort(cmp));
      }
    },
  );

  it("drops what a split replaced once the walks that could read it are closed, also a probe's unfinished walk", async () => {
    const layout = { tail: 1, page: 1 };
    const ix = openTestIndex(createStorage(), layout);
    const original = makePostings(8 * HEAD, 51);
    await insert(ix, original, HEAD);
    const probe = new PostingProbe(ix.index.walk(TERM, "before", null), "before");
    expect(await probe.has(original[original.length - 1])).toBe(true);
    const backfill = Array.from({ length: 3 * SEGMENT }, (_, i): Posting => [original[0][0] - 1 - i, 9, i]);
    await insert(ix, backfill, 256);
    const segmentKeys = async () => (await ix.storage.getKeys(`ixs:${TERM}:`)).length;
    const held = await segmentKeys();
    await probe.close();
    await ix.kv.commit();
    expect(await segmentKeys()).toBeLessThan(held);
    await expectLayoutConsistent(ix, layout);
  });

  it("moves the refs of a term record written before pages existed into pages at its next insert", async () => {
    const storage = createStorage();
    const old = openTestIndex(storage, { tail: 1000, page: 1000 });
    old.index.writeSorted(TERM, postings.flat(), postings.length);
    await old.kv.commit();
    const ix = openTestIndex(storage, { tail: 2, page: 3 });
    expect((await ix.index.meta(TERM))!.pages).toBeUndefined();
    const later: Posting = [postings[postings.length - 1][0] + 1, 0, 0];
    await insert(ix, [later], 1);
    expect((await ix.index.meta(TERM))!.pages!.length).toBeGreaterThan(0);
    expect(await walk(ix.index, "after")).toEqual([...postings, later]);
  });
});
