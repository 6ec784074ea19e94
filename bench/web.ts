/**
 * The web inbox (web/, served by the daemon at `/`) in a real browser: Debian's chromium driven by playwright-core,
 * signed in by putting the bench's token where the page keeps its credentials. Measures the first meaningful paint
 * (the page's own `inbox:first-rows` mark, set once the first page of chat rows is painted) over cold loads, each in
 * a fresh browser context, and warm ones (a second page of the same context, whose HTTP cache holds the hashed
 * script and stylesheet); then the frames while the virtualised chat list is scrolled to its end until every chat is
 * loaded; and the bundle's size from web/dist/report.json.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { CHROMIUM, launchChromium } from "../test/kit/chromium.ts";
import { ROOT } from "./daemon.ts";
import type { Row } from "./report.ts";

/** As root and on a closed network: no sandbox, no background connections (as test/oauth/browser.ts launches it). */
const AUTH_KEY = "inboxd:auth";
const MARK = "inbox:first-rows";
const LIST = '[data-testid="chat-list"]';
const ROW = `${LIST} [role="option"]`;
const MARK_TIMEOUT_MS = 30_000;
const FCP_TIMEOUT_MS = 5_000;
/** The scroll phase ends when every chat is loaded, after this long, or when no chat came in for STALL_MS. */
const SCROLL_LIMIT_MS = 60_000;
const STALL_MS = 10_000;
const SWEEP_MS = 10_000;
const LONG_FRAME_MS = 50;
const FIRST_ROWS_TARGET_MS = 1000;
const VIEWPORT = { width: 1280, height: 720 };

/** One page load, ms from the navigation's start. */
export interface LoadTiming {
  firstRows: number;
  fcp: number;
  responseEnd: number;
  domContentLoaded: number;
  /** Bytes of the script over the network: 0 when it came from the HTTP cache. */
  scriptTransferBytes: number;
  /** Chat rows in the DOM at the mark. */
  rows: number;
}

export interface Distribution {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export interface Frames {
  seconds: number;
  frames: number;
  frameMs: Distribution;
  /** Frames over LONG_FRAME_MS. */
  longFrames: number;
  /** Chat rows in the DOM at the start and at the end (a virtualised list keeps this small). */
  rowsAtStart: number;
  rowsAtEnd: number;
}

export interface ScrollResult extends Frames {
  /** Chats the list said it had loaded (its data-loaded attribute) at the start and at the end; the goal. */
  loadedAtStart: number;
  loaded: number;
  target: number;
  /** ms from the first scroll to data-loaded ≥ target; undefined if it never got there. */
  allLoadedMs?: number;
  /** Why the phase ended. */
  ended: "all loaded" | "time limit" | "stalled" | "at the top";
  /** Then back up by the list's height every frame (every row in view is replaced each frame). */
  sweep: Frames & { px: number };
}

interface Size {
  bytes: number;
  gzipBytes: number;
}

export interface BundleReport {
  script: Size & { path: string };
  style: Size & { path: string };
  page: Size;
  inputs: Record<string, number>;
}

export interface WebResult {
  browser: string;
  viewport: { width: number; height: number };
  /** The first load after the daemon's start, not counted in `cold`. */
  first: LoadTiming;
  cold: LoadTiming[];
  warm: LoadTiming[];
  summary: {
    cold: Distribution;
    warm: Distribution;
    fcpCold: number;
    fcpWarm: number;
    warmFromCache: number;
    pass: boolean;
  };
  scroll: ScrollResult;
  bundle?: BundleReport;
  /** Uncaught errors and console errors of the pages, deduplicated. */
  pageErrors: string[];
}

/** Nearest-rank percentile. */
const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
};
const distribution = (xs: number[]): Distribution => ({
  p50: percentile(xs, 50),
  p95: percentile(xs, 95),
  p99: percentile(xs, 99),
  max: Math.max(...xs),
});

function readBundleReport(): BundleReport | undefined {
  const file = join(ROOT, "web/dist/report.json");
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as BundleReport) : undefined;
}

