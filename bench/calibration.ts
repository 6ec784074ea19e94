/**
 * The machine's calibration: a fixed, CPU-bound unit of work, timed in the same run as the figures beside it, so that
 * runs on different machines (or on one machine on a busy and a quiet day) can be compared. It does what the daemon
 * spends its CPU on — JSON text to objects and back, sorting, Map lookups, string building — on a data set that is
 * the same on every run (a seeded generator), single-threaded.
 *
 * Reading it: a figure measured where the calibration took 1.5× as long would be about 1/1.5 of it on the faster
 * machine, for CPU-bound figures (throughput of the daemon's requests); disk-bound ones (the seed) scale less.
 */
import { prng } from "../src/connectors/sandbox/corpus.ts";

const WORDS = "see you at the station tomorrow morning before the train leaves with everyone on board".split(" ");

/** The data set: 20,000 message-like records (about 3 MB of JSON). Built once per process. */
function dataSet() {
  const random = prng(33);
  return Array.from({ length: 20_000 }, (_, i) => ({
    id: `msg_${i}`,
    chatID: `chat_${Math.floor(random() * 500)}`,
    ts: 1_790_000_000_000 + Math.floor(random() * 1e9),
    sender: { id: `@user${Math.floor(random() * 2000)}:example.invalid`, name: `User ${i % 2000}` },
    text: Array.from({ length: 8 + Math.floor(random() * 12) }, () => WORDS[Math.floor(random() * WORDS.length)]).join(
      " ",
    ),
    reactions: random() < 0.2 ? [{ key: "👍", by: `@user${i % 7}:example.invalid` }] : [],
  }));
}

let records: ReturnType<typeof dataSet> | undefined;

/** One unit of work; returns a checksum so that nothing is optimised away. */
function unit(): number {
  records ??= dataSet();
  const text = JSON.stringify(records);
  const parsed = JSON.parse(text) as typeof records;
  parsed.sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : 1));
  const perChat = new Map<string, number>();
  const words = new Map<string, number>();
  for (const r of parsed) {
    perChat.set(r.chatID, (perChat.get(r.chatID) ?? 0) + 1);
    for (const w of r.text.split(" ")) words.set(w, (words.get(w) ?? 0) + 1);
  }
  const page = parsed
    .slice(0, 2_000)
    .map((r) => `{"id":${JSON.stringify(r.id)},"text":${JSON.stringify(r.text)}}`)
    .join(",");
  return text.length + page.length + perChat.size + words.size;
}

export interface Calibration {
  /** Median ms of one unit over the timed rounds: lower is a faster machine. */
  ms: number;
  /** Each timed round, ms. */
  rounds: number[];
  /** When it was measured (ISO). */
  at: string;
}

export const CALIBRATION_ROUNDS = 7;

/** Times the unit CALIBRATION_ROUNDS times after two untimed rounds (warm-up: the JIT, the data set). */
export function calibrate(rounds = CALIBRATION_ROUNDS): Calibration {
  let sink = 0;
  for (let i = 0; i < 2; i++) sink += unit();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    sink += unit();
    times.push(performance.now() - started);
  }
  if (sink === 0) throw new Error("calibration: empty work"); // keeps the work observable
  const sorted = [...times].sort((a, b) => a - b);
  return { ms: sorted[Math.floor(sorted.length / 2)], rounds: times, at: new Date().toISOString() };
}

/** "calibration 212 ms (median of 7; lower = faster machine)". */
export const formatCalibration = (c: Calibration) =>
  `calibration ${c.ms.toFixed(0)} ms (median of ${c.rounds.length} rounds of bench/calibration.ts; lower = faster machine)`;