/** A context signed in with `token` (set before the page's own scripts run), with no HTTP cache of earlier contexts. */
async function signedInContext(browser: Browser, token: string): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  // tsx compiles this file keeping function names through a `__name` helper that the page does not have.
  await context.addInitScript({ content: "globalThis.__name ??= (fn) => fn;" });
  await context.addInitScript(
    ({ key, value }) => {
      try {
        localStorage.setItem(key, value);
      } catch {
        // about:blank and other opaque origins have no storage
      }
    },
    { key: AUTH_KEY, value: JSON.stringify({ accessToken: token }) },
  );
  return context;
}

/** Opens the inbox in a new page of `context` and waits for the first rows; the page stays open. */
async function openInbox(
  context: BrowserContext,
  url: string,
  errors: Set<string>,
): Promise<{ page: Page; timing: LoadTiming }> {
  const page = await context.newPage();
  const pageErrors: string[] = [];
  const note = (text: string) => {
    pageErrors.push(text);
    errors.add(text.slice(0, 300));
  };
  page.on("pageerror", (error) => note(`uncaught: ${error.message}`));
  page.on("console", (message) => message.type() === "error" && note(`console: ${message.text()}`));
  await page.goto(`${url}/`, { waitUntil: "load" });
  try {
    await page.waitForFunction((mark) => performance.getEntriesByName(mark).length > 0, MARK, {
      timeout: MARK_TIMEOUT_MS,
    });
  } catch (error) {
    const body = await page
      .locator("body")
      .innerText()
      .catch(() => "?");
    throw new Error(
      `the page at ${url}/ set no ${MARK} mark within ${MARK_TIMEOUT_MS / 1000} s (${(error as Error).message.split("\n")[0]}); ` +
        `page text: ${JSON.stringify(body.slice(0, 300))}; page errors: ${pageErrors.join(" | ") || "none"}`,
    );
  }
  // The paint entry is added when its frame is presented, which may come after the mark (set before that frame).
  await page
    .waitForFunction(() => performance.getEntriesByName("first-contentful-paint").length > 0, null, {
      timeout: FCP_TIMEOUT_MS,
    })
    .catch(() => undefined);
  const timing = await page.evaluate(
    ({ mark, row }) => {
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      const script = (performance.getEntriesByType("resource") as PerformanceResourceTiming[]).find((e) =>
        /\/web\/app\.[^/]*\.js$/.test(new URL(e.name).pathname),
      );
      return {
        firstRows: performance.getEntriesByName(mark)[0].startTime,
        fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN,
        responseEnd: nav.responseEnd,
        domContentLoaded: nav.domContentLoadedEventEnd,
        scriptTransferBytes: script?.transferSize ?? NaN,
        rows: document.querySelectorAll(row).length,
      };
    },
    { mark: MARK, row: ROW },
  );
  return { page, timing };
}

type Drive = Omit<Frames, "frameMs" | "longFrames" | "frames"> & {
  frameTimes: number[];
  loaded: number;
  loadedAtStart: number;
  allLoadedMs?: number;
  ended: ScrollResult["ended"];
  px: number;
};

/**
 * Scrolls the chat list on every animation frame, in the page, and times the gaps between consecutive
 * requestAnimationFrame callbacks. "end": to its end each frame, until `target` chats are loaded (the list's
 * data-loaded attribute), `limitMs` pass, or nothing new comes for STALL_MS. "sweep": up by the list's height each
 * frame, until the top or `limitMs`.
 */
function drive(page: Page, mode: "end" | "sweep", target: number, limitMs: number): Promise<Drive> {
  return page.evaluate(
    ({ list, row, mode, target, limitMs, stallMs }) =>
      new Promise<Drive>((resolve) => {
        const element = () => document.querySelector(list);
        const loaded = () => Number(element()?.getAttribute("data-loaded") ?? NaN);
        const rows = () => document.querySelectorAll(row).length;
        const frameTimes: number[] = [];
        const loadedAtStart = loaded(),
          rowsAtStart = rows(),
          topAtStart = element()?.scrollTop ?? 0;
        let start = 0,
          last = 0,
          lastGrowth = 0,
          seen = loadedAtStart,
          allLoadedMs: number | undefined;
        const finish = (ended: Drive["ended"], now: number) => {
          const px = Math.abs((element()?.scrollTop ?? 0) - topAtStart);
          // Two more frames, so that the rows of the last scroll are rendered before they are counted.
          requestAnimationFrame(() =>
            requestAnimationFrame(() =>
              resolve({
                loadedAtStart,
                loaded: loaded(),
                allLoadedMs,
                ended,
                seconds: (now - start) / 1000,
                frameTimes,
                rowsAtStart,
                rowsAtEnd: rows(),
                px,
              }),
            ),
          );
        };
        const frame = (now: number) => {
          if (!start) start = last = lastGrowth = now;
          else frameTimes.push(now - last);
          last = now;
          const n = loaded(),
            scroller = element();
          if (n > seen) [seen, lastGrowth] = [n, now];
          if (mode === "end" && n >= target) {
            allLoadedMs = now - start;
            return finish("all loaded", now);
          }
          if (now - start > limitMs) return finish("time limit", now);
          if (mode === "end" && now - lastGrowth > stallMs) return finish("stalled", now);
          if (mode === "sweep" && scroller?.scrollTop === 0) return finish("at the top", now);
          if (scroller)
            scroller.scrollTop = mode === "end" ? scroller.scrollHeight : scroller.scrollTop - scroller.clientHeight;
          requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      }),
    { list: LIST, row: ROW, mode, target, limitMs, stallMs: STALL_MS },
  );
}

const frames = ({ seconds, frameTimes, rowsAtStart, rowsAtEnd }: Drive): Frames => ({
  seconds,
  frames: frameTimes.length,
  frameMs: distribution(frameTimes),
  longFrames: frameTimes.filter((t) => t > LONG_FRAME_MS).length,
  rowsAtStart,
  rowsAtEnd,
});

/** To the end until `target` chats are loaded, then back up through them (SWEEP_MS at the most). */
async function scrollThrough(page: Page, target: number): Promise<ScrollResult> {
  const toEnd = await drive(page, "end", target, SCROLL_LIMIT_MS);
  const sweep = await drive(page, "sweep", target, SWEEP_MS);
  const { loadedAtStart, loaded, allLoadedMs, ended } = toEnd;
  return {
    ...frames(toEnd),
    loadedAtStart,
    loaded,
    target,
    allLoadedMs,
    ended,
    sweep: { ...frames(sweep), px: sweep.px },
  };
}

/**
 * The chats of the list the page opens on (its Inbox tab: neither archived nor low priority, muted ones included,
 * every account), counted through the API as the page asks for them.
 */
async function countInboxChats(url: string, token: string): Promise<number> {
  const ids = new Set<string>();
  for (let cursor: string | null = null; ; ) {
    const query = new URLSearchParams({
      inbox: "primary",
      includeMuted: "true",
      limit: "200",
      ...(cursor ? { cursor, direction: "before" } : {}),
    });
    const response = await fetch(`${url}/v1/chats/search?${query}`, { headers: { authorization: `Bearer ${token}` } });
    if (!response.ok) throw new Error(`GET /v1/chats/search answered ${response.status}: ${await response.text()}`);
    const page = (await response.json()) as { items: { id: string }[]; hasMore: boolean; oldestCursor: string | null };
    for (const chat of page.items) ids.add(chat.id);
    if (!page.hasMore || !page.oldestCursor) return ids.size;
    cursor = page.oldestCursor;
  }
}

export type WebBenchOutcome = { result: WebResult } | { skipped: string; bundle?: BundleReport };

/**
 * The web section against a running, seeded daemon. `loads` cold loads (plus one unmeasured first load), each
 * followed by a warm one in the same context; then one more context for the scroll through every chat of the list.
 * Skipped, with the reason, when chromium is not installed.
 */
export async function runWebBench(options: {
  url: string;
  token: string;
  loads: number;
  log: (line: string) => void;
}): Promise<WebBenchOutcome> {
  const { url, token, loads, log } = options;
  if (!existsSync(CHROMIUM)) {
    const skipped = `no chromium at ${CHROMIUM} (apt-get install -y chromium)`;
    log(`web: skipped: ${skipped}`);
    return { skipped, bundle: readBundleReport() };
  }
  const browser = await launchChromium();
  const errors = new Set<string>();
  const contexts = new Set<BrowserContext>();
  const withContext = async <T>(use: (context: BrowserContext) => Promise<T>): Promise<T> => {
    const context = await signedInContext(browser, token);
    contexts.add(context);
    try {
      return await use(context);
    } finally {
      contexts.delete(context);
      await context.close();
    }
  };
  /** A cold load in a fresh context, then (with `warm`) a warm one in a second page of the same context. */
  const coldAndWarm = (warm: boolean) =>
    withContext(async (context) => {
      const cold = await openInbox(context, url, errors);
      await cold.page.close();
      if (!warm) return { cold: cold.timing };
      const again = await openInbox(context, url, errors);
      return { cold: cold.timing, warm: again.timing };
    });
  try {
    log(`web: ${browser.version()}, ${loads} cold + ${loads} warm loads of ${url}/ after an unmeasured first one`);
    const first = (await coldAndWarm(false)).cold;
    log(`  first load after the daemon's start: first rows at ${first.firstRows.toFixed(0)} ms`);
    const cold: LoadTiming[] = [],
      warm: LoadTiming[] = [];
    for (let i = 0; i < loads; i++) {
      const pair = await coldAndWarm(true);
      cold.push(pair.cold);
      warm.push(pair.warm!);
    }
    const ms = (xs: LoadTiming[]) => xs.map((t) => t.firstRows.toFixed(0)).join(" ");
    log(`  first rows, cold: ${ms(cold)} ms; warm: ${ms(warm)} ms`);

    const target = await countInboxChats(url, token);
    log(
      `  scrolling the chat list until its ${target} chats (the Inbox tab's) are loaded (at most ${SCROLL_LIMIT_MS / 1000} s)`,
    );
    const scroll = await withContext(async (context) =>
      scrollThrough((await openInbox(context, url, errors)).page, target),
    );
    log(
      `  scroll: ${scroll.loaded} chats loaded (${scroll.ended}) in ${scroll.seconds.toFixed(1)} s, ${scroll.frames} frames, ${scroll.rowsAtEnd} rows in the DOM; ` +
        `back up ${scroll.sweep.px.toFixed(0)} px in ${scroll.sweep.frames} frames`,
    );

    const firstRows = (xs: LoadTiming[]) => distribution(xs.map((t) => t.firstRows));
    const coldRows = firstRows(cold);
    const summary = {
      cold: coldRows,
      warm: firstRows(warm),
      fcpCold: percentile(
        cold.map((t) => t.fcp),
        50,
      ),
      fcpWarm: percentile(
        warm.map((t) => t.fcp),
        50,
      ),
      warmFromCache: warm.filter((t) => t.scriptTransferBytes === 0).length,
      pass: coldRows.p50 <= FIRST_ROWS_TARGET_MS,
    };
    return {
      result: {
        browser: browser.version(),
        viewport: VIEWPORT,
        first,
        cold,
        warm,
        summary,
        scroll,
        bundle: readBundleReport(),
        pageErrors: [...errors],
      },
    };
  } finally {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser.close();
  }
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const msOf = (x: number) => `${x.toFixed(0)} ms`;

const frameRows = (f: Frames, indent = ""): Row[] => [
  {
    name: `${indent}  frame time p50 / p95 / p99 / max, ${f.frames} frames`,
    value: `${f.frameMs.p50.toFixed(1)} / ${f.frameMs.p95.toFixed(1)} / ${f.frameMs.p99.toFixed(1)} / ${f.frameMs.max.toFixed(0)} ms`,
  },
  {
    name: `${indent}  frames over ${LONG_FRAME_MS} ms`,
    value: `${f.longFrames} (${((f.longFrames / Math.max(1, f.frames)) * 100).toFixed(1)} %)`,
  },
  { name: `${indent}  chat rows in the DOM at the start / at the end`, value: `${f.rowsAtStart} / ${f.rowsAtEnd}` },
];

/** The sizes web/build.ts wrote into web/dist/report.json. */
function bundleRows(bundle: BundleReport | undefined): Row[] {
  if (!bundle) return [{ name: "web bundle", value: "web/dist/report.json missing (npx tsx web/build.ts)" }];
  const size = (x: Size) => `${kib(x.bytes)} raw / ${kib(x.gzipBytes)} gzip`;
  const total = bundle.script.gzipBytes + bundle.style.gzipBytes + bundle.page.gzipBytes;
  const inputs = Object.entries(bundle.inputs)
    .sort((a, b) => b[1] - a[1])
    .map(([pkg, bytes]) => `${pkg} ${kib(bytes)}`)
    .join(", ");
  return [
    { name: "web bundle: script", value: size(bundle.script), target: "stated" },
    { name: "  stylesheet", value: size(bundle.style) },
    { name: "  page", value: size(bundle.page) },
    { name: "  total gzip (page + script + stylesheet)", value: kib(total) },
    { name: "  script inputs before minifying", value: inputs },
  ];
}

/** The rows of the report's measure table. */
export function webRows(outcome: WebBenchOutcome, loads: number): Row[] {
  if ("skipped" in outcome)
    return [{ name: "web inbox", value: `not measured: ${outcome.skipped}` }, ...bundleRows(outcome.bundle)];
  const { summary: s, scroll, bundle, first, cold, warm, pageErrors } = outcome.result;
  const spread = (d: Distribution) => `median ${msOf(d.p50)}, p95 ${msOf(d.p95)}, max ${msOf(d.max)}`;
  const median = (xs: LoadTiming[], key: keyof LoadTiming) =>
    msOf(
      percentile(
        xs.map((t) => t[key]),
        50,
      ),
    );
  return [
    {
      name: `web inbox: first chat rows painted, cold (fresh context), ${loads} loads`,
      value: spread(s.cold),
      target: `median ≤ ${FIRST_ROWS_TARGET_MS} ms`,
      pass: s.pass,
    },
    { name: `  warm (cached script and style; ${s.warmFromCache}/${warm.length} from cache)`, value: spread(s.warm) },
    { name: "  first contentful paint, median cold / warm", value: `${msOf(s.fcpCold)} / ${msOf(s.fcpWarm)}` },
    {
      name: "  navigation responseEnd / DOMContentLoaded, median cold",
      value: `${median(cold, "responseEnd")} / ${median(cold, "domContentLoaded")}`,
    },
    { name: "  first load after the daemon's start (not counted)", value: msOf(first.firstRows) },
    {
      name: `web inbox: scroll the chat list to its end until all ${scroll.target.toLocaleString("en-US")} chats of the Inbox tab are loaded`,
      value:
        scroll.allLoadedMs === undefined
          ? `${scroll.ended} at ${scroll.loaded.toLocaleString("en-US")} chats after ${scroll.seconds.toFixed(1)} s`
          : `${(scroll.allLoadedMs / 1000).toFixed(1)} s`,
      target: "stated",
    },
    ...frameRows(scroll),
    {
      name: `  then back up ${Math.round(scroll.sweep.px / 1000).toLocaleString("en-US")}k px, the list's height a frame, for ${scroll.sweep.seconds.toFixed(1)} s`,
      value: "",
    },
    ...frameRows(scroll.sweep, "  "),
    ...(pageErrors.length
      ? [{ name: "web inbox: page errors during the loads", value: `${pageErrors.length}, first: ${pageErrors[0]}` }]
      : []),
    ...bundleRows(bundle),
  ];
}
